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


ALLTOALL_DTYPES = ("float32", "float64", "int64", "int32", "float16", "int8", "uint8", "bool")


def alltoall_block(r, j, name):
    """The block rank |r| sends to rank |j| (the test recomputes it)."""
    values = np.arange(5) + 10 * r + 100 * j
    return (values % 2 == 1) if name == "bool" else (values % 120).astype(name)


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

# all_to_all (xccl_all_to_all): equal blocks laid end to end (one tensor,
# alltoall_single) are one Communicator::all_to_all; blocks in separate
# tensors (alltoall of a list) or uneven splits a group of sends and
# receives. Block j of rank r is alltoall_block(r, j); the test checks the
# permutation.
for name in ALLTOALL_DTYPES:
    out = tensor(np.zeros((size, 5), dtype=name))
    dist.alltoall_single(out, tensor(np.stack([alltoall_block(rank, j, name)
                                               for j in range(size)])))
    got["alltoall_" + name] = out.numpy()
for name in ("float32", "int32"):
    outs = []
    dist.alltoall(outs, [tensor(alltoall_block(rank, j, name)) for j in range(size)])
    got["alltoall_list_" + name] = np.stack([o.numpy() for o in outs])
# Uneven: rank r sends 1 + r + 2 * j rows of 2 to rank j.
splits = [[1 + r + 2 * j for j in range(size)] for r in range(size)]
for name in ("float32", "int64"):
    rows = np.concatenate([np.stack([alltoall_block(rank, j, name)[:2]] * n)
                           for j, n in enumerate(splits[rank])])
    out = tensor(np.zeros((sum(splits[q][rank] for q in range(size)), 2), dtype=name))
    dist.alltoall_single(out, tensor(rows), splits[rank], [splits[q][rank] for q in range(size)])
    got["alltoall_uneven_" + name] = out.numpy()

# xccl_get_comm_name: one name on every rank of a communicator, another for
# another communicator (a new group). get_comm_name's argument picks the
# device (rank % device count): each rank has one, oar:0.
pg = dist.collective._get_default_group().process_group
got["comm_name"] = np.array(pg.get_comm_name(0))
group = dist.new_group(list(range(size)))
t = tensor(np.ones(2, dtype=np.float32))
dist.all_reduce(t, group=group)  # the group's communicator exists from here
got["group_comm_name"] = np.array(group.process_group.get_comm_name(0))

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
