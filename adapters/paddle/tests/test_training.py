"""The models of models.py (MLP, small CNN with and without BatchNorm,
transformer block) trained on the OAR device follow Paddle's CPU, eagerly
and under paddle.jit.to_static, with no CPU fallback in a training step; and a
Python process that used the device exits normally.

How fallbacks are counted (docs/paddle.md, "Fallbacks"):
- eager: Paddle logs one "missing oar kernel: <name> ..., fallbacking to CPU"
  line per kernel call that has no oar kernel (GLOG_vmodule=kernel_factory=3);
  the lines between the markers of the last step are counted.
- to_static: the program's kernels are chosen once, when it is lowered; a
  kernel without an oar version is lowered to a CPU kernel fed by
  memcpy_d2h. FLAGS_print_ir=1 prints the lowered programs, and every CPU
  kernel with an input copied from the device is one fallback per step (CPU
  kernels on host-side shape constants, such as full_int_array, are not).
  The optimizer step runs eagerly in both modes; the eager run counts it.
"""
import collections
import functools
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import DEVICE, PLUGIN

HERE = os.path.dirname(os.path.abspath(__file__))
# cnn_bn: the CNN with a training-mode BatchNorm2D (batch_norm, batch_norm_grad).
MODELS = ("mlp", "cnn", "transformer", "cnn_bn")
# Trained eagerly with paddle.optimizer.Adam / AdamW as well (the optimizer
# step runs eagerly under to_static too, so the eager run covers it).
ADAM_RUNS = ("mlp:adam", "transformer:adamw")
# float32 sums in another order (and OAR's own conv/attention algorithms):
# relative difference of each step's loss. Measured: <= 2e-7.
LOSS_RTOL = 1e-4


def _env(**extra):
    # OAR_VALIDATE=1: every call the adapter makes through the plugin's table
    # is checked (freed or foreign handles, out-of-range copies, leaks).
    env = dict(os.environ, OAR_VALIDATE="1", **extra)
    env.pop("OMP_NUM_THREADS", None)  # set by importing paddle here
    return env


_PROCS = {}


def _start():
    """Starts both training runs at once (each imports Paddle for seconds)."""
    if _PROCS:
        return
    script = os.path.join(HERE, "train_models.py")
    # Eager: Paddle's fallback log. to_static: its lowered programs, and one
    # OpenMP thread (a setting that used to abort at exit).
    for mode, env, runs in (
            ("eager", _env(GLOG_vmodule="kernel_factory=3"), MODELS + ADAM_RUNS),
            ("static", _env(FLAGS_print_ir="1", OMP_NUM_THREADS="1"), MODELS)):
        _PROCS[mode] = subprocess.Popen([sys.executable, script, DEVICE, mode, *runs], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)


def _run(mode):
    _start()
    p = _PROCS[mode]
    try:
        out, err = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"training ({mode}) on {DEVICE} hung: {err[-2000:]}")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@functools.lru_cache(maxsize=None)
def eager():
    r = _run("eager")
    assert r.returncode == 0, r.stderr[-3000:]
    losses = json.loads(r.stdout.strip().splitlines()[-1])
    # Fallbacks of the last (steady-state) step of each model.
    fallbacks = {}
    for name in MODELS + ADAM_RUNS:
        m = re.search(rf"STEP {name} 3\n(.*?)STEP {name} end", r.stderr, re.S)
        assert m, f"no step markers for {name}"
        fallbacks[name] = collections.Counter(re.findall(r"missing oar kernel: (\w+)", m.group(1)))
    return r, losses, fallbacks


