"""Promise (docs/torch.md, Collectives): 'A collective owns what it writes: that tensor moves
into the operation when it is built, a writable claim keeps its memory from becoming
Shared meanwhile'; 'Refused before anything runs, arguments untouched: a written tensor
given as Shared, one overlapping another argument, ...'; (safety.md G6) 'While a Shared
handle lives, nothing writes its memory'.

Two gloo processes. On each rank:
 a. all_reduce of a Tensor *view* of a live Shared's memory (taken before .shared()) —
    refused, or the Shared's bytes change?
 b. all_gather(out, part) with part a view of out's own memory — refused (overlap)?
 c. an unrun all_reduce(x): a view of x's memory made Shared meanwhile — refused?
 d. a graph recording launch + all_reduce, then replayed after the output was unpartitioned
    and re-frozen — refused?"""
import os
import socket
import sys

from _r2 import *


def worker(rank, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch.distributed as dist
    import warnings
    warnings.simplefilter("ignore")
    from safetile.integrations import distributed as ctd
    dist.init_process_group("gloo", rank=rank, world_size=2)
    problems = []
    try:
        # a
        t = ct.ones(64).sync()
        view = t[:]
        s = t.shared()
        try:
            ctd.all_reduce(view, op="sum").sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"a: non-safetile {type(e).__name__}: {e}")
        if not np.all(s.to_numpy() == 1.0):
            problems.append(f"a: all_reduce wrote a live Shared through a view taken before .shared() "
                            f"(now {np.unique(s.to_numpy())[:2]})")
        # b
        out = ct.zeros(8).sync()
        part = out[0:4]
        try:
            ctd.all_gather(out, part).sync()
            problems.append("b: all_gather accepted part = a view of out")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"b: non-safetile {type(e).__name__}: {e}")
        # c
        x = ct.ones(64).sync()
        xv = x[:]
        op = ctd.all_reduce(x, op="sum")
        try:
            xv.shared()
            problems.append("c: a view of an unrun all_reduce's tensor became Shared")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"c: non-safetile {type(e).__name__}: {e}")
        x = op.sync()
        if not np.all(x.to_numpy() == 2.0):
            problems.append(f"c: all_reduce result {np.unique(x.to_numpy())[:3]}")
        # d
        z = ct.zeros(64).sync().partition(16)
        src = ct.ones(64).sync()
        g = fill(z, src).then(lambda r: ctd.all_reduce(r[0].unpartition(), op="sum")).graph()
        zt = g.launch()
        try:
            sh = zt.shared()
            try:
                g.launch()
                problems.append("d: a graph with an all_reduce replayed after its output became Shared")
            except Exception as e:  # noqa: BLE001
                if not is_safetile_error(e):
                    problems.append(f"d: non-safetile {type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"d: non-safetile {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001
        import traceback
        problems.append("attack error: " + traceback.format_exc()[-300:])
    q.put((rank, problems))
    dist.destroy_process_group()


def body():
    import torch.multiprocessing as mp
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, port, q)) for r in range(2)]
    [p.start() for p in ps]
    res = [q.get(timeout=90) for _ in ps]
    [p.join(20) for p in ps]
    probs = sorted(set(x for _, pr in res for x in pr))
    if any(x.startswith("attack error") for x in probs):
        inconclusive("; ".join(probs))
    if probs:
        broken("; ".join(probs))
    held("collectives respect Shared, overlap and graph ownership")


if __name__ == "__main__":
    run_guarded(body, "distributed ownership")
