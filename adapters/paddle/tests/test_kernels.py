"""Each kernel the adapter registers, for each dtype, against Paddle's CPU.

The device runs the kernel in the dtype under test; the reference is Paddle's
own CPU kernel on the same (already rounded) inputs, computed in float32 for
float16/bfloat16 (Paddle's CPU lacks some of those kernels) and compared with
a tolerance of the dtype. test_registered_kernels proves the device kernels
ran, not a CPU fallback.
"""
import numpy as np
import paddle
import paddle.nn.functional as F
import pytest
from paddle.base import core

from conftest import DEVICE, claimed

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int32", "int64"]
NUMBERS = FLOATS + INTS
ALL = NUMBERS + ["bool"]

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12), "float16": (2e-3, 2e-3),
       "bfloat16": (1.6e-2, 1.6e-2)}


def arrays(kind, rng):
    """Inputs: a (3, 4) and a (4,) that broadcasts against it, in |kind|'s domain."""
    if kind == "positive":
        return [rng.uniform(0.5, 3.0, (3, 4)), rng.uniform(0.5, 3.0, (4,))]
    if kind == "away_from_zero":
        return [rng.uniform(-3, 3, (3, 4)),
                rng.choice([-1, 1], (4,)) * rng.uniform(0.5, 3.0, (4,))]
    if kind == "ints":  # small, so that no dtype overflows
        return [rng.integers(-5, 6, (3, 4)).astype(np.float64),
                rng.integers(-5, 6, (4,)).astype(np.float64)]
    return [rng.uniform(-3, 3, (3, 4)), rng.uniform(-3, 3, (4,))]


def run_case(fn, nargs, dtype, kind="any", ref_dtype=None):
    rng = np.random.default_rng(7)
    raw = arrays("ints" if dtype in INTS + ["bool"] and kind == "any" else kind, rng)[:nargs]
    paddle.set_device("cpu")
    if dtype == "bool":
        host = [paddle.to_tensor(a > 0) for a in raw]
    else:
        host = [paddle.to_tensor(a).astype(dtype) for a in raw]
    # The reference: Paddle's CPU in a dtype its CPU kernels all have.
    wide = ref_dtype or ("float32" if dtype in ("float16", "bfloat16") else dtype)
    try:
        ref = fn(*[h.astype(wide) if wide != dtype else h for h in host])
    except RuntimeError as e:  # Paddle's CPU has no kernel for this dtype
        if "is not registered" not in str(e):
            raise
        ref = fn(*[h.astype("float64") for h in host])
        ref = ref.astype(dtype) if ref.dtype != paddle.bool else ref
    dev = [h.to(DEVICE) for h in host]
    paddle.set_device(DEVICE)
    out = fn(*dev)
    assert out.place.is_custom_place(), out.place
    got = out.cpu()
    assert got.shape == ref.shape
    if got.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64):
        rtol, atol = TOL[dtype] if dtype in TOL else TOL["float32"]
        np.testing.assert_allclose(got.astype("float64").numpy(), ref.astype("float64").numpy(),
                                   rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got.numpy(), ref.numpy().astype(got.numpy().dtype))


def dtypes(allowed):
    return [pytest.param(d, marks=pytest.mark.skipif(not claimed(d), reason="not claimed"))
            for d in allowed]


BINARY = [
    ("add", paddle.add, NUMBERS, "any"),
    ("subtract", paddle.subtract, NUMBERS, "any"),
    ("multiply", paddle.multiply, NUMBERS, "any"),
    ("divide", paddle.divide, FLOATS, "away_from_zero"),
    ("maximum", paddle.maximum, NUMBERS, "any"),
    ("minimum", paddle.minimum, NUMBERS, "any"),
    ("elementwise_pow", paddle.pow, FLOATS, "positive"),
    ("equal", paddle.equal, ALL, "any"),
    ("not_equal", paddle.not_equal, ALL, "any"),
    ("less_than", paddle.less_than, NUMBERS, "any"),
    ("less_equal", paddle.less_equal, NUMBERS, "any"),
    ("greater_than", paddle.greater_than, NUMBERS, "any"),
    ("greater_equal", paddle.greater_equal, NUMBERS, "any"),
]

