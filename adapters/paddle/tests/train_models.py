"""Trains the three models of models.py on Paddle's CPU and on one OAR
device, eagerly or under paddle.jit.to_static, and prints the losses as
JSON on the last line of stdout: {model: {"cpu": [...], "device": [...]}}.

Run by test_training.py and scripts/run.sh:

    python train_models.py oar:0 eager|static [model[:optimizer] ...]

A run is a model of models.py, trained with SGD or with the optimizer named
after the colon ("mlp:adam", "transformer:adamw"); the default is every model
with SGD.

Before each training step of the device run it writes "STEP <model> <i>"
to stderr (and "STEP <model> end" after the last), so that a log of CPU
fallbacks (GLOG_vmodule=kernel_factory=3: one "missing oar kernel" line per
kernel call that falls back) can be cut into steps. The script ends through
a normal interpreter exit, except with glog's verbose logging on
(GLOG_vmodule): Paddle then sometimes aborts in exit() ("double free or
corruption") or hangs in its signal handler, also with no OAR device in the
process (docs/paddle.md, "Exit"), so the script leaves through os._exit
once its output is flushed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

STEPS = 4


def main(device, mode, names):
    static = mode == "static"
    out = {}
    for name in names:
        model, _, optimizer = name.partition(":")
        optimizer = optimizer or "sgd"
        cpu = models.train(model, "cpu", static, STEPS, optimizer=optimizer)

        def marker(step, name=name):
            print(f"STEP {name} {step}", file=sys.stderr, flush=True)
        dev = models.train(model, device, static, STEPS, marker, optimizer)
        out[name] = {"cpu": cpu, "device": dev}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:] or list(models.MODELS))
    if os.environ.get("GLOG_vmodule"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
