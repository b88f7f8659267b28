"""The runtime slots: copies, the pointer mapping, streams and events,
memory statistics, and a missing plugin."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import paddle
import pytest

from conftest import DEVICE, PLUGIN, device_name, memory_kinds

RESERVED = 1 << 40  # AddressSpace::kReservedBytes


def test_round_trip_of_many_sizes_is_exact():
    paddle.set_device("cpu")
    rng = np.random.default_rng(1)
    for n in (0, 1, 3, 255, 4097, 1 << 20):
        a = rng.standard_normal(n).astype(np.float32)
        t = paddle.to_tensor(a, place=paddle.CustomPlace("oar", 0))
        assert t.place.is_custom_place()
        np.testing.assert_array_equal(t.numpy(), a)


def test_device_pointers_lie_in_one_reserved_range_and_views_are_interior():
    x = paddle.to_tensor(np.arange(1024, dtype=np.float32), place=paddle.CustomPlace("oar", 0))
    y = paddle.to_tensor(np.arange(8, dtype=np.float32), place=paddle.CustomPlace("oar", 0))
    px, py = x.data_ptr(), y.data_ptr()
    assert px != py and abs(px - py) < RESERVED
    # A slice is a pointer inside x's allocation; kernels resolve it to the
    # same OAR buffer at an offset.
    view = x[100:104]
    got = (view * 2).numpy()
    np.testing.assert_array_equal(got, np.arange(100, 104, dtype=np.float32) * 2)


def test_upload_source_may_be_reused_at_once():
    # Asynchronous uploads stage the host bytes, so overwriting or freeing
    # the source right after the call does not change what arrives.
    paddle.set_device(DEVICE)
    results = []
    for i in range(20):
        src = np.full(4096, float(i), dtype=np.float32)
        t = paddle.to_tensor(src)
        src[:] = -1.0
        del src
        results.append(t)
    for i, t in enumerate(results):
        assert float(t.sum()) == 4096.0 * i


def test_device_to_device_copy_and_fill():
    paddle.set_device(DEVICE)
    a = paddle.to_tensor(np.arange(10, dtype=np.int64))
    b = a.clone()
    a[:] = 5  # a fill on the device
    np.testing.assert_array_equal(b.numpy(), np.arange(10))
    np.testing.assert_array_equal(a.numpy(), np.full(10, 5))


def test_streams_and_events_order_work():
    paddle.set_device(DEVICE)
    s = paddle.device.Stream(device=DEVICE)
    e = paddle.device.Event()
    x = paddle.ones([256, 256])
    # x is written on the current stream; s must wait for it (as with CUDA).
    s.wait_stream(paddle.device.current_stream())
    with paddle.device.stream_guard(s):
        y = paddle.matmul(x, x)
        e.record(s)
    paddle.device.current_stream().wait_event(e)
    z = y + 1
    e.synchronize()
    assert e.query()
    assert float(z[0, 0]) == 257.0
    paddle.device.synchronize()


def test_memory_statistics_follow_allocations():
    paddle.set_device(DEVICE)
    before = paddle.device.memory_allocated(DEVICE)
    x = paddle.zeros([1 << 20], dtype="float32")
    after = paddle.device.memory_allocated(DEVICE)
    assert after - before >= 4 << 20
    del x
    assert paddle.device.max_memory_allocated(DEVICE) >= after


def test_missing_plugin_leaves_paddle_cpu_working(tmp_path):
    env = dict(os.environ, OAR_PLUGINS=str(tmp_path / "absent.json"))
    code = ("import paddle\n"
            "print('types', paddle.device.get_all_custom_device_type())\n"
            "paddle.set_device('cpu'); print('sum', float(paddle.ones([3]).sum()))\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "sum 3.0" in r.stdout
    assert "types ['oar']" in r.stdout
    assert "OAR found no device" in r.stderr
    # Paddle still lists the type (the adapter loaded) but OAR has no device:
    # asking for one is a Paddle error, not a crash.
    code2 = "import paddle\ntry:\n    paddle.set_device('oar:0')\nexcept Exception as e:\n    print('refused')\n"
    r2 = subprocess.run([sys.executable, "-c", code2], env=env, capture_output=True, text=True,
                        timeout=120)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert "refused" in r2.stdout


def test_oar0_is_the_plugin_under_test():
    assert device_name() == f"{PLUGIN}:0"


def _child(code, **env):
    """Runs |code| in a new Python with |env| added; returns its stdout."""
    full = dict(os.environ, **env)
    # os._exit: see docs/paddle.md, "Known problems" (exit-time corruption).
    r = subprocess.run([sys.executable, "-c", code + "\nimport os, sys\nsys.stdout.flush()\n"
                        "os._exit(0)\n"], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.skipif(PLUGIN != "sim", reason="uses the sim plugin's profiles")
def test_device_out_of_memory_is_paddles_out_of_memory_error():
    # The tiny profile has 128 MiB: four 100 MiB tensors cannot all be had.
    # Paddle raises its out-of-memory error (MemoryError in Python), and the
    # device still works afterwards.
    out = _child("import paddle\n"
                 "paddle.set_device('oar:0')\n"
                 "xs = []\n"
                 "try:\n"
                 "    for i in range(4):\n"
                 "        xs.append(paddle.zeros([25 << 20], dtype='float32'))\n"
                 "    print('allocated all')\n"
                 "except Exception as e:\n"
                 "    print('ERROR', type(e).__name__)\n"
                 "del xs\n"
                 "print('after', float(paddle.ones([8]).sum()))\n",
                 OAR_SIM_PROFILE="tiny")
    assert "ERROR MemoryError" in out, out
    assert "after 8.0" in out, out


def test_dtype_the_device_lacks_is_an_error_naming_device_and_operator():
    # Kernels are registered per device type, so a dtype one device does not
    # claim reaches OAR, whose refusal becomes Paddle's error (no crash, no
    # silent CPU result); the device keeps working.
    from conftest import claimed
    if claimed("float64"):
        pytest.skip("the device claims float64")
    paddle.set_device("cpu")
    a = paddle.to_tensor(np.arange(4, dtype=np.float64))
    paddle.set_device(DEVICE)
    with pytest.raises(Exception) as e:
        (a.to(DEVICE) + a.to(DEVICE)).cpu()
    text = str(e.value)
    assert "OAR device" in text and device_name() in text and "add" in text, text
    ok = paddle.ones([3]) + 1
    assert ok.cpu().numpy().tolist() == [2.0, 2.0, 2.0]


class _Device(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int)]


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Device), ctypes.POINTER(ctypes.c_void_p),
                          ctypes.c_size_t)
_FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Device), ctypes.c_void_p, ctypes.c_size_t)
_SET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Device), ctypes.c_void_p, ctypes.c_ubyte,
                        ctypes.c_size_t)
C_SUCCESS, C_ERROR = 0, 3


def _memory_slots():
    """host alloc/free, unified alloc/free and device_memory_set, through the
    adapter's test export (Paddle's Python API reaches none of the first four)."""
    root = os.environ.get("CUSTOM_DEVICE_ROOT", "")
    lib = ctypes.CDLL(os.path.join(root, "libpaddle-custom-oar.so"))
    lib.oar_paddle_memory_slots.restype = ctypes.POINTER(ctypes.c_void_p)
    s = lib.oar_paddle_memory_slots()
    return _ALLOC(s[0]), _FREE(s[1]), _ALLOC(s[2]), _FREE(s[3]), _SET(s[4])


def test_host_memory_is_usable_host_memory_and_bad_frees_are_errors(capfd):
    host_alloc, host_free, _, _, _ = _memory_slots()
    dev = _Device(0)
    ptrs = []
    for size in (0, 1, 4096, 3 << 20):
        p = ctypes.c_void_p()
        assert host_alloc(ctypes.byref(dev), ctypes.byref(p), size) == C_SUCCESS
        assert p.value
        n = max(size, 1)
        ctypes.memset(p.value, 0xA5, n)  # the host writes all of it
        assert ctypes.string_at(p.value, n) == b"\xa5" * n
        ptrs.append((p.value, size))
    assert len({p for p, _ in ptrs}) == len(ptrs)
    # OAR's pinned memory where the device offers OAR_MEMORY_KIND_HOST_PINNED
    # (cpu and vulkan here), plain host memory elsewhere (sim, opencl).
    lib = ctypes.CDLL(os.path.join(os.environ.get("CUSTOM_DEVICE_ROOT", ""),
                                   "libpaddle-custom-oar.so"))
    kind = lib.oar_paddle_host_memory_kind
    kind.argtypes = [ctypes.c_void_p]
    assert {kind(p) for p, _ in ptrs} == {2 if memory_kinds() & 2 else 1}
    for p, size in ptrs:
        assert host_free(ctypes.byref(dev), p, size) == C_SUCCESS
    # Freeing twice, or memory the adapter did not give, is an error, not a crash.
    assert kind(ptrs[0][0]) == 0  # freed
    assert host_free(ctypes.byref(dev), ptrs[-1][0], 0) == C_ERROR
    assert host_free(ctypes.byref(dev), ctypes.addressof(dev), 0) == C_ERROR
    assert "free of unknown host memory" in capfd.readouterr().err


def test_unified_memory_where_the_device_offers_it(capfd):
    _, _, unified_alloc, unified_free, memory_set = _memory_slots()
    dev = _Device(0)
    p = ctypes.c_void_p()
    status = unified_alloc(ctypes.byref(dev), ctypes.byref(p), 8192)
    if not memory_kinds() & 4:
        # A device without OAR_MEMORY_KIND_UNIFIED (sim, opencl and vulkan
        # here): refused, naming the device, and no pointer.
        assert status == C_ERROR and not p.value
        assert f"OAR device {device_name()} offers no unified memory" in capfd.readouterr().err
        return
    assert status == C_SUCCESS and p.value
    # One address for both sides: the host writes, a device operation (an OAR
    # fill on the device's stream, resolved from the unified pointer) writes
    # part of it, and the host reads the device's bytes at the same address.
    ctypes.memset(p.value, 0x11, 8192)
    assert memory_set(ctypes.byref(dev), p.value + 100, 0x5A, 50) == C_SUCCESS
    got = ctypes.string_at(p.value, 8192)
    assert got == b"\x11" * 100 + b"\x5a" * 50 + b"\x11" * (8192 - 150)
    # Bytes past the allocation are refused like device memory.
    assert memory_set(ctypes.byref(dev), p.value + 8000, 0, 1000) == C_ERROR
    assert unified_free(ctypes.byref(dev), p.value, 8192) == C_SUCCESS
    assert unified_free(ctypes.byref(dev), p.value, 8192) == C_ERROR
    assert "leave an allocation of 8192 bytes" in capfd.readouterr().err