def ir_fallbacks(text):
    """CPU kernels fed from the device in the lowered programs: name -> count."""
    found = collections.Counter()
    tainted = set()
    seen = set()
    for line in text.splitlines():
        if line.startswith("{") or line.endswith("= {"):
            tainted = set()  # a new program: new value names
            continue
        m = re.match(r"\s*\(([^)]*)\) = \"([\w.]+)(?:\(phi_kernel\))?\"[^(]*\(([^)]*)\)", line)
        if not m:
            continue
        outs = [v.strip() for v in m.group(1).split(",") if v.strip()]
        name, ins = m.group(2), [v.strip() for v in m.group(3).split(",")]
        fed = any(v in tainted for v in ins)
        if name == "memcpy_d2h" or (name == "builtin.combine" and fed):
            tainted.update(outs)
        elif fed and "backend:CPU" in line:
            origin = re.search(r"origin_id:(\d+)", line)
            key = (name, origin.group(1) if origin else line)
            if key not in seen:  # the same op in another print of the program
                seen.add(key)
                found[name] += 1
    return found


@functools.lru_cache(maxsize=None)
def static():
    r = _run("static")
    assert r.returncode == 0, r.stderr[-3000:]
    losses = json.loads(r.stdout.strip().splitlines()[-1])
    return r, losses, ir_fallbacks(r.stdout)


def _report(mode, name, cpu, dev, fallbacks):
    worst = max(abs(d - c) / abs(c) for c, d in zip(cpu, dev))
    listing = ", ".join(f"{k} x{v}" for k, v in sorted(fallbacks.items())) or "none"
    # Shown with pytest -rP; the figures docs/paddle.md quotes.
    print(f"[{PLUGIN}] {name} {mode}: {len(dev)} steps, loss {cpu[0]:.4f} -> {dev[-1]:.4f}, "
          f"worst relative difference to Paddle CPU {worst:.1e}, "
          f"CPU fallbacks per step: {sum(fallbacks.values())} ({listing})")


@pytest.mark.parametrize("name", MODELS + ADAM_RUNS)
def test_eager_loss_curve_matches_paddle_cpu(name):
    _, losses, fallbacks = eager()
    cpu, dev = losses[name]["cpu"], losses[name]["device"]
    _report("eager", name, cpu, dev, fallbacks[name])
    assert cpu[-1] < cpu[0]  # it does learn
    np.testing.assert_allclose(dev, cpu, rtol=LOSS_RTOL)
    # Every kernel of these models maps onto OAR (forward, backward, SGD,
    # Adam and AdamW).
    assert sum(fallbacks[name].values()) == 0, fallbacks[name]


@pytest.mark.parametrize("name", MODELS)
def test_to_static_loss_curve_matches_paddle_cpu(name):
    _, losses, fallbacks = static()
    cpu, dev = losses[name]["cpu"], losses[name]["device"]
    _report("to_static", name, cpu, dev, fallbacks)
    np.testing.assert_allclose(dev, cpu, rtol=LOSS_RTOL)
    assert sum(fallbacks.values()) == 0, fallbacks


def test_fallback_counting_sees_fallbacks():
    # The counters must be able to fail: the models' first step draws the
    # initial weights with Paddle's random kernels, which OAR lacks, and
    # the lowering pass's output parses into fallbacks where there are some.
    r, _, _ = eager()
    assert re.search(r"missing oar kernel: (uniform|gaussian)", r.stderr), r.stderr[-2000:]
    program = ('{\n (%1) = "memcpy_d2h(phi_kernel)" (%0) {kernel_key:<backend:oar>}\n'
               ' (%2) = "add_n(phi_kernel)" (%1) {kernel_key:<backend:CPU>,origin_id:7}\n'
               ' (%3) = "full_int_array(phi_kernel)" () {kernel_key:<backend:CPU>}\n}')
    assert ir_fallbacks(program) == {"add_n": 1}


def test_no_validation_messages():
    for r in (eager()[0], static()[0]):
        assert "validation:" not in r.stderr, r.stderr[r.stderr.index("validation:"):][:2000]


def test_process_that_used_the_device_exits_normally():
    # The to_static run trains every model on the device, with
    # OMP_NUM_THREADS=1, and leaves through the interpreter's own exit (the
    # adapter shuts OAR down from Py_AtExit; docs/paddle.md, "Exit").
    r, _, _ = static()
    assert r.returncode == 0
    for sign in ("double free", "corrupted", "Aborted", "SIGABRT", "FatalError", "Traceback"):
        assert sign not in r.stderr, r.stderr[-2000:]
