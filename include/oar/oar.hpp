// The framework-facing C++ API of OAR, umbrella header.
#pragma once

#include "oar/buffer.hpp"
#include "oar/communicator.hpp"  // collectives: link oar::comm (liboar_comm)
#include "oar/device.hpp"
#include "oar/dispatch.hpp"
#include "oar/dtype.hpp"
#include "oar/error.hpp"
#include "oar/event.hpp"
#include "oar/runtime.hpp"
#include "oar/stream.hpp"
#include "oar/tensor.hpp"
