"""The main job's Paddle line (scripts/run.sh): trains the adapter's three
models (adapters/paddle/tests/models.py: MLP, small CNN, transformer block)
for a few eager steps on the first device of each OAR plugin built in
BUILD_DIR and on Paddle's CPU, and prints one line per device:

    paddle on sim:0: mlp 1.2707->1.1656, cnn 2.3427->2.0074, transformer 3.8800->3.2295 (4 steps; max rel. diff to Paddle CPU 2e-07)

Usage: python train_on_devices.py BUILD_DIR   (the Python with paddlepaddle)
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "tests", "train_models.py")


def main(build):
    adapter_dir = os.path.join(build, "lib", "oar", "paddle")
    status = 0
    for manifest in sorted(glob.glob(os.path.join(build, "share", "oar", "plugins.d", "*.json"))):
        plugin = os.path.splitext(os.path.basename(manifest))[0]
        if plugin == "null":
            continue
        env = dict(os.environ, CUSTOM_DEVICE_ROOT=adapter_dir, OAR_PLUGINS=manifest)
        r = subprocess.run([sys.executable, SCRIPT, "oar:0", "eager"], env=env,
                           capture_output=True, text=True, timeout=300)
        try:
            losses = json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            if "wrong place" in r.stderr:  # Paddle has no oar:0
                tail = "the plugin has no device here"
            print(f"paddle on {plugin}: no training ({tail})")
            continue
        worst = max(abs(d - c) / abs(c) for v in losses.values()
                    for c, d in zip(v["cpu"], v["device"]))
        parts = ", ".join(f"{m} {v['device'][0]:.4f}->{v['device'][-1]:.4f}"
                          for m, v in losses.items())
        steps = len(next(iter(losses.values()))["device"])
        ok = worst <= 1e-4
        status |= 0 if ok else 1
        print(f"paddle on {plugin}:0: {parts} ({steps} steps; max rel. diff to Paddle CPU "
              f"{worst:.0e}{'' if ok else ', MORE THAN 1e-4'})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