UNARY = [
    ("relu", F.relu, FLOATS + INTS, "any"),
    ("tanh", paddle.tanh, FLOATS, "any"),
    ("sigmoid", F.sigmoid, FLOATS, "any"),
    ("silu", F.silu, FLOATS, "any"),
    ("exp", paddle.exp, FLOATS, "any"),
    ("log", paddle.log, FLOATS, "positive"),
    ("sqrt", paddle.sqrt, FLOATS, "positive"),
    ("rsqrt", paddle.rsqrt, FLOATS, "positive"),
    ("sin", paddle.sin, FLOATS, "any"),
    ("cos", paddle.cos, FLOATS, "any"),
    ("abs", paddle.abs, NUMBERS, "any"),
    ("floor", paddle.floor, FLOATS, "any"),
    ("ceil", paddle.ceil, FLOATS, "any"),
    ("reciprocal", paddle.reciprocal, FLOATS, "away_from_zero"),
    ("erf", paddle.erf, FLOATS, "any"),
    ("square", paddle.square, NUMBERS, "any"),
    ("gelu", F.gelu, FLOATS, "any"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate=True), FLOATS, "any"),
    ("scale", lambda x: paddle.scale(x, 2.5, 0.5), FLOATS, "any"),
    ("scale_bias_first", lambda x: paddle.scale(x, 2.5, 0.5, bias_after_scale=False), FLOATS,
     "any"),
    ("cast_to_f32", lambda x: x.astype("float32"), ALL, "any"),
    ("cast_to_i64", lambda x: x.astype("int64"), ALL, "ints"),
    ("cast_to_bool", lambda x: x.astype("bool"), ALL, "any"),
    ("transpose", lambda x: paddle.transpose(x, [1, 0]), ALL, "any"),
    ("contiguous", lambda x: x[:, 1:3] * 1 if x.dtype != paddle.bool else x[:, 1:3].astype("int32"),
     ALL, "any"),
    ("full_like", lambda x: paddle.full_like(x, 1 if x.dtype == paddle.bool else 3), ALL, "any"),
    ("sum", lambda x: paddle.sum(x), NUMBERS + ["bool"], "any"),
    ("sum_axis", lambda x: paddle.sum(x, axis=1, keepdim=True), NUMBERS, "any"),
    ("sum_int32_to_int64", lambda x: paddle.sum(x, axis=0, dtype="int64"), ["int32"], "any"),
    ("mean", lambda x: paddle.mean(x, axis=0), FLOATS, "any"),
    ("max", lambda x: paddle.max(x, axis=1), NUMBERS, "any"),
    ("min", lambda x: paddle.min(x), NUMBERS, "any"),
    ("prod", lambda x: paddle.prod(x, axis=0), NUMBERS, "any"),
    ("argmax", lambda x: paddle.argmax(x, axis=1), NUMBERS, "any"),
    ("argmin_int32", lambda x: paddle.argmin(x, axis=0, dtype="int32"), NUMBERS, "any"),
    ("argmax_flat", lambda x: paddle.argmax(x), NUMBERS, "any"),
    ("softmax", lambda x: F.softmax(x, axis=-1), FLOATS, "any"),
    ("softmax_axis0", lambda x: F.softmax(x, axis=0), FLOATS, "any"),
    ("log_softmax", lambda x: F.log_softmax(x, axis=1), FLOATS, "any"),
]

MATMUL = [
    ("matmul", lambda a, b: paddle.matmul(a, b.T), 2),
    ("matmul_tx", lambda a, b: paddle.matmul(a, b, transpose_x=True), 2),
    ("matmul_ty", lambda a, b: paddle.matmul(a, b, transpose_y=True), 2),
    ("matmul_batched", lambda a, b: paddle.matmul(a.reshape([3, 2, 2]), b.reshape([2, 2])), 2),
    ("matmul_vector", lambda a, b: paddle.matmul(a, b), 2),
    ("matmul_vector_vector", lambda a, b: paddle.matmul(b, b), 2),
]


@pytest.mark.parametrize("name,fn,allowed,kind", BINARY, ids=[c[0] for c in BINARY])
@pytest.mark.parametrize("dtype", dtypes(ALL))
def test_binary(name, fn, allowed, kind, dtype):
    if dtype not in allowed:
        pytest.skip(f"{name} has no {dtype} kernel in OAR's operator set")
    run_case(fn, 2, dtype, kind)


