"""Collectives: Paddle's xccl backend on OAR devices (the adapter's xccl_*
slots over oar::Communicator), two ranks under mpirun, one Paddle process
each (xccl_worker.py). Results are checked against numpy here.

CI runs one job, in the cpu plugin's run: rank 0 on cpu (memory MPI reads
directly), rank 1 on sim (staged through host memory). More by hand (other
jobs; OAR_PADDLE_XCCL_LONG=1 adds two ranks started without mpirun, which
must fail with the adapter's message, about 15 s more):

    OAR_PADDLE_XCCL_JOBS="cpu,cpu;sim,sim;cpu,sim" OAR_PADDLE_XCCL_LONG=1 \
        ctest -R paddle_adapter_cpu --output-on-failure
"""
import ctypes
import glob
import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

from conftest import PLUGIN

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.environ.get("OAR_PADDLE_XCCL_JOBS", "cpu,sim").split(";")


def _has_xccl():
    root = os.environ.get("CUSTOM_DEVICE_ROOT", "")
    libs = glob.glob(os.path.join(root, "libpaddle-custom-oar.so"))
    return bool(libs) and ctypes.CDLL(libs[0]).oar_paddle_has_xccl() == 1


pytestmark = [
    pytest.mark.skipif(PLUGIN != "cpu", reason="one 2-rank job per CI run, in the cpu run"),
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun"),
    pytest.mark.skipif(not _has_xccl(), reason="adapter built without liboar_comm (no MPI)"),
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_job(plugins, out_dir):
    ranks = len(plugins.split(","))
    manifests = os.environ.get("OAR_PADDLE_MANIFEST_DIR", "")
    for name in set(plugins.split(",")):
        if not os.path.exists(os.path.join(manifests, name + ".json")):
            pytest.skip(f"plugin {name} not built here (no {name}.json in {manifests!r})")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONDONTWRITEBYTECODE="1",
               OAR_VALIDATE="1")
    cmd = ["mpirun", "-n", str(ranks), sys.executable, os.path.join(HERE, "xccl_worker.py"),
           str(out_dir), str(_free_port()), plugins]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-5000:])
    # OAR's validation layer (the ranks' arguments compared before each
    # operation, and every call's checks) found nothing.
    assert "validation:" not in r.stderr, r.stderr[-5000:]
    return [dict(np.load(out_dir / f"rank{i}.npz")) for i in range(ranks)], r


def _inputs(name, r):
    base = np.arange(1000, dtype=np.float64)
    return {"sum_f32": (base * (r + 1) + r).astype(np.float32),
            "max_i64": ((base * (r + 3)) % 17).astype(np.int64),
            "min_i32": ((base * (r + 5)) % 13 - r).astype(np.int32),
            "prod_f64": (1.0 + (base % 7) * 0.25 * (r + 1)).astype(np.float64)}[name]


ALLTOALL_DTYPES = ("float32", "float64", "int64", "int32", "float16", "int8", "uint8", "bool")


def _alltoall_block(r, j, name):
    values = np.arange(5) + 10 * r + 100 * j
    return (values % 2 == 1) if name == "bool" else (values % 120).astype(name)


