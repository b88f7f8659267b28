"""Gradients computed on the OAR device against Paddle's CPU: each registered
backward kernel (and SGD) through paddle.grad on small broadcasting shapes."""
import numpy as np
import paddle
import paddle.nn.functional as F
import pytest

from conftest import DEVICE, claimed
from test_kernels import strided_slice_raw

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}

CASES = [
    ("relu_grad", lambda a, b: F.relu(a)),
    ("tanh_grad", lambda a, b: paddle.tanh(a)),
    ("sigmoid_grad", lambda a, b: F.sigmoid(a)),
    ("silu_grad", lambda a, b: F.silu(a)),
    ("gelu_grad", lambda a, b: F.gelu(a)),
    ("gelu_grad_tanh", lambda a, b: F.gelu(a, approximate=True)),
    ("softmax_grad", lambda a, b: F.softmax(a, axis=-1)),
    ("log_softmax_grad", lambda a, b: F.log_softmax(a, axis=0)),
    ("add_grad", lambda a, b: a + b),
    ("subtract_grad", lambda a, b: a - b),
    ("multiply_grad", lambda a, b: a * b),
    ("pow_grad", lambda a, b: paddle.pow(a, 3.0)),
    ("matmul_grad", lambda a, b: paddle.matmul(a, a, transpose_y=True)),
    ("matmul_grad_vector", lambda a, b: paddle.matmul(a, b)),
    ("matmul_grad_batched", lambda a, b: paddle.matmul(a.reshape([3, 1, 4]), a.T)),
    ("mean_grad", lambda a, b: paddle.mean(a, axis=1)),
    ("mean_grad_all", lambda a, b: paddle.mean(a)),
    ("sum_grad", lambda a, b: paddle.sum(a, axis=0, keepdim=True)),
    ("concat_grad", lambda a, b: paddle.concat([a, b.reshape([1, 4]), a * 2.0], axis=0)),
    ("slice_grad", lambda a, b: paddle.slice(a, axes=[0, 1], starts=[1, -3], ends=[3, 100])),
    # Repeated indices: their gradients add up.
    ("gather_grad", lambda a, b: paddle.gather(a, paddle.to_tensor([3, 0, 0, 2]), axis=1)),
    ("gather_grad_index_m1",
     lambda a, b: paddle.gather(a, paddle.to_tensor([[2], [0], [2]]), axis=0)),
    # Repeated rows and elements add up; a negative coordinate.
    ("gather_nd_grad",
     lambda a, b: paddle.gather_nd(a, paddle.to_tensor([[2, 1], [0, -1], [2, 1], [1, 2]]))),
    ("gather_nd_grad_rows", lambda a, b: paddle.gather_nd(a, paddle.to_tensor([[1], [1], [0]]))),
    ("strided_slice_grad", lambda a, b: paddle.strided_slice(
        a, axes=[0, 1], starts=[0, -1], ends=[3, -5], strides=[2, -2])),
    ("strided_slice_grad_step", lambda a, b: paddle.strided_slice(
        a, axes=[1], starts=[1], ends=[100], strides=[2])),
    # strided_slice_raw_grad (the legacy op's), with a decreased axis. Paddle
    # 3.3.1's own CPU kernel fails on that (an Eigen rank check), so the CPU
    # reference is the same slice as strided_slice and a squeeze.
    ("strided_slice_raw_grad", lambda a, b: strided_slice_raw(
        a, axes=[0, 1], starts=[2, -1], ends=[3, -5], strides=[1, -2], decrease_axis=[0])
     if a.place.is_custom_place() else paddle.strided_slice(
        a, axes=[0, 1], starts=[2, -1], ends=[3, -5], strides=[1, -2]).squeeze(0)),
    ("triu_grad", lambda a, b: paddle.triu(a, diagonal=1)),
    ("index_select_grad",
     lambda a, b: paddle.index_select(b, paddle.to_tensor([1, 3, 1, 1], dtype="int32"))),
]


def grads(fn, a, b, device):
    paddle.set_device(device)
    ta = paddle.to_tensor(a, stop_gradient=False)
    tb = paddle.to_tensor(b, stop_gradient=False)
    out = fn(ta, tb)
    w = paddle.to_tensor(np.linspace(-1, 1, out.size).reshape(out.shape).astype(a.dtype))
    loss = paddle.sum(out * w)
    ga, gb = paddle.grad([loss], [ta, tb], allow_unused=True)
    return [None if g is None else g.cpu().numpy() for g in (ga, gb)]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [d for d in ("float32", "float64") if claimed(d)])