@pytest.mark.parametrize("name,fn,allowed,kind", UNARY, ids=[c[0] for c in UNARY])
@pytest.mark.parametrize("dtype", dtypes(ALL))
def test_unary(name, fn, allowed, kind, dtype):
    if dtype not in allowed:
        pytest.skip(f"{name} has no {dtype} kernel in OAR's operator set")
    run_case(fn, 1, dtype, kind)


@pytest.mark.parametrize("name,fn,nargs", MATMUL, ids=[c[0] for c in MATMUL])
@pytest.mark.parametrize("dtype", dtypes(FLOATS))
def test_matmul(name, fn, nargs, dtype):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,))
    if name != "matmul_vector_vector" and name != "matmul_vector":
        b = rng.uniform(-1, 1, (2, 4)) if name in ("matmul",) else rng.uniform(-1, 1, (3, 2))
        if name == "matmul_ty":
            b = rng.uniform(-1, 1, (5, 4))
        if name == "matmul_batched":
            b = rng.uniform(-1, 1, (2, 2))
    paddle.set_device("cpu")
    ha, hb = paddle.to_tensor(a).astype(dtype), paddle.to_tensor(b).astype(dtype)
    wide = "float32" if dtype in ("float16", "bfloat16") else dtype
    ref = fn(ha.astype(wide), hb.astype(wide))
    paddle.set_device(DEVICE)
    got = fn(ha.to(DEVICE), hb.to(DEVICE)).cpu()
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype("float64").numpy(), ref.astype("float64").numpy(),
                               rtol=rtol, atol=max(atol, 1e-5))


@pytest.mark.parametrize("dtype", dtypes(ALL))
def test_full(dtype):
    paddle.set_device(DEVICE)
    out = paddle.full([2, 3], 7, dtype=dtype)
    zeros = paddle.zeros([5], dtype=dtype)
    assert out.place.is_custom_place()
    np.testing.assert_array_equal(out.cpu().astype("float64").numpy(), np.full((2, 3), 7.0 if dtype != "bool" else 1.0))
    np.testing.assert_array_equal(zeros.cpu().astype("float64").numpy(), np.zeros(5))


# Every Paddle kernel the adapter maps, with the dtypes it registers; the
# table docs/paddle.md prints.
REGISTERED = {
    **{n: NUMBERS for n in ("add", "subtract", "multiply", "maximum", "minimum", "abs", "square",
                            "max", "min", "prod", "argmax", "argmin", "less_than", "less_equal",
                            "greater_than", "greater_equal")},
    **{n: FLOATS for n in ("divide", "elementwise_pow", "tanh", "sigmoid", "silu", "exp", "log",
                           "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "reciprocal", "erf",
                           "gelu", "scale", "mean", "matmul", "softmax", "log_softmax")},
    **{n: ALL for n in ("equal", "not_equal", "where", "full", "full_like", "cast", "contiguous",
                        "transpose")},
    "relu": FLOATS + INTS,
    "sum": NUMBERS + ["bool"],
    **{n: FLOATS for n in ("relu_grad", "tanh_grad", "sigmoid_grad", "silu_grad", "gelu_grad",
                           "softmax_grad", "log_softmax_grad", "pow", "pow_grad", "matmul_grad",
                           "mean_grad", "sgd")},
    "adam": FLOATS,
    "adamw": FLOATS,
    **{n: NUMBERS for n in ("add_grad", "subtract_grad", "multiply_grad", "sum_grad", "add_n")},
    "transpose_grad": ALL,
    **{n: ALL for n in ("concat", "concat_grad", "slice", "slice_grad", "gather",
                        "index_select", "tril", "triu", "tril_grad", "triu_grad")},
    **{n: NUMBERS for n in ("gather_grad", "index_select_grad", "gather_nd_grad")},
    **{n: ALL for n in ("gather_nd", "strided_slice", "strided_slice_grad", "strided_slice_raw",
                        "strided_slice_raw_grad")},
    **{n: FLOATS for n in ("batch_norm", "batch_norm_grad")},
    "rms_norm": FLOATS,
    "rms_norm_grad": FLOATS,
    **{n: FLOATS for n in ("conv2d", "conv2d_grad", "pool2d", "pool2d_grad", "layer_norm",
                           "layer_norm_grad", "embedding", "embedding_grad",
                           "cross_entropy_with_softmax", "cross_entropy_with_softmax_grad",
                           "mean_all", "mean_all_grad")},
}


