// The unaligned head and tail of memory_fill, one byte per invocation;
// vkCmdFillBuffer does the aligned middle.
//
// Parameters: 0 bytes, 1 byte offset, 2 value.
#version 450
#include "common.glsl"

layout(std430, set = 0, binding = 3) buffer Bytes { uint8_t v[]; }
bytes;

void main() {
  uint n = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    bytes.v[PU(1) + i] = uint8_t(PU(2));
  }
}
