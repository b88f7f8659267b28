/* OAR C ABI, umbrella header: everything a plugin is written against.
 * Global rules on ownership, errors and threading are in oar/status.h. */
#ifndef OAR_OAR_H_
#define OAR_OAR_H_

#include "oar/collective.h"
#include "oar/device.h"
#include "oar/event.h"
#include "oar/handles.h"
#include "oar/kernel.h"
#include "oar/memory.h"
#include "oar/plugin.h"
#include "oar/status.h"
#include "oar/stream.h"
#include "oar/trace.h"

#endif /* OAR_OAR_H_ */
