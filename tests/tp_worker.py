"""One tensor-parallel rank for tests/test_qwen3_tp.py, run as its own process (as torchrun
would start it): ``python tp_worker.py JOBS.json OUT_DIR`` with RANK, WORLD_SIZE and TP_STORE (a
file store) in the environment. It joins a gloo group, runs each job and saves what it got to
``OUT_DIR/<job>-<rank>.npz``; the test compares the ranks with each other and with one process.
With TP_DEVICE=cuda each rank takes GPU ``RANK`` and the group is NCCL's.

Jobs: ``model`` (load a checkpoint over a group — the whole world, or pairs of ranks, each pair a
model of its own — then logits, greedy tokens, seeded sampling, each step's logits, the decode
graph's steps), ``refuse`` (a configuration that must not load), ``collectives`` (the DeviceOps
alone: sums, gathers, bfloat16 memory, a graph replayed with fresh inputs; over the world or a
pair).
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np
import torch.distributed as dist

import safetile as ct
from safetile.integrations import distributed as ctd
from safetile.models import qwen3


@ct.entry
def double(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * 2.0)


def run_model(job: dict, group, device: str) -> dict:
    tuning = (qwen3.tuning.CPU if device == "cpu" else qwen3.tuning.GPU_F32).with_(**job.get("tuning", {}))
    m = qwen3.load(job["path"], device=device, max_seq_len=128, tuning=tuning, tp_group=group)
    p = job["prompt"]
    steps = []
    toks = []
    for tok in m.stream(p, 3):
        toks.append(tok)
        steps.append(m._logits())  # every rank gathers alike
    return dict(logits=m.logits(p), greedy=np.array(m.generate(p, job["steps"])),
                topk=np.array(m.generate(p, 8, temperature=0.8, top_k=20, seed=3)),
                topp=np.array(m.generate(p, 8, temperature=0.8, top_p=0.9, seed=4)),
                step_logits=np.stack(steps), ops=np.array(m.decode_graph(1).ops), world=m.part.world,
                cuda_graph=m.decode_graph(1).stream.is_cuda)


def run_collectives(group, device: str) -> dict:
    """Rank r of the group contributes values made from r."""
    rank, world = ctd.group_rank(group), ctd.group_size(group)

    def put(a, dtype=None):
        return ct.from_numpy(a, device=device, dtype=dtype).sync()
    summed = ctd.all_reduce(put(np.arange(6, dtype=np.float32) + 10 * rank), group=group).sync().to_numpy()
    biggest = ctd.all_reduce(put(np.full(3, rank, np.int32)), op="max", group=group).sync().to_numpy()
    part = put(np.full((2, 3), rank, np.int32)).shared()  # a Shared input is read in place
    out, part = ctd.all_gather(ct.zeros((2 * world, 3), ct.int32, device=device).sync(), part, group=group).sync()
    bf = put(np.arange(4, dtype=np.float32) + rank, ct.bfloat16)
    bf_sum = ctd.all_reduce(bf, group=group).sync().to_numpy().astype(np.float32)
    # a graph: a launch, then the sum over the ranks of its output, replayed with fresh inputs (on
    # the GPU a CUDA graph holding the NCCL kernel)
    src = put(np.zeros(8, np.float32))
    dst = ct.zeros(8, device=device).sync()
    stream = ct.Stream(device)
    op = double(dst.partition(4), src).then(lambda r: ctd.all_reduce(r[0].unpartition(), group=group))
    g = op.graph(stream)
    replays = []
    for k in range(3):
        src = ct.memcpy(src, put(np.arange(8, dtype=np.float32) * (k + 1) + rank)).sync()
        g.launch()
        replays.append(g.value.to_numpy())
    return dict(summed=summed, biggest=biggest, gathered=out.to_numpy(), bf_sum=bf_sum, replays=np.stack(replays),
                graph_ops=np.array(g.ops), world=world, cuda_graph=g.stream.is_cuda)


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = os.environ.get("TP_DEVICE", "cpu")
    if device == "cuda":
        import torch
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
    dist.init_process_group("gloo" if device == "cpu" else "nccl", init_method="file://" + os.environ["TP_STORE"],
                            rank=rank, world_size=world)
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    pairs = [dist.new_group([r, r + 1]) for r in range(0, world, 2)]  # every rank makes every group, in order
    for job in jobs:
        group = pairs[rank // 2] if job.get("group") == "pair" else None
        try:
            if job["kind"] == "model":
                res = run_model(job, group, device)
            elif job["kind"] == "refuse":
                try:
                    qwen3.load(job["path"], max_seq_len=64, tp_group=group)
                    res = {"error": ""}
                except qwen3.CheckpointError as e:
                    res = {"error": str(e)}
            else:
                res = run_collectives(group, device)
        except Exception:  # noqa: BLE001 - the test shows it
            res = {"failure": traceback.format_exc()}
        np.savez(os.path.join(sys.argv[2], f"{job['name']}-{rank}.npz"), **res)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