def test_registered_kernels():
    kernels = core._get_registered_phi_kernels("function")
    missing = []
    for name, wanted in REGISTERED.items():
        have = {k.split(", ")[-1].rstrip(")") for k in kernels.get(name, []) if k.startswith("(oar,")}
        missing += [f"{name}:{d}" for d in wanted if d not in have]
    assert not missing, missing


# ---- layer kernels (the CNN and the transformer block): inputs of their own
# shapes. Each case: (name, function, [(shape, kind)]) with kind "float"
# (the dtype under test), "ids<N>" (int64 in [0, N)) or "ids32<N>" (int32).
def _conv(x, w, **kw):
    return F.conv2d(x, w, **kw)


LAYERS = [
    ("conv2d", lambda x, w: _conv(x, w, padding=1), [((2, 3, 6, 6), "float"),
                                                    ((4, 3, 3, 3), "float")]),
    ("conv2d_stride2", lambda x, w: _conv(x, w, stride=2), [((1, 2, 7, 7), "float"),
                                                           ((3, 2, 3, 3), "float")]),
    ("conv2d_dilation_groups", lambda x, w: _conv(x, w, padding=2, dilation=2, groups=2),
     [((1, 4, 6, 6), "float"), ((4, 2, 3, 3), "float")]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2, 2), [((2, 3, 6, 6), "float")]),
    ("max_pool2d_pad", lambda x: F.max_pool2d(x, 3, 2, padding=1), [((1, 2, 7, 7), "float")]),
    ("avg_pool2d_exclusive", lambda x: F.avg_pool2d(x, 3, 2, padding=1),
     [((1, 2, 7, 7), "float")]),
    ("avg_pool2d_inclusive", lambda x: F.avg_pool2d(x, 3, 2, padding=1, exclusive=False),
     [((1, 2, 7, 7), "float")]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, 2), [((2, 3, 4, 6), "float")]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, 8, w, b),
     [((3, 4, 8), "float"), ((8,), "float"), ((8,), "float")]),
    ("layer_norm_2d_no_affine", lambda x: F.layer_norm(x, [4, 8]), [((3, 4, 8), "float")]),
    ("embedding", lambda i, w: F.embedding(i, w), [((2, 3), "ids10"), ((10, 4), "float")]),
    ("embedding_int32_padding", lambda i, w: F.embedding(i, w, padding_idx=2),
     [((7,), "ids32_4"), ((4, 3), "float")]),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), [((5, 7), "float"), ((5,), "ids7")]),
    ("cross_entropy_none_3d", lambda x, t: F.cross_entropy(x, t, reduction="none"),
     [((2, 3, 7), "float"), ((2, 3), "ids7")]),
    ("softmax_with_cross_entropy", lambda x, t: F.softmax_with_cross_entropy(x, t),
     [((4, 6), "float"), ((4, 1), "ids6")]),
    # Paddle's math path on a custom device (matmul, scale, softmax, triu for
    # the causal mask): every kernel of it on the device.
    ("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [((2, 5, 2, 8), "float"), ((2, 5, 2, 8), "float"), ((2, 5, 2, 8), "float")]),
    ("add_n", lambda a, b, c: paddle.add_n([a, b, c]),
     [((3, 4), "float"), ((3, 4), "float"), ((3, 4), "float")]),
]


def layer_inputs(specs, rng):
    out = []
    for shape, kind in specs:
        if kind == "float":
            out.append((rng.uniform(-2, 2, shape), None))
        else:
            wide = "int32" if kind.startswith("ids32") else "int64"
            n = int(kind.split("_")[-1].replace("ids", ""))
            out.append((rng.integers(0, n, shape), wide))
    return out