@pytest.mark.parametrize("plugins", JOBS)
def test_collectives_and_data_parallel_training(plugins, tmp_path):
    results, run = _run_job(plugins, tmp_path)
    n = len(results)
    every = [[_inputs(name, r) for r in range(n)] for name in
             ("sum_f32", "max_i64", "min_i32", "prod_f64")]
    expected = {
        "all_reduce_sum_f32": np.sum(every[0], axis=0, dtype=np.float64),
        "all_reduce_max_i64": np.max(every[1], axis=0),
        "all_reduce_min_i32": np.min(every[2], axis=0),
        "all_reduce_prod_f64": np.prod(every[3], axis=0),
        "broadcast": np.full(37, 5.0 + n - 1),
        "all_gather": np.stack([np.arange(6) + 10 * r for r in range(n)]),
        "reduce_scatter": None,  # per rank, below
        "after_refusal": np.full(3, n * (n + 1) / 2),
    }
    for r, got in enumerate(results):
        for key, want in expected.items():
            if key == "reduce_scatter":
                want = sum(np.arange(4) + 100 * r + q for q in range(n))
            assert got[key].dtype != np.complex64
            np.testing.assert_allclose(got[key], want, rtol=1e-6, err_msg=f"{key} rank {r}")
        # all_to_all: block q of rank r's result is the block rank q sent
        # to rank r, bit for bit, in the dtype sent.
        for name in ALLTOALL_DTYPES:
            want = np.stack([_alltoall_block(q, r, name) for q in range(n)])
            assert got["alltoall_" + name].dtype == want.dtype, name
            np.testing.assert_array_equal(got["alltoall_" + name], want, err_msg=name)
            if name in ("float32", "int32"):  # blocks in separate tensors
                np.testing.assert_array_equal(got["alltoall_list_" + name], want, err_msg=name)
        for name in ("float32", "int64"):  # uneven: rank q sent 1 + q + 2 * r rows
            want = np.concatenate([np.stack([_alltoall_block(q, r, name)[:2]] * (1 + q + 2 * r))
                                   for q in range(n)])
            np.testing.assert_array_equal(got["alltoall_uneven_" + name], want, err_msg=name)
        assert got["all_reduce_max_i64"].dtype == np.int64
        assert got["all_reduce_min_i32"].dtype == np.int32
        # The complex reduction is refused (OAR reduces no complex dtype),
        # with the adapter's message, and the communicator still works (above).
        assert int(got["complex_refused"]) == 1
    assert "xccl_all_reduce" in run.stderr and "cannot reduce" in run.stderr, run.stderr[-3000:]
    # One communicator, one name on every rank; the new group's another.
    names = {str(got["comm_name"]) for got in results}
    group_names = {str(got["group_comm_name"]) for got in results}
    assert len(names) == 1 and len(group_names) == 1, (names, group_names)
    assert names.pop().startswith(f"oar-staged-mpi-{n}-")
    assert group_names.pop() != str(results[0]["comm_name"])
    np.testing.assert_allclose(results[0]["reduce"], sum(np.arange(9) * (q + 1) for q in range(n)))
    if n == 2:
        np.testing.assert_array_equal(results[1]["send_recv"], np.arange(5) * 7.0)

    # Data parallel: the ranks' parameters agree with each other exactly (the
    # same averaged gradients everywhere) and with one process trained on the
    # whole batch within float32 rounding (the gradient is summed in another
    # order: measured at most ~1e-7 here).
    params = sorted(k for k in results[0] if k.startswith("dp_param_"))
    assert len(params) == 6
    for key in params:
        i = key[len("dp_param_"):]
        for r in range(n):
            np.testing.assert_allclose(results[r][key], results[0][key], rtol=1e-6, atol=1e-7,
                                       err_msg=f"{key} rank {r}")
        np.testing.assert_allclose(results[0][key], results[0]["ref_param_" + i], rtol=1e-5,
                                   atol=1e-6, err_msg=key)
    # Training moved the parameters well beyond that tolerance, so a rank
    # that trained on its half alone (no averaging) could not pass.
    moved = max(np.abs(results[0][k] - results[0]["init_param_" + k[len("dp_param_"):]]).max()
                for k in params)
    assert moved > 1e-2, moved


@pytest.mark.skipif(os.environ.get("OAR_PADDLE_XCCL_LONG") != "1",
                    reason="about 15 s; OAR_PADDLE_XCCL_LONG=1 runs it")
def test_ranks_outside_one_mpi_job_fail_clearly(tmp_path):
    # Two ranks started as plain processes (as paddle.distributed.launch
    # does), each then its own one-process MPI job: creating the communicator
    # fails on both with the adapter's message, as a Paddle error (no hang,
    # no crash).
    port = _free_port()
    procs = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "xccl_worker.py"), str(tmp_path), str(port), "cpu,cpu"],
        env=dict(os.environ, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE="2"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 1, err[-3000:]
        assert "CustomDevice error" in err, err[-3000:]
        assert ("xccl_comm_init_rank: UNAVAILABLE: Communicator::create: 1 processes joined with "
                "this id, not 2") in err, err[-3000:]
        assert "must be the processes of one MPI job (mpirun -n 2" in err, err[-3000:]
