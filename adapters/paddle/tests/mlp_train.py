"""Trains a small MLP for a few steps on one Paddle device (eagerly, or under
paddle.jit.to_static with a second argument "static") and prints the
losses as JSON on the last line. Run as a script by test_training.py, with
GLOG_vmodule=kernel_factory=3 so that Paddle logs each CPU fallback (one
"fallbacking to CPU" line per kernel call) between the STEP markers."""
import json
import os
import sys

import numpy as np
import paddle

STEPS = 6


def main(device, static=False):
    paddle.set_device(device)
    rng = np.random.default_rng(0)
    x = paddle.to_tensor(rng.standard_normal((64, 16)).astype(np.float32))
    y = paddle.to_tensor(rng.standard_normal((64, 4)).astype(np.float32))
    model = paddle.nn.Sequential(paddle.nn.Linear(16, 32), paddle.nn.ReLU(),
                                 paddle.nn.Linear(32, 32), paddle.nn.Tanh(),
                                 paddle.nn.Linear(32, 4))
    # The same initial weights on every device.
    for i, p in enumerate(model.parameters()):
        p.set_value(np.random.default_rng(i + 1).standard_normal(p.shape).astype(np.float32) * 0.3)
    # Under paddle.jit.to_static the forward pass is one PIR program.
    forward = paddle.jit.to_static(model, full_graph=True) if static else model
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    losses = []
    for step in range(STEPS):
        print(f"STEP {step}", file=sys.stderr, flush=True)
        loss = paddle.mean((forward(x) - y) ** 2)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    print(f"STEP end", file=sys.stderr, flush=True)
    print(json.dumps(losses))


if __name__ == "__main__":
    main(sys.argv[1], static=len(sys.argv) > 2 and sys.argv[2] == "static")
    # The process leaves without exit handlers: with the adapter loaded,
    # Paddle's exit sometimes corrupts the heap (docs/paddle.md, "Known
    # problems"), which is not what this script measures.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
