"""Tensor-parallel Qwen3 decode on 1 and N GPUs (torchrun, NCCL): tokens/s, roofline, scaling.

Random bfloat16 weights in the Qwen3-32B shape (the same weights on every run: each tensor is
drawn from a generator seeded by its name). For each GPU count the script starts the workers
(one process per GPU: plain Python for 1, ``torchrun --standalone --nproc-per-node N``
otherwise); each measures its GPU's copy bandwidth, the device time of one all-reduce of the
residual row inside a captured graph (the engine's own collective DeviceOp), then, for each
context, batch-1 decode tokens/s (``new`` tokens ending at ``ctx``), the decode graph's device
time per token, the prefill, and its GPU memory. The roofline of a run is the bytes each GPU
must read per token (its share of the weights, its heads' KV cache) over that GPU's copy
bandwidth, for the slowest rank; communication is not in it. Scaling: tokens/s on N GPUs over
tokens/s on one (target ≥ 1.7 on two) and over N (the efficiency); and the fraction of the
N-GPU roofline (target ≥ 0.75). Greedy tokens are compared with the 1-GPU run's.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1: set here, before torch loads, and passed to every worker).

    python bench/qwen3_tp_bench.py --gpus 1,2 --out bench/results/NVIDIA_H200/qwen3-tp
    python bench/qwen3_tp_bench.py --smoke      # the script itself, on the CPU: gloo, a tiny model
"""
from __future__ import annotations

import os

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
os.environ.update(MULTICAST_OFF)  # before torch (and NCCL) load; workers inherit it

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import zlib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import qwen3_bench as qb  # noqa: E402  (copy bandwidth, prompts, graph timing)

import safetile as ct  # noqa: E402
from safetile.models import qwen3  # noqa: E402
from safetile.models.qwen3.chain import Chain, Own  # noqa: E402
from safetile.models.qwen3.parallel import Layout  # noqa: E402

TINY = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=256, tie_word_embeddings=False)


class RandomWeights:
    """Checkpoint-named random tensors, made when the loader asks for them: N(0, 0.02) matrices
    and 1 + N(0, 0.05) norms, seeded by name (every rank and every run draws the same model), in
    float32 on the device, so that the engine's conversion to bfloat16 copies only the rank's
    share and the full tensor is freed at once."""

    def __init__(self, cfg: qwen3.Qwen3Config, device: str):
        h, i, d, v = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim, cfg.vocab_size
        self.device = device
        self.shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,)}
        if not cfg.tie_word_embeddings:
            self.shapes["lm_head.weight"] = (v, h)
        for n in range(cfg.num_hidden_layers):
            p = f"model.layers.{n}."
            self.shapes.update({
                p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                p + "self_attn.q_proj.weight": (cfg.q_size, h), p + "self_attn.k_proj.weight": (cfg.kv_size, h),
                p + "self_attn.v_proj.weight": (cfg.kv_size, h), p + "self_attn.o_proj.weight": (h, cfg.q_size),
                p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
                p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h), p + "mlp.down_proj.weight": (h, i)})

    def __contains__(self, name: str) -> bool:
        return name in self.shapes

    def __getitem__(self, name: str) -> torch.Tensor:
        shape = self.shapes[name]
        g = torch.Generator(device=self.device).manual_seed(zlib.crc32(name.encode()))
        x = torch.randn(shape, generator=g, device=self.device, dtype=torch.float32)
        return 1 + 0.05 * x if len(shape) == 1 else x.mul_(0.02)


def bytes_per_token(cfg: qwen3.Qwen3Config, part: Layout, kv_positions: float, itemsize: int = 2) -> dict:
    """What one rank reads per decoded token: its share of every projection, the norms, its
    vocabulary rows of the head, one embedding row, and its key/value heads' cache."""
    h, d = cfg.hidden_size, cfg.head_dim
    layer = ((part.nq + 2 * part.nkv) * d * h + h * part.nq * d + 3 * h * part.inter_size + 2 * h + 2 * d)
    head_rows = part.vocab[1] - part.vocab[0]
    weights = (cfg.num_hidden_layers * layer + head_rows * h + 2 * h) * itemsize
    kv = 2 * cfg.num_hidden_layers * part.nkv * d * itemsize * kv_positions
    return {"weight_bytes": weights, "kv_bytes_mean": kv, "bytes_per_token": weights + kv}


def allreduce_device_us(cfg, device: str, group, reps: int = 128) -> float:
    """Device microseconds of one all-reduce of the float32 residual row (hidden size), ``reps``
    of them recorded into one graph with the engine's collective op and stream."""
    from safetile.integrations import distributed as ctd

    def all_reduce(t):
        return ctd.all_reduce(t, group=group)
    stream = ct.Stream(device)
    pool = {"x": ct.zeros((1, cfg.hidden_size), device=device).sync_on(stream)}
    c = Chain(pool)
    for _ in range(reps):
        c.launch(all_reduce, Own("x"))
    g = c.op.graph(stream)
    ms = qb.graph_device_ms(g, reps=5)
    g.close()
    return ms * 1e3 / reps


