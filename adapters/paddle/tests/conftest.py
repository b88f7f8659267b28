"""Shared setup of the adapter's tests.

ctest runs this folder once per OAR plugin with CUSTOM_DEVICE_ROOT naming the
adapter's folder, OAR_PLUGINS naming that one plugin's manifest and
OAR_PADDLE_PLUGIN its name; Paddle device "oar:0" is then that plugin's first
device. OAR_CLI is the `oar` tool, used to read which dtypes the device claims.
"""
import json
import os
import subprocess

import numpy as np
import paddle
import pytest

PLUGIN = os.environ.get("OAR_PADDLE_PLUGIN", "cpu")
DEVICE = "oar:0"


def _claims():
    """The dtypes (beyond f32, i32, i64, bool) the OAR device claims."""
    cli = os.environ.get("OAR_CLI")
    if not cli:
        return set()
    out = subprocess.run([cli, "info", f"{PLUGIN}:0", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return set(json.loads(out)["device"]["properties"]["dtypes"])


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
