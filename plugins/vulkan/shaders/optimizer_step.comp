// The fused optimizer steps for parameters of dtype DT (1 f16, 2 bf16, 3 f32)
// with f32 state, computed in f32 and rounded once at the store. OP: 0 sgd,
// 1 adam and adamw. One invocation per element; each output element's value
// depends on the loads of its own input element, so an output bound to its
// input's buffer (the in-place update) is read before it is written.
//
// Parameters: 0 n, 1 param, 2 grad, 3 state 1, 4 state 2, 5 param out,
// 6 state 1 out, 7 state 2 out (element offsets), 8 flags, then f32 bits:
// sgd: 9 lr, 10 momentum, 11 1 - dampening, 12 weight_decay; flags 1 the first
// step, 2 nesterov, 4 momentum != 0, 8 weight_decay != 0.
// adam: 9 lr / (1 - beta1^step), 10 sqrt(1 - beta2^step), 11 1 - lr *
// weight_decay, 12 beta1, 13 beta2, 14 eps, 15 weight_decay; flags 1
// decoupled decay (adamw), 2 weight_decay != 0.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, param)
TENSOR(1, DT, grad)
TENSOR(2, 3, state1)
TENSOR(3, 3, state2)
TENSOR(4, DT, param_out)
TENSOR(5, 3, state1_out)
TENSOR(6, 3, state2_out)

void sgd(uint i) {
  int flags = P(8);
  float param = load_param(PU(1) + i);
  float grad = load_grad(PU(2) + i);
  float buf_in = load_state1(PU(3) + i);
  float d = (flags & 8) != 0 ? grad + PF(12) * param : grad;
  float buf = buf_in;
  float direction = d;
  if ((flags & 4) != 0) {
    buf = (flags & 1) != 0 ? d : PF(10) * buf_in + PF(11) * d;
    direction = (flags & 2) != 0 ? d + PF(10) * buf : buf;
  }
  store_param_out(PU(5) + i, param - PF(9) * direction);
  store_state1_out(PU(6) + i, buf);
}

void adam(uint i) {
  int flags = P(8);
  float b1 = PF(12), b2 = PF(13);
  float param = load_param(PU(1) + i);
  float d = load_grad(PU(2) + i);
  float m_in = load_state1(PU(3) + i);
  float v_in = load_state2(PU(4) + i);
  if ((flags & 1) != 0) {
    param *= PF(11);
  } else if ((flags & 2) != 0) {
    d += PF(15) * param;
  }
  float m1 = b1 * m_in + (1.0 - b1) * d;
  float v1 = b2 * v_in + (1.0 - b2) * d * d;
  float denominator = sqrt(v1) / PF(10) + PF(14);
  store_param_out(PU(5) + i, param - PF(9) * (m1 / denominator));
  store_state1_out(PU(6) + i, m1);
  store_state2_out(PU(7) + i, v1);
}

void main() {
  uint n = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    if (OP == 0) {
      sgd(i);
    } else {
      adam(i);
    }
  }
}
