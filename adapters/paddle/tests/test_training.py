"""An MLP trained on the OAR device follows Paddle's CPU, and the CPU
fallbacks per training step are counted and reported."""
import collections
import json
import os
import re
import subprocess
import sys

import numpy as np

from conftest import DEVICE, PLUGIN

HERE = os.path.dirname(os.path.abspath(__file__))
# float32 sums in another order: relative difference of the losses.
LOSS_RTOL = 1e-4


def train(device, mode="eager"):
    # OAR_VALIDATE=1: every call the adapter makes through the plugin's table
    # is checked (freed or foreign handles, out-of-range copies, leaks).
    env = dict(os.environ, GLOG_vmodule="kernel_factory=3", GLOG_minloglevel="0",
               OAR_VALIDATE="1")
    # Importing paddle here set OMP_NUM_THREADS=1; a process that starts with
    # it set and loads the cpu plugin (libgomp) beside Paddle's libiomp5
    # corrupts its heap at exit (docs/paddle.md, "Known problems").
    env.pop("OMP_NUM_THREADS", None)
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "mlp_train.py"), device, mode],
                           env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"training on {device} hung; its log ends: {str(e.stderr)[-2000:]}")
    assert r.returncode == 0, r.stderr[-3000:]
    losses = json.loads(r.stdout.strip().splitlines()[-1])
    assert "validation:" not in r.stderr, r.stderr[r.stderr.index("validation:"):][:2000]
    # Fallbacks of one steady-state step (the last): kernel -> count.
    steps = re.split(r"STEP \S+", r.stderr)
    last = steps[-2] if len(steps) >= 3 else ""
    fallbacks = collections.Counter(re.findall(r"missing oar kernel: (\w+)", last))
    return losses, fallbacks


def test_mlp_loss_curve_matches_paddle_cpu():
    cpu, _ = train("cpu")
    dev, fallbacks = train(DEVICE)
    assert len(cpu) == len(dev)
    assert cpu[-1] < cpu[0]  # it does learn
    np.testing.assert_allclose(dev, cpu, rtol=LOSS_RTOL)
    total = sum(fallbacks.values())
    report = ", ".join(f"{k} x{v}" for k, v in sorted(fallbacks.items())) or "none"
    # Shown with pytest -rP, and kept beside the build for docs/paddle.md.
    print(f"[{PLUGIN}] CPU fallbacks per MLP training step: {total} ({report})")
    # Every kernel of this model maps onto OAR (forward, backward and SGD).
    assert total == 0, report


def test_mlp_under_to_static_matches_paddle_cpu():
    cpu, _ = train("cpu", "static")
    dev, fallbacks = train(DEVICE, "static")
    np.testing.assert_allclose(dev, cpu, rtol=LOSS_RTOL)
    assert sum(fallbacks.values()) == 0, fallbacks
