"""Records the allocation traces of Paddle training on the `oar` device
(issue 18) into bench/traces/, where BM_Fragmentation (bench/fragmentation_bench.cc)
replays them. Trace format: docs/performance.md, "Allocation traces".

Each run is one process that trains one model for a few steps (SGD, the
step of adapters/paddle/tests/models.py) on `oar:0` with the cpu plugin and
OAR_ALLOC_TRACE set, so the trace holds exactly what Paddle's allocator asked
of OAR's caching allocator through the adapter's device_memory_allocate /
device_memory_deallocate (Paddle's own auto-growth allocator sits above and
caches what it frees; docs/performance.md says what that means).

  paddle_<model>_f32.trace        the model as adapters/paddle/tests/models.py
                                  builds it (mlp, cnn, transformer)
  paddle_<model>_large_f32.trace  the same architecture at real-model widths
                                  (LARGE below)
  paddle_<model>[_large]_free_f32.trace
                                  the same runs with FLAGS_free_idle_chunk=true:
                                  Paddle's allocator hands every chunk it frees
                                  back to OAR, so OAR sees each tensor's lifetime

Run with the Paddle venv's python, from the repository root:

    ~/.cache/oar/paddle-venv/bin/python bench/record_paddle_traces.py --build build
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ("mlp", "cnn", "transformer")
STEPS = 3

# The scaled-up runs: the test models' architectures at the widths and batches
# of real models (float32 tensors of 0.25-64 MiB).
LARGE = {
    "mlp": "Linear 1024-4096, ReLU, Linear 4096-4096, Tanh, Linear 4096-1024; batch 256",
    "cnn": "Conv2D 3->64 3x3, ReLU, MaxPool 2, Conv2D 64->128 3x3, ReLU, AvgPool 2, "
           "Linear 8192-10; batch 32 of 3x32x32",
    "transformer": "Embedding 4096x512, pre-norm block with 8 heads, MLP 512-2048-512, "
                   "LM head 512-4096; batch 8 of 128 tokens",
}


def build_large(name):
    """(model, inputs, target, loss_fn) of |name| at real-model widths, on the
    current device; weights drawn with numpy as models.build does."""
    import numpy as np
    import paddle
    import paddle.nn.functional as F
    from paddle import nn
    import models

    rng = np.random.default_rng(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.Tanh(),
                              nn.Linear(4096, 1024))
        x = paddle.to_tensor(rng.standard_normal((256, 1024)).astype(np.float32))
        y = paddle.to_tensor(rng.standard_normal((256, 1024)).astype(np.float32))

        def loss_fn(out, target):
            return paddle.mean((out - target) ** 2)
    elif name == "cnn":
        model = models.CNN(in_channels=3, widths=(64, 128), pooled=8)
        x = paddle.to_tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
        y = paddle.to_tensor(rng.integers(0, 10, (32,)).astype(np.int64))

        def loss_fn(out, target):
            return F.cross_entropy(out, target)
    elif name == "transformer":
        vocab, seq = 4096, 128
        model = models.Block(vocab=vocab, dim=512, heads=8, seq=seq)
        tokens = rng.integers(0, vocab, (8, seq + 1)).astype(np.int64)
        x = paddle.to_tensor(tokens[:, :-1])
        y = paddle.to_tensor(tokens[:, 1:])

        def loss_fn(out, target):
            return F.cross_entropy(paddle.reshape(out, [-1, out.shape[-1]]),
                                   paddle.reshape(target, [-1]))
    else:
        raise ValueError(name)
    models.init_weights(model)
    return model, x, y, loss_fn


def child(name, size, steps):
    """Trains one model in this process (OAR_ALLOC_TRACE set by the parent)."""
    sys.path.insert(0, os.path.join(ROOT, "adapters", "paddle", "tests"))
    import paddle
    import models

    paddle.set_device("oar:0")
    if size == "test":
        model, x, y, loss_fn = models.build(name)
    else:
        model, x, y, loss_fn = build_large(name)
    step = models.make_step(model, loss_fn)
    losses = [float(step(x, y)) for _ in range(steps)]
    print(f"{name} {size}: losses {losses}", file=sys.stderr, flush=True)


# Paddle flags of each variant (environment variables Paddle reads at start).
VARIANTS = {
    "default": {},
    "free": {"FLAGS_free_idle_chunk": "true"},
}


def record(args, name, size, variant, tmp):
    pattern = os.path.join(tmp, f"{name}-{size}-{variant}.%p")
    env = dict(os.environ)
    env["CUSTOM_DEVICE_ROOT"] = os.path.join(os.path.abspath(args.build), "lib", "oar", "paddle")
    env["OAR_PLUGINS"] = os.path.join(os.path.abspath(args.build), "share", "oar", "plugins.d",
                                      "cpu.json")
    env["OAR_ALLOC_TRACE"] = pattern
    for flag in ("FLAGS_free_idle_chunk", "FLAGS_free_when_no_cache_hit",
                 "FLAGS_allocator_strategy", "FLAGS_auto_growth_chunk_size_in_mb"):
        env.pop(flag, None)  # Paddle's defaults unless the variant sets them
    env.update(VARIANTS[variant])
    env.setdefault("OMP_NUM_THREADS", "2")
    env.setdefault("GLOG_minloglevel", "2")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, size,
                    str(args.steps)], env=env, check=True)
    files = [f for f in glob.glob(pattern.replace("%p", "*"))
             if any(line.startswith("a ") for line in open(f))]
    if len(files) != 1:
        sys.exit(f"{name} {size}: expected one trace with allocations, found {files}")
    suffix = ("" if size == "test" else "_large") + ("" if variant == "default" else "_free")
    out = os.path.join(args.out, f"paddle_{name}{suffix}_f32.trace")
    what = "adapters/paddle/tests/models.py" if size == "test" else LARGE[name]
    with open(files[0]) as src, open(out, "w") as dst:
        flags = " ".join(f"{k}={v}" for k, v in VARIANTS[variant].items()) or "Paddle's defaults"
        dst.write(f"# Paddle training, {name} ({what}), {args.steps} SGD steps on oar:0 "
                  f"(cpu plugin), {flags}; recorded by bench/record_paddle_traces.py\n")
        dst.write(src.read())
    lines = open(out).read().splitlines()
    print(f"{out}: {sum(1 for line in lines if line.startswith('a '))} allocations, "
          f"{os.path.getsize(out)} bytes")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the OAR build folder (the adapter and "
                        "the cpu plugin)")
    parser.add_argument("--out", default=os.path.join(HERE, "traces"))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sizes", default="test,large", help="test, large or both")
    parser.add_argument("--variants", default="default,free", help="default, free or both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oar-paddle-trace-") as tmp:
        for variant in args.variants.split(","):
            for size in args.sizes.split(","):
                for name in args.models.split(","):
                    record(args, name, size, variant, tmp)


if __name__ == "__main__":
    main()