@pytest.mark.parametrize("name,fn,specs", LAYERS, ids=[c[0] for c in LAYERS])
@pytest.mark.parametrize("dtype", dtypes(FLOATS))
def test_layers(name, fn, specs, dtype):
    raw = layer_inputs(specs, np.random.default_rng(11))
    paddle.set_device("cpu")
    host = [paddle.to_tensor(a).astype(d or dtype) for a, d in raw]
    wide = "float32" if dtype in ("float16", "bfloat16") else dtype
    ref = fn(*[h.astype(wide) if h.dtype == getattr(paddle, dtype) else h for h in host])
    paddle.set_device(DEVICE)
    out = fn(*[h.to(DEVICE) for h in host])
    assert out.place.is_custom_place(), out.place
    got = out.cpu()
    assert got.shape == ref.shape
    rtol, atol = TOL[dtype]
    # Sums of up to 36 products (conv) in the dtype: a few roundings more.
    scale = 4 if dtype in ("float16", "bfloat16") else 10
    np.testing.assert_allclose(got.astype("float64").numpy(), ref.astype("float64").numpy(),
                               rtol=rtol * scale, atol=atol * scale)


# ---- joining, slicing, indexing (kernels/indexing.cc), every dtype: a (3, 4)
# and a (4,) input as in run_case; int64 and int32 indices with repeats.
def _idx(values, dtype="int64"):
    return paddle.to_tensor(np.array(values), dtype=dtype)


def strided_slice_raw(x, axes, starts, ends, strides, decrease_axis):
    """Paddle's legacy strided_slice op, whose kernel is strided_slice_raw
    (its six optional tensor bounds left out)."""
    return paddle._legacy_C_ops.strided_slice(
        x, None, None, None, None, None, None, "axes", axes, "starts", starts, "ends", ends,
        "strides", strides, "infer_flags", [1] * len(axes), "decrease_axis", decrease_axis)


INDEXING = [
    ("concat_axis0", lambda a, b: paddle.concat([a, b.reshape([1, 4]), a], axis=0)),
    ("concat_axis_last", lambda a, b: paddle.concat([a, a[:, :1]], axis=-1)),
    ("slice_two_axes", lambda a, b: paddle.slice(a, axes=[0, 1], starts=[1, -3], ends=[3, 100])),
    ("slice_decrease", lambda a, b: paddle.slice(a, axes=[0], starts=[2], ends=[3])[0]),
    ("gather_axis1", lambda a, b: paddle.gather(a, _idx([3, 0, 0, 2]), axis=1)),
    ("gather_axis0_int32", lambda a, b: paddle.gather(a, _idx([2, 2, 1], "int32"))),
    ("index_select", lambda a, b: paddle.index_select(a, _idx([1, 3, 1]), axis=-1)),
    # An [m, 1] index is Paddle's other gather form (one index per row).
    ("gather_index_m1", lambda a, b: paddle.gather(a, _idx([[2], [0], [2]]), axis=0)),
    # gather_nd: whole rows (k = 1, int32, a 2-D batch of indices) and single
    # elements (k = rank) with repeats and a negative coordinate.
    ("gather_nd_rows", lambda a, b: paddle.gather_nd(a, _idx([[[2], [0]], [[1], [2]]], "int32"))),
    ("gather_nd_elements",
     lambda a, b: paddle.gather_nd(a.reshape([3, 2, 2]), _idx([[2, 1, 0], [0, -1, 1], [2, 1, 0]]))),
    ("gather_nd_pairs", lambda a, b: paddle.gather_nd(a.reshape([3, 2, 2]), _idx([[1, 0], [2, 1]]))),
    # strided_slice: steps of 2 on two axes, one of them negative with
    # Paddle's end bound; a reversal from past the end; an end past the size.
    ("strided_slice_two_axes", lambda a, b: paddle.strided_slice(
        a, axes=[0, 1], starts=[0, -1], ends=[3, -5], strides=[2, -2])),
    ("strided_slice_reverse", lambda a, b: paddle.strided_slice(
        a, axes=[1], starts=[10], ends=[0], strides=[-2])),
    ("strided_slice_step", lambda a, b: paddle.strided_slice(
        a, axes=[1], starts=[1], ends=[100], strides=[2])),
    # strided_slice_raw: the legacy op (old programs, _legacy_C_ops), here
    # with a decreased axis: row 2, columns 3 and 1.
    ("strided_slice_raw_decrease", lambda a, b: strided_slice_raw(
        a, axes=[0, 1], starts=[2, -1], ends=[3, -5], strides=[1, -2], decrease_axis=[0])),
    ("tril", lambda a, b: paddle.tril(a, diagonal=1)),
    ("triu", lambda a, b: paddle.triu(a.reshape([2, 3, 2]), diagonal=-1)),
]


