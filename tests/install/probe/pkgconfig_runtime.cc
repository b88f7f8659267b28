// A framework-style program built with `pkg-config --cflags --libs oar` alone:
// it includes the C++ API and calls into liboar.
#include <cstdio>

#include "oar/oar.hpp"

int main() {
  std::printf("%s\n", oar::status_name(OAR_STATUS_OUT_OF_RANGE));
  return 0;
}