def measure(args, cfg, device: str, dtype: str, rank: int, world: int, group) -> dict:
    res = {"rank": rank, "world": world, "device": device,
           "device_name": torch.cuda.get_device_name(device) if device != "cpu" else "cpu"}
    res["copy_bandwidth_Bps"] = qb.copy_bandwidth(64 << 20 if args.smoke else 2 << 30)
    if world > 1:
        res["allreduce_us"] = allreduce_device_us(cfg, device, group)
    contexts = [int(c) for c in args.contexts.split(",")]
    tuning = qwen3.tuning.CPU if device == "cpu" else qwen3.tuning.GPU
    qb.mem_reset()
    t0 = time.perf_counter()
    eng = qwen3.from_weights(cfg, RandomWeights(cfg, device), device=device, dtype=dtype, max_seq_len=max(contexts),
                             tuning=tuning)
    res["build_s"] = time.perf_counter() - t0
    res["weights_bytes"] = eng.weights.nbytes()
    t0 = time.perf_counter()
    k = max(1, tuning.decode_chunk)
    eng.decode_graph(1)
    eng.decode_graph(k)
    res["capture_s"] = time.perf_counter() - t0
    res["launches_per_token"] = eng.launches_per_token()
    t0 = time.perf_counter()
    eng.generate(qb.prompt_ids(min(256, max(contexts) // 2), cfg.vocab_size, 1), 4)  # compiles the prefill
    res["first_generate_s"] = time.perf_counter() - t0
    res["runs"] = []
    for ctx in contexts:
        ids = qb.prompt_ids(ctx - args.new, cfg.vocab_size, ctx)
        eng.generate(ids, 2)
        dev_ms = qb.graph_device_ms(eng.decode_graph(k), reps=2) / k if 3 * k <= args.new else float("nan")
        toks = eng.generate(ids, args.new)
        st = eng.stats
        b = bytes_per_token(cfg, eng.part, ctx - args.new / 2, eng.dtype.itemsize)
        res["runs"].append({"ctx": ctx, "new_tokens": args.new, "tokens": toks, "decode_tokens_per_s":
                            st.decode_tokens_per_s, "device_ms_per_token": dev_ms, "ttft_s": st.first_token_s,
                            "prefill_tokens_per_s": len(ids) / st.prefill_s, **b,
                            "roofline_tokens_per_s": res["copy_bandwidth_Bps"] / b["bytes_per_token"]})
    res["gpu_memory_peak_bytes"] = qb.mem_peak()
    return res


def worker(args) -> None:
    """One rank (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK); rank 0 writes the ranks' results."""
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.smoke:
        qb.DEV.update(device="cpu", dtype=torch.float32)
        qwen3.config.SHAPES["tiny"] = TINY
        device, dtype = "cpu", "float32"
    else:
        torch.cuda.set_device(local)
        device, dtype = f"cuda:{local}", "bfloat16"
    group = None
    if world > 1:
        dist.init_process_group("gloo" if args.smoke else "nccl")
    cfg = qwen3.shape_config(args.shape)
    try:
        res = measure(args, cfg, device, dtype, rank, world, group)
    except Exception as e:  # noqa: BLE001 - reported; a rank failing alone ends the run (its peers time out)
        res = {"rank": rank, "world": world, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        print(f"rank {rank}: {res['error']}\n{res['trace']}", flush=True)
    ranks = [res]
    if world > 1:
        ranks = [None] * world
        dist.all_gather_object(ranks, res)
        dist.destroy_process_group()
    if rank == 0:
        with open(os.path.join(args.out, f"tp{world}.json"), "w") as f:
            json.dump(ranks, f, indent=1)


# ----------------------------------------------------------------------------- driver

def launch(args, n: int) -> dict:
    """Run the workers on ``n`` GPUs; their results (or why there are none)."""
    me = [os.path.abspath(__file__), "--worker", "--out", args.out, "--shape", args.shape, "--contexts",
          args.contexts, "--new", str(args.new)] + (["--smoke"] if args.smoke else [])
    cmd = [sys.executable] + me if n == 1 else \
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}"] + me
    env = dict(os.environ, **MULTICAST_OFF)
    path = os.path.join(args.out, f"tp{n}.json")
    if os.path.exists(path):
        os.remove(path)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, timeout=args.timeout, capture_output=True, text=True)
        log = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        log = f"timed out after {args.timeout} s\n" + (e.stdout or b"").decode(errors="replace")[-4000:]
    with open(os.path.join(args.out, f"tp{n}.log"), "w") as f:
        f.write(log)
    if not os.path.exists(path):
        return {"gpus": n, "error": "no results", "log_tail": log[-3000:]}
    with open(path) as f:
        ranks = json.load(f)
    return {"gpus": n, "wall_s": time.perf_counter() - t0, "ranks": ranks}


def summarise(results: list[dict]) -> list[dict]:
    """Per GPU count and context: tokens/s (rank 0's clock; every rank waits for the others each
    step), the slowest rank's device time and roofline, the speedup over one GPU and the fraction
    of the roofline."""
    rows, base = [], {}
    for r in results:
        ranks = r.get("ranks") or []
        if not ranks or any("error" in x for x in ranks):
            continue
        for i, run in enumerate(ranks[0]["runs"]):
            per = [x["runs"][i] for x in ranks]
            row = {"gpus": r["gpus"], "ctx": run["ctx"], "decode_tokens_per_s": run["decode_tokens_per_s"],
                   "device_ms_per_token": max(p["device_ms_per_token"] for p in per),
                   "roofline_tokens_per_s": min(p["roofline_tokens_per_s"] for p in per),
                   "bytes_per_token_per_gpu": max(p["bytes_per_token"] for p in per),
                   "copy_bandwidth_Bps": min(x["copy_bandwidth_Bps"] for x in ranks),
                   "allreduce_us": max((x.get("allreduce_us", 0.0) for x in ranks)),
                   "ttft_s": run["ttft_s"], "gpu_memory_peak_bytes": max(x["gpu_memory_peak_bytes"] for x in ranks),
                   "tokens": run["tokens"]}
            row["roofline_fraction"] = row["decode_tokens_per_s"] / row["roofline_tokens_per_s"]
            row["device_roofline_fraction"] = 1e3 / row["device_ms_per_token"] / row["roofline_tokens_per_s"]
            if r["gpus"] == 1:
                base[run["ctx"]] = row
            rows.append(row)
    for row in rows:
        one = base.get(row["ctx"])
        if one is not None:
            row["speedup"] = row["decode_tokens_per_s"] / one["decode_tokens_per_s"]
            row["scaling_efficiency"] = row["speedup"] / row["gpus"]
            row["tokens_agreeing_with_1gpu"] = qb.agree(row["tokens"], one["tokens"])
    return rows


def report(res: dict) -> None:
    print(f"\n{res['shape']} on {res.get('device', '?')}: decode, {res['new_tokens']} tokens ending at each context")
    print(f"{'gpus':>4} {'ctx':>5} {'tok/s':>7} {'roof':>6} {'frac':>5} {'dev ms':>7} {'dfrac':>5} {'speedup':>7} "
          f"{'eff':>5} {'AR us':>6} {'TB/s':>5} {'TTFT s':>6} {'GiB':>5} {'agree':>5}")
    for r in res["summary"]:
        print(f"{r['gpus']:4} {r['ctx']:5} {r['decode_tokens_per_s']:7.1f} {r['roofline_tokens_per_s']:6.1f} "
              f"{r['roofline_fraction']:5.2f} {r['device_ms_per_token']:7.3f} {r['device_roofline_fraction']:5.2f} "
              f"{r.get('speedup', float('nan')):7.2f} {r.get('scaling_efficiency', float('nan')):5.2f} "
              f"{r['allreduce_us']:6.1f} {r['copy_bandwidth_Bps'] / 1e12:5.2f} {r['ttft_s']:6.2f} "
              f"{r['gpu_memory_peak_bytes'] / 2**30:5.1f} {r.get('tokens_agreeing_with_1gpu', -1):5}")
    for r in res["runs"]:
        if "error" in r:
            print(f"ERROR {r['gpus']} GPU(s): {r['error']}\n{r.get('log_tail', '')[-1500:]}")
        for x in r.get("ranks") or []:
            if "error" in x:
                print(f"ERROR {r['gpus']} GPU(s), rank {x['rank']}: {x['error']}\n{x['trace'][-1500:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="1,2", help="GPU counts to run, in order (1 is the baseline)")
    ap.add_argument("--shape", default="32B")
    ap.add_argument("--contexts", default="1024,8192")
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--out", default="bench/results/gpu/qwen3-tp")
    ap.add_argument("--timeout", type=int, default=420, help="seconds for each GPU count's run")
    ap.add_argument("--smoke", action="store_true", help="a tiny float32 model on the CPU over gloo")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smoke and args.shape == "32B":
        args.shape, args.contexts, args.new = "tiny", "64,128", 16
    os.makedirs(args.out, exist_ok=True)
    if args.worker:
        worker(args)
        return
    counts = [int(n) for n in args.gpus.split(",")]
    have = os.cpu_count() if args.smoke else torch.cuda.device_count()
    res = {"shape": args.shape, "contexts": args.contexts, "new_tokens": args.new, "torch": torch.__version__,
           "python": platform.python_version(), "nccl": ".".join(map(str, torch.cuda.nccl.version()))
           if torch.cuda.is_available() else None, "env": MULTICAST_OFF, "runs": [],
           "device": "cpu" if args.smoke else (torch.cuda.get_device_name(0) if have else "no GPU"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    for n in counts:
        if n > have:
            res["runs"].append({"gpus": n, "error": f"only {have} GPU(s) here"})
            continue
        print(f"running on {n} GPU(s)...", flush=True)
        res["runs"].append(launch(args, n))
        res["summary"] = summarise(res["runs"])
        with open(os.path.join(args.out, "qwen3_tp_bench.json"), "w") as f:
            json.dump(res, f, indent=1)
    res["summary"] = summarise(res["runs"])
    with open(os.path.join(args.out, "qwen3_tp_bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    report(res)


if __name__ == "__main__":
    main()