@pytest.fixture
def no_strided_views():
    # Eager slicing makes strided views (Paddle's own all-backend kernel);
    # without stride kernels Paddle calls the device's slice, as to_static does.
    paddle.set_flags({"FLAGS_use_stride_kernel": False})
    yield
    paddle.set_flags({"FLAGS_use_stride_kernel": True})


@pytest.mark.parametrize("name,fn", INDEXING, ids=[c[0] for c in INDEXING])
@pytest.mark.parametrize("dtype", dtypes(ALL))
def test_indexing(name, fn, dtype, no_strided_views):
    run_case(fn, 2, dtype)


# ---- rms_norm: Paddle's CPU wheel has no kernel for it, so the reference is
# numpy in float64 (y = x / sqrt(mean(x^2) + eps) * scale over the normalized
# axes; invvar = that 1 / sqrt per row) on the dtype-rounded inputs.
# A large eps, so that an eps lost on the way (OAR's default is 1e-6,
# Paddle's 1e-5) fails the comparison.
EPS = 1e-3  # the largest Paddle accepts


def _rms_ref(x, w, eps, naxes):
    rows = x.reshape(-1, int(np.prod(x.shape[x.ndim - naxes:])))
    inv = 1.0 / np.sqrt((rows * rows).mean(axis=1, keepdims=True) + eps)
    y = (rows * inv).reshape(x.shape) * (w if w is not None else 1.0)
    return y, inv.reshape(x.shape[:x.ndim - naxes])


@pytest.mark.parametrize("dtype", dtypes(FLOATS))
@pytest.mark.parametrize("naxes,with_scale", [(1, True), (2, True), (1, False)])
def test_rms_norm_matches_numpy(dtype, naxes, with_scale):
    rng = np.random.default_rng(3)
    shape = (3, 4, 8)
    paddle.set_device("cpu")
    x = paddle.to_tensor(rng.uniform(-2, 2, shape)).astype(dtype)
    w = paddle.to_tensor(rng.uniform(0.5, 1.5, shape[3 - naxes:])).astype(dtype)
    xr, wr = x.astype("float64").numpy(), w.astype("float64").numpy()
    ref_y, ref_inv = _rms_ref(xr, wr if with_scale else None, EPS, naxes)
    paddle.set_device(DEVICE)
    y, inv = paddle._C_ops.rms_norm(x.to(DEVICE), w.to(DEVICE) if with_scale else None,
                                    list(shape[3 - naxes:]), EPS)
    assert y.place.is_custom_place() and y.dtype == x.dtype
    assert inv.dtype == (paddle.float64 if dtype == "float64" else paddle.float32)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(y.cpu().astype("float64").numpy(), ref_y, rtol=rtol * 4, atol=atol * 4)
    np.testing.assert_allclose(inv.cpu().astype("float64").numpy(), ref_inv,
                               rtol=TOL["float32" if dtype != "float64" else dtype][0] * 4)


@pytest.mark.parametrize("dtype", dtypes(["float32", "float64"]))
def test_rms_norm_grad_matches_numpy(dtype):
    rng = np.random.default_rng(4)
    x0, w0 = rng.uniform(-2, 2, (5, 8)), rng.uniform(0.5, 1.5, (8,))
    dy = np.linspace(-1, 1, 40).reshape(5, 8)
    paddle.set_device(DEVICE)
    x = paddle.to_tensor(x0.astype(dtype), stop_gradient=False)
    w = paddle.to_tensor(w0.astype(dtype), stop_gradient=False)
    y = F.rms_norm(x, [8], w, EPS)
    y = y[0] if isinstance(y, (tuple, list)) else y  # Paddle 3.3.1 returns (y, invvar)
    gx, gw = paddle.grad([(y * paddle.to_tensor(dy.astype(dtype))).sum()], [x, w])
    inv = 1.0 / np.sqrt((x0 * x0).mean(axis=1, keepdims=True) + EPS)
    xhat, g = x0 * inv, dy * w0
    ref_dx = inv * (g - xhat * (g * xhat).mean(axis=1, keepdims=True))
    ref_dw = (dy * xhat).sum(axis=0)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(gx.numpy(), ref_dx, rtol=rtol * 10, atol=atol * 10)
    np.testing.assert_allclose(gw.numpy(), ref_dw, rtol=rtol * 10, atol=atol * 10)


