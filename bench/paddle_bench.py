"""Paddle benchmarks (issues 15 and 18), each side by side in one process,
interleaved: every repetition runs each variant once, a different one first
each time, and a variant's figure is the median of its repetitions.

  kernels  issue 18's kernel set on OAR's cpu plugin (bench/paddle_kernels.cc,
           loaded with ctypes) and on Paddle 3.3's own CPU kernels.
  eager    x + y on 16 float32 elements, synchronized, on the `oar` device
           (the adapter, cpu plugin) and on Paddle's CPU place.
  train    one training step of each model of adapters/paddle/tests/models.py
           on the `oar` device and on Paddle's CPU place.

Writes Google Benchmark's JSON format (one "median" aggregate per variant,
times in the unit given, "samples" holding every repetition), which
scripts/bench.sh merges with the other benchmarks. Run by scripts/bench.sh,
which sets CUSTOM_DEVICE_ROOT and OAR_PLUGINS (the adapter, cpu plugin only);
OMP_NUM_THREADS defaults to 2 here, for Paddle and OAR alike.

    python bench/paddle_bench.py --build build --out /tmp/paddle.json [--quick]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")  # before Paddle or OpenBLAS start
os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ["OMP_NUM_THREADS"])

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STARTED = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
LOAD_AT_START = list(os.getloadavg())


def paddle_kernels():
    """name -> function(inputs) -> output and the inputs' shapes; the same
    names, shapes and attributes as bench/paddle_kernels.cc."""
    return {
        "matmul_1024": (lambda a, b: paddle.matmul(a, b), [[1024, 1024], [1024, 1024]]),
        "softmax_4096x1024": (lambda x: F.softmax(x, axis=-1), [[4096, 1024]]),
        "layer_norm_4096x1024": (lambda x, w, b: F.layer_norm(x, [1024], w, b, epsilon=1e-5),
                                 [[4096, 1024], [1024], [1024]]),
        "gelu_16Mi": (lambda x: F.gelu(x, approximate=False), [[16 << 20]]),
        "add_16Mi": (lambda a, b: a + b, [[16 << 20], [16 << 20]]),
        "sum_rows_4096x4096": (lambda x: paddle.sum(x, axis=-1), [[4096, 4096]]),
        "conv2d_32x64x56x56_k3": (lambda x, w: F.conv2d(x, w, padding=1),
                                  [[32, 64, 56, 56], [64, 64, 3, 3]]),
        # Paddle's layout is [batch, seq, heads, dim]; OAR's [batch, heads, seq, dim].
        "sdpa_8x16x512x64": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                             [[8, 512, 16, 64]] * 3),
    }


def interleaved(variants, repetitions, calls, pause):
    """variants: name -> function running one call to completion. Each
    repetition times |calls| calls of each variant (after one untimed call)
    and keeps their median; variants rotate who goes first. |pause| seconds
    between variants let the other's idle OpenMP threads stop spinning
    (Intel's OpenMP, which Paddle uses, spins 200 ms by default)."""
    names = list(variants)
    samples = {n: [] for n in names}
    for rep in range(repetitions):
        for k in range(len(names)):
            name = names[(rep + k) % len(names)]
            if pause:
                time.sleep(pause)
            fn = variants[name]
            fn()
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            samples[name].append(statistics.median(times))
    return samples


def entry(name, samples, unit, scale, **extra):
    """One Google Benchmark-style median aggregate."""
    median = statistics.median(samples) * scale
    out = {"name": name + "_median", "run_name": name, "run_type": "aggregate",
           "aggregate_name": "median", "repetitions": len(samples),
           "real_time": median, "cpu_time": median, "time_unit": unit,
           "samples": [s * scale for s in samples]}
    out.update(extra)
    return out


def bench_kernels(args, results):
    lib = ctypes.CDLL(os.path.join(args.build, "lib", "liboar_bench_paddle_kernels.so"))
    lib.oar_pk_error.restype = ctypes.c_char_p
    manifest = os.path.join(args.build, "share", "oar", "plugins.d", "cpu.json")
    if lib.oar_pk_open(manifest.encode()) != 0:
        raise RuntimeError(lib.oar_pk_error().decode())
    rng = np.random.default_rng(7)
    chosen = paddle_kernels()
    if args.kernels:
        chosen = {k: v for k, v in chosen.items() if k in args.kernels.split(",")}
    for name, (fn, shapes) in chosen.items():
        handle = lib.oar_pk_prepare(name.encode())
        if handle < 0:
            raise RuntimeError(lib.oar_pk_error().decode())
        paddle.set_device("cpu")
        arrays = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in shapes]
        inputs = [paddle.to_tensor(a) for a in arrays]
        check_same_result(lib, handle, name, fn, arrays, inputs)

        def run_oar(h=handle):
            if lib.oar_pk_run(h) != 0:
                raise RuntimeError(lib.oar_pk_error().decode())

        def run_paddle(fn=fn, inputs=inputs):
            fn(*inputs)  # CPU kernels finish before the call returns

        calls = 1 if args.quick else max(1, int(0.1 / max(1e-4, time_once(run_paddle))))
        samples = interleaved({"oar": run_oar, "paddle": run_paddle}, args.repetitions, calls,
                              0 if args.quick else 0.25)
        for variant, s in samples.items():
            results.append(entry(f"paddle_kernels/{name}/{variant}", s, "ms", 1e3,
                                 calls_per_repetition=calls))
        log(f"kernels {name}: oar {statistics.median(samples['oar']) * 1e3:.2f} ms, "
            f"paddle {statistics.median(samples['paddle']) * 1e3:.2f} ms")


