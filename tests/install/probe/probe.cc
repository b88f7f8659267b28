// Compiled only to give the probe's targets a source.
#include "oar/sdk/plugin.hpp"
