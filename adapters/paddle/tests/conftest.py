"""Shared setup of the adapter's tests.

ctest runs this folder once per OAR plugin with CUSTOM_DEVICE_ROOT naming the
adapter's folder, OAR_PLUGINS naming that one plugin's manifest and
OAR_PADDLE_PLUGIN its name; Paddle device "oar:0" is then that plugin's first
device. What the device claims is read from the adapter itself (ctypes).
"""
import ctypes
import glob
import os
import sys

import numpy as np
import paddle
import pytest

PLUGIN = os.environ.get("OAR_PADDLE_PLUGIN", "cpu")
DEVICE = "oar:0"


def _adapter():
    """The adapter library Paddle loaded (dlopen returns the same handle)."""
    root = os.environ.get("CUSTOM_DEVICE_ROOT", "")
    libs = glob.glob(os.path.join(root, "libpaddle-custom-oar.so"))
    return ctypes.CDLL(libs[0]) if libs else None


def _claims():
    """The dtypes (beyond f32, i32, i64, bool) the OAR device claims."""
    lib = _adapter()
    if lib is None:
        return set()
    lib.oar_paddle_device_dtypes.restype = ctypes.c_int64
    bits = lib.oar_paddle_device_dtypes(0)
    # oar_dtype_support_e: F16 = 1, BF16 = 2, F64 = 4.
    return {name for bit, name in ((1, "f16"), (2, "bf16"), (4, "f64")) if bits >= 0 and bits & bit}


def memory_kinds():
    """The oar_memory_kind_e bits of oar:0 (DEVICE 1, HOST_PINNED 2, UNIFIED 4)."""
    lib = _adapter()
    if lib is None:
        return 0
    lib.oar_paddle_device_memory_kinds.restype = ctypes.c_int64
    return max(lib.oar_paddle_device_memory_kinds(0), 0)


def device_name():
    """OAR's name of oar:0, e.g. "sim:0"."""
    lib = _adapter()
    buf = ctypes.create_string_buffer(64)
    return buf.value.decode() if lib and lib.oar_paddle_device_name(0, buf, 64) else None


CLAIMS = _claims()


def claimed(dtype):
    """Whether the device claims |dtype| (a numpy/paddle dtype name)."""
    optional = {"float16": "f16", "bfloat16": "bf16", "float64": "f64"}
    return dtype not in optional or optional[dtype] in CLAIMS


def pytest_sessionstart(session):
    # The adapter must have loaded: a test run without it proves nothing.
    types = paddle.device.get_all_custom_device_type() or []
    if "oar" not in types:
        raise pytest.UsageError(
            "Paddle did not load the OAR device (CUSTOM_DEVICE_ROOT=%r); custom types: %r"
            % (os.environ.get("CUSTOM_DEVICE_ROOT"), types))


@pytest.fixture(autouse=True)
def _default_device():
    paddle.set_device("cpu")
    yield
    paddle.set_device("cpu")


def to_device(array, dtype, device):
    """A Paddle tensor of |dtype| on |device| from a numpy array."""
    paddle.set_device(device)
    t = paddle.to_tensor(array)
    return t.astype(dtype) if str(t.dtype).split(".")[-1] != dtype else t


def to_numpy(t):
    """Host copy of |t| as float64 for floats (bf16 included), else as is."""
    if t.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64):
        return t.astype("float32").numpy().astype(np.float64) if t.dtype != paddle.float64 \
            else t.numpy()
    return t.numpy()