def test_gradient_matches_cpu(name, fn, dtype):
    rng = np.random.default_rng(5)
    a = rng.uniform(0.2, 2.0, (3, 4)).astype(dtype)
    b = rng.uniform(-2.0, 2.0, (4,)).astype(dtype)
    # Eager slices are strided views; without them the device's slice and
    # slice_grad run (as under to_static).
    paddle.set_flags({"FLAGS_use_stride_kernel": not name.startswith(("slice", "strided"))})
    try:
        ref = grads(fn, a, b, "cpu")
        got = grads(fn, a, b, DEVICE)
    finally:
        paddle.set_flags({"FLAGS_use_stride_kernel": True})
    rtol, atol = TOL[dtype]
    for r, g in zip(ref, got):
        assert (r is None) == (g is None)
        if r is not None:
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


def _adam_steps(device, dtype, make, steps):
    paddle.set_device(device)
    init = np.linspace(-1.5, 2.0, 12).reshape(4, 3).astype(dtype)
    p = paddle.create_parameter([4, 3], dtype,
                                default_initializer=paddle.nn.initializer.Assign(init))
    opt = make([p])
    for i in range(steps):
        # A gradient that changes sign and size from step to step.
        (p * p * p * (1.0 + 0.5 * i) - 2.0 * p).sum().backward()
        opt.step()
        opt.clear_grad()
    accs = opt._accumulators
    state = {k: v[p.name].cpu().numpy() for k, v in accs.items()}
    return p.cpu().numpy(), state, str(accs["beta1_pow_acc"][p.name].place)


