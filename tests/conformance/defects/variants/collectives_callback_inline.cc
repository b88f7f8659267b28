// The cpu plugin with host callbacks that run at once on the caller's thread
// (the ABI area's callback_inline), certified on the collectives area: the
// core's staged engine orders collectives with host callbacks, so an
// all_reduce runs before the work queued ahead of it.
#include "callback_inline.cc"
