"""One rank of the adapter's collectives test (test_xccl.py), started by
mpirun: Paddle's xccl backend on the `oar` device, whose xccl_* slots are
OAR's oar::Communicator over MPI (docs/paddle.md, "Collectives").

    mpirun -n 2 python xccl_worker.py OUT_DIR PORT PLUGINS

PLUGINS is a comma list, one OAR plugin per rank (e.g. "cpu,sim"); the
manifests are read from OAR_PADDLE_MANIFEST_DIR. Each rank saves what it got
in OUT_DIR/rank<r>.npz; the test checks it against numpy.
"""
import os
import sys

out_dir, port, plugins = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
# What Paddle's launcher would set, from the MPI job's own rank and size.
endpoints = [f"127.0.0.1:{port + 1 + i}" for i in range(size)]
os.environ.update(
    OAR_PLUGINS=os.path.join(os.environ["OAR_PADDLE_MANIFEST_DIR"], plugins[rank] + ".json"),
    PADDLE_DISTRI_BACKEND="xccl", FLAGS_selected_oars="0",
    PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(size),
    PADDLE_TRAINER_ENDPOINTS=",".join(endpoints), PADDLE_CURRENT_ENDPOINT=endpoints[rank],
    PADDLE_MASTER=f"127.0.0.1:{port}", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

dist.init_parallel_env()
assert dist.get_rank() == rank and dist.get_world_size() == size
paddle.set_device("oar:0")
got = {}


def tensor(array):
    return paddle.to_tensor(array, place=paddle.CustomPlace("oar", 0))


def inputs(name, r):
    """The input rank |r| contributes to case |name| (the test recomputes it)."""
    base = np.arange(1000, dtype=np.float64)
    return {"sum_f32": (base * (r + 1) + r).astype(np.float32),
            "max_i64": ((base * (r + 3)) % 17).astype(np.int64),
            "min_i32": ((base * (r + 5)) % 13 - r).astype(np.int32),
            "prod_f64": (1.0 + (base % 7) * 0.25 * (r + 1)).astype(np.float64)}[name]


ops = {"sum_f32": dist.ReduceOp.SUM, "max_i64": dist.ReduceOp.MAX,
       "min_i32": dist.ReduceOp.MIN, "prod_f64": dist.ReduceOp.PROD}
for name, op in ops.items():
    t = tensor(inputs(name, rank))
    dist.all_reduce(t, op=op)
    got["all_reduce_" + name] = t.numpy()

t = tensor(np.full(37, 5.0 + rank, dtype=np.float32))
dist.broadcast(t, src=size - 1)
got["broadcast"] = t.numpy()

gathered = []
dist.all_gather(gathered, tensor((np.arange(6) + 10 * rank).astype(np.int64)))
got["all_gather"] = np.stack([g.numpy() for g in gathered])

t = tensor((np.arange(9) * (rank + 1)).astype(np.float32))
dist.reduce(t, dst=0)
if rank == 0:
    got["reduce"] = t.numpy()

out = tensor(np.zeros(4, dtype=np.float32))
dist.reduce_scatter(out, [tensor((np.arange(4) + 100 * j + rank).astype(np.float32))
                          for j in range(size)])
got["reduce_scatter"] = out.numpy()

if size == 2:
    if rank == 0:
        dist.send(tensor(np.arange(5, dtype=np.float32) * 7), dst=1)
    else:
        t = tensor(np.zeros(5, dtype=np.float32))
        dist.recv(t, src=0)
        got["send_recv"] = t.numpy()

# all_to_all: Paddle serves it with send/recv pairs (the adapter leaves
# xccl_all_to_all empty).
outs = []
dist.alltoall(outs, [tensor((np.arange(3) + 10 * rank + 100 * j).astype(np.int32))
                     for j in range(size)])
got["alltoall"] = np.stack([o.numpy() for o in outs])

# Bad input: a reduction OAR does not have (complex) is a Paddle error, and
# the communicator keeps working afterwards.
try:
    t = tensor(np.ones(4, dtype=np.complex64))
    dist.all_reduce(t)
    t.numpy()
    got["complex_refused"] = np.array(0)
except Exception as e:  # noqa: BLE001
    got["complex_refused"] = np.array(1)
    print(f"rank {rank} complex all_reduce refused: {type(e).__name__}", flush=True)
t = tensor(np.ones(3, dtype=np.float32) * (rank + 1))
dist.all_reduce(t)
got["after_refusal"] = t.numpy()

# Data parallel: each rank trains the MLP on its share of the batch,
# gradients averaged by all_reduce; then rank 0 trains the same model on
# the whole batch in one process, the reference.
STEPS = 3
model, x, y, loss_fn = models.build("mlp")
rows = x.shape[0] // size
for i, p in enumerate(model.parameters()):
    got[f"init_param_{i}"] = p.numpy()
dp = paddle.DataParallel(model)
opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
for _ in range(STEPS):
    loss = loss_fn(dp(x[rank * rows:(rank + 1) * rows]), y[rank * rows:(rank + 1) * rows])
    loss.backward()
    opt.step()
    opt.clear_grad()
for i, p in enumerate(model.parameters()):
    got[f"dp_param_{i}"] = p.numpy()
if rank == 0:
    ref, x, y, loss_fn = models.build("mlp")
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=ref.parameters())
    for _ in range(STEPS):
        loss = loss_fn(ref(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
    for i, p in enumerate(ref.parameters()):
        got[f"ref_param_{i}"] = p.numpy()

np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **got)
print(f"rank {rank} done", flush=True)