ADAMS = {
    "adam": lambda ps: paddle.optimizer.Adam(learning_rate=0.1, parameters=ps),
    "adamw": lambda ps: paddle.optimizer.AdamW(learning_rate=0.1, parameters=ps,
                                               weight_decay=0.3),
    # Betas of their own: the step is recovered from beta1_pow = beta1^t.
    "adam_betas": lambda ps: paddle.optimizer.Adam(learning_rate=0.05, beta1=0.5, beta2=0.75,
                                                   epsilon=1e-3, parameters=ps),
    # amsgrad (a composition of OAR operators): moment2_max too must match.
    # beta2 = 0.6, so that v follows the squared gradient closely and falls
    # where the gradient shrinks: v_max then differs from v (checked below).
    "adam_amsgrad": lambda ps: paddle.optimizer.Adam(learning_rate=0.1, beta2=0.6,
                                                     parameters=ps, amsgrad=True),
    "adamw_amsgrad": lambda ps: paddle.optimizer.AdamW(learning_rate=0.1, beta2=0.6,
                                                       parameters=ps, weight_decay=0.3,
                                                       amsgrad=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ADAMS)
def test_adam_steps_match_cpu(name, dtype):
    # adam_/adamw_ on OAR's fused adam (kernels/optimizer.cc): 5 steps, then
    # the parameter, both moments and the host-side beta powers as on the CPU.
    if not claimed(dtype):
        pytest.skip(f"{dtype} not claimed")
    dev, dev_state, pow_place = _adam_steps(DEVICE, dtype, ADAMS[name], 5)
    cpu, cpu_state, _ = _adam_steps("cpu", dtype, ADAMS[name], 5)
    # float32: gradients near 0 make m / sqrt(v) ill-conditioned; against a
    # float64 run, Paddle's CPU is off by 1.5e-6 and the device by 3.4e-6
    # (OAR computes the bias corrections in double, Paddle in float32).
    rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (1e-10, 1e-12)
    np.testing.assert_allclose(dev, cpu, rtol=rtol, atol=atol)
    assert set(dev_state) == set(cpu_state)
    for k in cpu_state:
        np.testing.assert_allclose(dev_state[k], cpu_state[k], rtol=rtol, atol=atol, err_msg=k)
    if "amsgrad" in name:  # the maximum mattered: v_max is well above v in places
        excess = cpu_state["moment2_max"] / cpu_state["moment2"] - 1
        assert excess.max() > 0.5, excess
    assert "cpu" in pow_place.lower(), pow_place  # the beta powers stayed on the host
    assert not np.allclose(dev, np.linspace(-1.5, 2.0, 12).reshape(4, 3))  # it moved


@pytest.mark.parametrize("amsgrad", [False, True], ids=["plain", "amsgrad"])
def test_adam_with_a_host_learning_rate_matches_cpu(amsgrad):
    # Paddle's optimizers keep the learning rate on the device; a direct
    # adam_ call may pass it on the host: then the fused call takes it as its
    # attribute (plain), or it is uploaded by a fill (amsgrad).
    rng = np.random.default_rng(9)
    init = [rng.uniform(-1, 1, (5,)).astype("float32") for _ in range(2)]
    grads = [rng.uniform(-1, 1, (5,)).astype("float32") * (3 - i) for i in range(3)]

    def steps(device):
        paddle.set_device("cpu")
        lr = paddle.to_tensor(np.array(0.05, dtype="float32"))  # stays on the host
        pows = [paddle.to_tensor(np.array([b], dtype="float32")) for b in (0.9, 0.6)]
        paddle.set_device(device)
        p, m1 = paddle.to_tensor(init[0]), paddle.zeros([5])
        m2, m2max = paddle.zeros([5]), paddle.to_tensor(np.abs(init[1]))
        for g in grads:
            paddle._C_ops.adam_(p, paddle.to_tensor(g), lr, m1, m2, m2max, pows[0], pows[1],
                                None, None, 0.9, 0.6, 1e-8, False, 1000, False, False, amsgrad)
        return [t.cpu().numpy() for t in (p, m1, m2, m2max)]
    got, ref = steps(DEVICE), steps("cpu")
    for name, g, r in zip(("param", "moment1", "moment2", "moment2_max"), got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(got[0], init[0])


def test_sgd_step_matches_cpu():
    def step(device):
        paddle.set_device(device)
        p = paddle.create_parameter([4, 3], "float32",
                                    default_initializer=paddle.nn.initializer.Assign(
                                        np.arange(12, dtype=np.float32).reshape(4, 3)))
        opt = paddle.optimizer.SGD(learning_rate=0.25, parameters=[p])
        (p * p).sum().backward()
        opt.step()
        return p.cpu().numpy()
    np.testing.assert_allclose(step(DEVICE), step("cpu"), rtol=1e-6)


# The layer kernels' gradients (conv2d_grad, pool2d_grad, layer_norm_grad,
# embedding_grad, cross_entropy_with_softmax_grad, mean_all_grad,
# transpose_grad, add_n): the gradient of every float input, from the cases
# of test_kernels.LAYERS plus a transpose.
from test_kernels import LAYERS, layer_inputs  # noqa: E402

LAYER_GRADS = LAYERS + [
    ("transpose", lambda x: paddle.transpose(x, [2, 0, 1]), [((2, 3, 4), "float")]),
    ("embedding_repeats", lambda i, w: F.embedding(i, w, padding_idx=1),
     [((12,), "ids3"), ((3, 4), "float")]),
]


def layer_grads(fn, raw, dtype, device):
    paddle.set_device(device)
    ts = [paddle.to_tensor(a.astype(d or dtype), stop_gradient=d is not None) for a, d in raw]
    out = fn(*ts)
    w = paddle.to_tensor(np.linspace(-1, 1, out.size).reshape(out.shape).astype(dtype))
    loss = paddle.sum(out * w)
    wanted = [t for t in ts if not t.stop_gradient]
    return [g.cpu().numpy() for g in paddle.grad([loss], wanted)]


@pytest.mark.parametrize("name,fn,specs", LAYER_GRADS, ids=[c[0] for c in LAYER_GRADS])
@pytest.mark.parametrize("dtype", [d for d in ("float32", "float64") if claimed(d)])
def test_layer_gradient_matches_cpu(name, fn, specs, dtype):
    raw = layer_inputs(specs, np.random.default_rng(13))
    ref = layer_grads(fn, raw, dtype, "cpu")
    got = layer_grads(fn, raw, dtype, DEVICE)
    rtol, atol = TOL[dtype]
    if dtype == "float64" and "avg_pool" in name:
        # Paddle's CPU avg_pool2d_grad divides by the window size in float32
        # (its float64 results are 3e-8 off the exact value; OAR's are not).
        rtol, atol = 1e-7, 1e-9
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=rtol * 10, atol=atol * 10)


# batch_norm_grad (kernels/layers.cc): dx, dscale, dbias in training mode
# (batch statistics) and with global statistics, against Paddle's CPU; 16-bit
# x against the CPU in float32 on the same rounded values.
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "global_stats"])
@pytest.mark.parametrize("dtype", [d for d in ("float32", "float64", "float16", "bfloat16")
                                   if claimed(d)])