def check_same_result(lib, handle, name, fn, arrays, inputs):
    """Gives OAR Paddle's inputs and compares the first 64 output values, so
    that both sides are known to compute the same function."""
    for i, a in enumerate(arrays):
        if name.startswith("sdpa"):
            a = np.ascontiguousarray(a.transpose(0, 2, 1, 3))  # to [batch, heads, seq, dim]
        ok = lib.oar_pk_set_input(handle, i, a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if ok != 0:
            raise RuntimeError(lib.oar_pk_error().decode())
    got = np.zeros(64, np.float32)
    if lib.oar_pk_output(handle, got.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 64) != 0:
        raise RuntimeError(lib.oar_pk_error().decode())
    # Index [0, 0, 0, :64] is the same element in both attention layouts.
    want = fn(*inputs).numpy().reshape(-1)[:64]
    if not np.allclose(got[:want.size], want, rtol=1e-3, atol=1e-3):
        raise RuntimeError(f"{name}: OAR and Paddle disagree: {got[:4]} vs {want[:4]}")


def time_once(fn):
    fn()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_eager(args, results):
    """x + y on 16 float32 elements, in blocks of ops per sample (a figure is
    the block's time / its ops), three ways: "sync", the issue's figure: the
    op, then the device synchronized (paddle.device.synchronize given a
    CustomPlace on `oar`; Paddle's CPU kernels have finished when the call
    returns); "async": the
    op alone (host cost of the dispatch); "numpy": the op and its result
    copied to a numpy array."""
    ops = 50 if args.quick else 500
    tensors = {}
    for place in ("cpu", "oar:0"):
        paddle.set_device(place)
        tensors[place] = (paddle.ones([16], "float32"), paddle.full([16], 2.0, "float32"))

    def block(place, mode):
        x, y = tensors[place]
        sync = mode == "sync" and place != "cpu"
        # The place as an object, as a loop would hold it: given the string
        # "oar:0", paddle.device.synchronize parses it first, 2.5 us of
        # Python per call (measured 2026-12-02), which is not the device's.
        device = None
        if place != "cpu":
            device_type, index = place.split(":")
            device = paddle.CustomPlace(device_type, int(index))

        def run():
            paddle.set_device(place)
            for _ in range(ops):
                z = x + y
                if sync:
                    paddle.device.synchronize(device)
                elif mode == "numpy":
                    z.numpy()
            if mode == "async" and place != "cpu":
                paddle.device.synchronize(device)  # not left to the next sample
        return run

    for mode in ("sync", "async", "numpy"):
        samples = interleaved({"oar": block("oar:0", mode), "paddle": block("cpu", mode)},
                              args.repetitions, 1 if args.quick else 5, 0)
        for variant, s in samples.items():
            results.append(entry(f"paddle_eager/add_16_{mode}/{variant}", [t / ops for t in s],
                                 "us", 1e6, ops_per_sample=ops))
        log(f"eager add 16 {mode}: oar {statistics.median(samples['oar']) / ops * 1e6:.2f} us, "
            f"paddle {statistics.median(samples['paddle']) / ops * 1e6:.2f} us")


def bench_train(args, results):
    sys.path.insert(0, os.path.join(HERE, "..", "adapters", "paddle", "tests"))
    try:
        import models
        names = list(models.MODELS)
    except ImportError:
        log("train: adapters/paddle/tests/models.py not found, skipped")
        return
    if args.models:
        names = [n for n in names if n in args.models.split(",")]
    for name in names:
        steps = {}
        try:
            for place in ("cpu", "oar:0"):
                paddle.set_device(place)
                model, x, y, loss_fn = models.build(name)
                step = models.make_step(model, loss_fn)

                def run(place=place, step=step, x=x, y=y):
                    paddle.set_device(place)
                    float(step(x, y))  # the loss on the host: the step has finished
                steps[place] = run
                run()
        except Exception as e:  # a kernel the adapter lacks: say so, go on
            log(f"train {name}: skipped ({str(e).splitlines()[0][:200]})")
            continue
        samples = interleaved({"oar": steps["oar:0"], "paddle": steps["cpu"]}, args.repetitions,
                              3 if args.quick else 20, 0)
        for variant, s in samples.items():
            results.append(entry(f"paddle_train/{name}/{variant}", s, "ms", 1e3))
        log(f"train {name}: oar {statistics.median(samples['oar']) * 1e3:.2f} ms, "
            f"paddle {statistics.median(samples['paddle']) * 1e3:.2f} ms")


def log(text):
    print(f"paddle_bench: {text}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the OAR build folder")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    parser.add_argument("--repetitions", type=int, default=None)
    parser.add_argument("--parts", default="kernels,eager,train")
    parser.add_argument("--kernels", default="", help="comma-separated kernel names (default all)")
    parser.add_argument("--models", default="", help="comma-separated models (default all)")
    args = parser.parse_args()
    if args.repetitions is None:
        args.repetitions = 2 if args.quick else 5
    results = []
    parts = args.parts.split(",")
    if "kernels" in parts:
        bench_kernels(args, results)
    if "eager" in parts:
        bench_eager(args, results)
    if "train" in parts:
        bench_train(args, results)
    context = {"executable": "bench/paddle_bench.py", "date": STARTED,
               "paddle_version": paddle.__version__,
               "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
               "load_avg": LOAD_AT_START, "load_avg_end": list(os.getloadavg()),
               "num_cpus": os.cpu_count()}
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": results}, f, indent=1)
    # The adapter may corrupt the heap at exit (docs/paddle.md, "Known
    # problems"): leave without exit handlers once the results are written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
