// The empty dispatch benchmarks compare against: one invocation, no work.
#version 450
layout(local_size_x = 1) in;
void main() {}