def test_batch_norm_gradient_matches_cpu(training, dtype, layout):
    from test_kernels import batch_norm_inputs
    shape = (4, 3, 2, 3) if layout == "NCHW" else (4, 3, 3, 2)
    x, (rm, rv, w, b) = batch_norm_inputs(shape, dtype, layout)
    dy = np.linspace(-1, 1, x.size).reshape(x.shape)
    wide = "float32" if dtype in ("float16", "bfloat16") else dtype

    def run(device, xdt):
        paddle.set_device(device)
        sdt = "float64" if xdt == "float64" else "float32"
        xt = paddle.to_tensor(x.astype(sdt)).astype(xdt)  # no float64 on the device
        xt.stop_gradient = False
        wt, bt = (paddle.to_tensor(v.astype(sdt), stop_gradient=False) for v in (w, b))
        y = F.batch_norm(xt, paddle.to_tensor(rm.astype(sdt)), paddle.to_tensor(rv.astype(sdt)),
                         wt, bt, training=training, momentum=0.8, epsilon=1e-3,
                         use_global_stats=not training, data_format=layout)
        loss = (y * paddle.to_tensor(dy.astype(sdt)).astype(xdt)).sum()
        return [g.cpu().astype("float64").numpy() for g in paddle.grad([loss], [xt, wt, bt])]
    ref, got = run("cpu", wide), run(DEVICE, dtype)
    rtol, atol = TOL.get(dtype, (1e-5, 1e-6))
    if dtype in ("float16", "bfloat16"):  # dy rounded to 16 bits, dx rounded once
        rtol = atol = 2e-3 if dtype == "float16" else 1.6e-2
    for name, r, g in zip(("dx", "dscale", "dbias"), ref, got):
        scale = max(1.0, float(np.abs(r).max()))
        np.testing.assert_allclose(g, r, rtol=rtol * 10, atol=atol * 10 * scale, err_msg=name)


# Adam/AdamW on float16/bfloat16 parameters: with multi_precision a float32
# master weight and float32 moments (the step in float32, the parameter its
# rounding), without it float32 moments beside the 16-bit parameter. The
# gradients are constants (rounded to the dtype) that change per step, so the
# CPU run on a float32 parameter with the same gradient values is the
# reference: its parameter is the master weight, its moments the same.
def _adam16_steps(device, dtype, make, multi_precision, rounded, steps=5):
    # Initial values and gradients rounded to |rounded| (the 16-bit dtype).
    paddle.set_device("cpu")
    init = paddle.to_tensor(np.linspace(-1.5, 2.0, 12).reshape(4, 3)).astype(rounded)
    init = init.astype("float32").numpy()
    coeffs = [paddle.to_tensor(np.sin(np.arange(12) + i).reshape(4, 3) * (1 + i))
              .astype(rounded).astype("float32").numpy() for i in range(steps)]
    paddle.set_device(device)
    p = paddle.create_parameter([4, 3], dtype,
                                default_initializer=paddle.nn.initializer.Assign(init))
    opt = make([p], multi_precision)
    for c in coeffs:
        (p * paddle.to_tensor(c).astype(dtype)).sum().backward()
        opt.step()
        opt.clear_grad()
    state = {k: list(v.values())[0].cpu().astype("float32").numpy()
             for k, v in opt._accumulators.items()}
    master = getattr(opt, "_master_weights", {}).get(p.name)
    return (p.cpu().astype("float32").numpy(), state,
            None if master is None else master.cpu().numpy())


ADAMS16 = {
    "adam": lambda ps, mp: paddle.optimizer.Adam(learning_rate=0.1, parameters=ps,
                                                 multi_precision=mp),
    "adamw": lambda ps, mp: paddle.optimizer.AdamW(learning_rate=0.1, parameters=ps,
                                                   weight_decay=0.3, multi_precision=mp),
    "adam_amsgrad": lambda ps, mp: paddle.optimizer.Adam(learning_rate=0.1, beta2=0.6,
                                                         parameters=ps, multi_precision=mp,
                                                         amsgrad=True),
}


@pytest.mark.parametrize("multi_precision", [True, False], ids=["master", "no_master"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ADAMS16)
def test_adam_16bit_matches_cpu_float32(name, dtype, multi_precision):
    if not claimed(dtype):
        pytest.skip(f"{dtype} not claimed")
    dev, dev_state, master = _adam16_steps(DEVICE, dtype, ADAMS16[name], multi_precision, dtype)
    cpu, cpu_state, _ = _adam16_steps("cpu", "float32", ADAMS16[name], False, dtype)
    assert set(dev_state) == set(cpu_state)
    for k in cpu_state:  # float32 moments, fed the same gradients
        np.testing.assert_allclose(dev_state[k], cpu_state[k], rtol=1e-5, atol=1e-6, err_msg=k)
    if multi_precision:
        assert master is not None and master.dtype == np.float32
        np.testing.assert_allclose(master, cpu, rtol=1e-5, atol=1e-5)
        # The parameter is the master weight rounded once.
        paddle.set_device("cpu")
        np.testing.assert_array_equal(
            dev, paddle.to_tensor(master).astype(dtype).astype("float32").numpy())
    else:
        # Rounded to 16 bits after every step: a few roundings off float32.
        tol = 4e-3 if dtype == "float16" else 3e-2
        np.testing.assert_allclose(dev, cpu, rtol=tol, atol=tol)
    assert not np.allclose(dev, np.linspace(-1.5, 2.0, 12).reshape(4, 3), atol=1e-2)