def test_unsupported_form_names_device_and_kernel():
    # NHWC has no OAR operator: Paddle's error names the device and kernel.
    paddle.set_device(DEVICE)
    x = paddle.ones([1, 4, 4, 2])
    w = paddle.ones([3, 2, 3, 3])
    with pytest.raises(Exception) as e:
        F.conv2d(x, w, data_format="NHWC")
    text = str(e.value)
    assert "OAR device" in text and "conv2d" in text and "NHWC" in text, text


# ---- batch_norm (kernels/layers.cc): training mode (batch statistics, the
# running ones updated with momentum) on 4-D and 2-D inputs, and inference
# mode (running statistics), every float dtype the device claims; y and both
# running statistics against Paddle's CPU (float32 statistics, scale and bias
# for 16-bit x, as Paddle keeps them; the CPU computes in float32 then).
# NHWC (channels last: statistics over N, H, W per last-axis channel), both
# modes; its shape has C = 2 unlike H, W = 3, so a kernel that took axis 1 for
# the channel would fail on the shapes.
BN_CASES = [((4, 3, 2, 3), True, "NCHW"), ((6, 3), True, "NCHW"), ((4, 3, 2, 3), False, "NCHW"),
            ((4, 3, 3, 2), True, "NHWC"), ((4, 3, 3, 2), False, "NHWC")]


def batch_norm_run(device, x, stats, dtype, training, layout="NCHW"):
    paddle.set_device(device)
    sdt = "float64" if dtype == "float64" else "float32"
    xt = paddle.to_tensor(x.astype(sdt)).astype(dtype)  # no float64 on the device
    rm, rv, w, b = [paddle.to_tensor(v.astype(sdt)) for v in stats]
    y = F.batch_norm(xt, rm, rv, w, b, training=training, momentum=0.8, epsilon=1e-3,
                     data_format=layout)
    assert device == "cpu" or y.place.is_custom_place()
    return [t.cpu().astype("float64").numpy() for t in (y, rm, rv)]


def batch_norm_inputs(shape, dtype, layout="NCHW"):
    rng = np.random.default_rng(17)
    axis = len(shape) - 1 if layout == "NHWC" else 1
    c = shape[axis]
    offset = [1] * len(shape)
    offset[axis] = c
    x = rng.uniform(-2, 2, shape) + np.arange(c).reshape(offset)
    stats = [rng.uniform(-1, 1, (c,)), rng.uniform(0.5, 2, (c,)), rng.uniform(0.5, 1.5, (c,)),
             rng.uniform(-1, 1, (c,))]
    # x rounded to |dtype| once, so the CPU (float32 for 16-bit) sees the same values.
    paddle.set_device("cpu")
    return paddle.to_tensor(x).astype(dtype).astype("float64").numpy(), stats


@pytest.mark.parametrize("shape,training,layout", BN_CASES,
                         ids=["nchw_train", "nc_train", "nchw_test", "nhwc_train", "nhwc_test"])
@pytest.mark.parametrize("dtype", dtypes(FLOATS))
def test_batch_norm(shape, training, layout, dtype):
    x, stats = batch_norm_inputs(shape, dtype, layout)
    wide = "float32" if dtype in ("float16", "bfloat16") else dtype
    ref = batch_norm_run("cpu", x, stats, wide, training, layout)
    got = batch_norm_run(DEVICE, x, stats, dtype, training, layout)
    rtol, atol = TOL[dtype]
    stat_tol = TOL["float32" if dtype != "float64" else dtype]
    for i, (g, r) in enumerate(zip(got, ref)):
        tol = (rtol * 4, atol * 4) if i == 0 else (stat_tol[0] * 10, stat_tol[1] * 10)
        np.testing.assert_allclose(g, r, rtol=tol[0], atol=tol[1], err_msg=["y", "mean", "var"][i])
    if training:  # the running statistics moved
        assert not np.allclose(got[1], stats[0])
