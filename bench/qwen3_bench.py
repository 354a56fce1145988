"""Qwen3 inference on the GPU: the safetile engine against same-run peers.

Random bfloat16 weights in the real Qwen3-0.6B / 4B / 8B shapes; for each shape and
context (the cache filled to ``ctx`` positions at the end of the run: a prompt of
``ctx - new`` tokens, then ``new`` decoded tokens), it reports decode tokens/s, the HBM
roofline (weight bytes plus the mean KV bytes per token over the copy bandwidth measured in
this run) and the fraction reached, prefill tokens/s, time to first token and GPU memory,
for the safetile engine, the plain-PyTorch peer (bench/qwen3_torch.py; eager and
CUDA-graph-captured) and transformers' ``generate``. Each engine's greedy tokens are
compared with the PyTorch peer's. ``--sweep`` first times the decode GEMV kernels under
several tile configurations. Writes JSON (after every shape) to ``--out``.

    python bench/qwen3_bench.py --shapes 4B --contexts 1024,8192 --out bench/results/gpu
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from qwen3_torch import TorchQwen3  # noqa: E402

import safetile as ct  # noqa: E402
from safetile.models import qwen3  # noqa: E402
from safetile.models.qwen3 import kernels_gemv as kv  # noqa: E402
from safetile.models.qwen3.chain import Chain, In, Out  # noqa: E402

BF16 = torch.bfloat16
DEV = {"device": "cuda", "dtype": torch.bfloat16}  # --smoke runs a tiny model on the CPU


def sync():
    if DEV["device"] != "cpu":
        torch.cuda.synchronize()


def mem_allocated() -> int:
    return torch.cuda.memory_allocated() if DEV["device"] != "cpu" else 0


def mem_peak() -> int:
    return torch.cuda.max_memory_allocated() if DEV["device"] != "cpu" else 0


def mem_reset() -> None:
    gc.collect()
    if DEV["device"] != "cpu":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def copy_bandwidth(nbytes: int = 2 << 30, reps: int = 20) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written."""
    a = torch.empty(nbytes // 4, dtype=torch.float32, device=DEV["device"]).uniform_()
    b = torch.empty_like(a)
    times = []
    for _ in range(reps + 3):
        sync()
        t0 = time.perf_counter()
        b.copy_(a)
        sync()
        times.append(time.perf_counter() - t0)
    del a, b
    return 2 * nbytes / statistics.median(times[3:])


def random_weights(cfg: qwen3.Qwen3Config, seed: int) -> dict[str, torch.Tensor]:
    """Checkpoint-named bfloat16 tensors on the GPU: N(0, 0.02) matrices (Hugging Face's init),
    norms 1 + N(0, 0.05)."""
    g = torch.Generator(device=DEV["device"]).manual_seed(seed)
    h, i, d, v = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim, cfg.vocab_size

    def mat(o, n):
        return (torch.randn(o, n, device=DEV["device"], generator=g, dtype=torch.float32) * 0.02).to(DEV["dtype"])

    def norm(n):
        return (1 + 0.05 * torch.randn(n, device=DEV["device"], generator=g)).to(DEV["dtype"])
    t = {"model.embed_tokens.weight": mat(v, h), "model.norm.weight": norm(h)}
    if not cfg.tie_word_embeddings:
        t["lm_head.weight"] = mat(v, h)
    for n in range(cfg.num_hidden_layers):
        p = f"model.layers.{n}."
        t.update({p + "input_layernorm.weight": norm(h), p + "post_attention_layernorm.weight": norm(h),
                  p + "self_attn.q_proj.weight": mat(cfg.q_size, h), p + "self_attn.k_proj.weight": mat(cfg.kv_size, h),
                  p + "self_attn.v_proj.weight": mat(cfg.kv_size, h), p + "self_attn.o_proj.weight": mat(h, cfg.q_size),
                  p + "self_attn.q_norm.weight": norm(d), p + "self_attn.k_norm.weight": norm(d),
                  p + "mlp.gate_proj.weight": mat(i, h), p + "mlp.up_proj.weight": mat(i, h),
                  p + "mlp.down_proj.weight": mat(h, i)})
    return t


def roofline(cfg: qwen3.Qwen3Config, ctx: int, new: int, bw: float) -> dict:
    """Bytes a decode step must read (weights once, the cache up to its position), averaged over
    the decoded positions, and the tokens/s that bandwidth allows."""
    kv_mean = cfg.kv_bytes_per_position(2) * (ctx - new / 2)
    w = cfg.weight_bytes_per_token(2)
    return {"weight_bytes": w, "kv_bytes_mean": kv_mean, "bytes_per_token": w + kv_mean,
            "roofline_tokens_per_s": bw / (w + kv_mean)}


def prompt_ids(n: int, vocab: int, seed: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, vocab, n).tolist()


def agree(a: list[int], b: list[int]) -> int:
    """Length of the common prefix."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


# ----------------------------------------------------------------------------- the engine

def _nbytes(tensors, names) -> int:
    return sum(tensors[n].numel() * tensors[n].element_size() for n in names)


def _projections(tensors, which) -> list[str]:
    return [n for n in tensors if any(n.endswith(w + ".weight") for w in which)]


def device_ms(replay, stream=None, reps: int = 10) -> float:
    """Device milliseconds per call of ``replay`` (a CUDA graph replay), ``reps`` back to back between
    CUDA events: no host wait in between, so this is the GPU's time alone."""
    if DEV["device"] == "cpu":
        return float("nan")
    ctx = torch.cuda.stream(stream) if stream is not None else torch.cuda.stream(torch.cuda.current_stream())
    with ctx:
        replay()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            replay()
        e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) / reps


def graph_device_ms(graph, reps: int = 10) -> float:
    """The same for a safetile graph (bench-only access to its CUDA graph and stream)."""
    if graph._cuda_graph is None:
        return float("nan")
    return device_ms(graph._cuda_graph.replay, graph.stream.torch_stream, reps)


def run_engine(cfg, tensors, contexts, new, tuning, label="safetile") -> list[dict]:
    """GPU memory: the weights the engine holds (as loaded from a checkpoint) plus the peak it
    allocated above them (caches, buffers, the prefill's activations), less the stacked q/k/v
    projection, which is counted in the weights. Each context runs twice (the first warms the
    allocator and compiles); the second is reported."""
    out = []
    mem_reset()
    base = mem_allocated()
    t0 = time.perf_counter()
    eng = qwen3.from_weights(cfg, tensors, device=DEV["device"], dtype=str(DEV["dtype"]).split(".")[-1],
                             max_seq_len=max(contexts), tuning=tuning)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    eng.decode_graph(1)
    eng.decode_graph(max(1, tuning.decode_chunk))
    t_capture = time.perf_counter() - t0
    t0 = time.perf_counter()
    eng.generate(prompt_ids(min(256, max(contexts) // 2), cfg.vocab_size, 1), 4)  # compiles the prefill kernels
    t_warm = time.perf_counter() - t0
    for ctx in contexts:
        ids = prompt_ids(ctx - new, cfg.vocab_size, ctx)
        eng.generate(ids, 2)
        # the step graph alone on the device, from position ctx - new (3 replays of k steps each,
        # inside the decode window; the timed generation below starts afresh)
        k = max(1, tuning.decode_chunk)
        dev = graph_device_ms(eng.decode_graph(k), reps=2) / k if 3 * k <= new else float("nan")
        toks = eng.generate(ids, new)
        st = eng.stats
        out.append({"engine": label, "ctx": ctx, "new_tokens": new, "tokens": toks,
                    "decode_tokens_per_s": st.decode_tokens_per_s, "ttft_s": st.first_token_s,
                    "prefill_tokens_per_s": len(ids) / st.prefill_s, "launches_per_token": eng.launches_per_token(),
                    "device_ms_per_token": dev, "build_s": t_build, "capture_s": t_capture, "first_generate_s": t_warm})
    stacked = _nbytes(tensors, _projections(tensors, ("q_proj", "k_proj", "v_proj")))
    held = eng.weights.nbytes()
    for r in out:
        r["weights_bytes"] = held
        r["cache_bytes"] = cfg.kv_bytes_per_position(2) * eng.capacity
        r["gpu_memory_bytes"] = held + mem_peak() - base - stacked
    del eng
    mem_reset()
    return out


def diagnose(cfg, tensors, ctx: int, tuning) -> dict:
    """Where a decode step's time goes: host wait latency, the step graph's device time, and
    each kernel's device time in one eagerly launched step (torch.profiler / CUPTI)."""
    d = {}
    x = torch.zeros(1, device="cuda")
    ts = []
    for _ in range(50):
        t0 = time.perf_counter()
        x.add_(1)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    d["launch_and_sync_us"] = statistics.median(ts) * 1e6
    ts = []
    for _ in range(50):
        t0 = time.perf_counter()
        int(x[0])
        ts.append(time.perf_counter() - t0)
    d["read_one_value_us"] = statistics.median(ts) * 1e6
    eng = qwen3.from_weights(cfg, tensors, device="cuda", dtype="bfloat16", max_seq_len=ctx, tuning=tuning)
    g = eng.decode_graph(1)
    eng.generate(prompt_ids(ctx - 64, cfg.vocab_size, 3), 2)
    ts = []
    for _ in range(20):
        t0 = time.perf_counter()
        g.launch()
        ts.append(time.perf_counter() - t0)
    d["graph_launch_wall_ms"] = statistics.median(ts) * 1e3
    d["graph_device_ms"] = graph_device_ms(g, reps=5)
    chain = eng._decode_chain(1)
    from torch.profiler import ProfilerActivity, profile
    chain.op.sync()  # warm
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        eng._decode_chain(1).op.sync()
        torch.cuda.synchronize()
    kernels: dict[str, list[float]] = {}
    for e in prof.events():
        t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
        if str(getattr(e, "device_type", "")).endswith("CUDA") and t > 0:
            kernels.setdefault(e.name[:60], []).append(t)
    d["kernels"] = {k: {"count": len(v), "total_us": sum(v), "mean_us": sum(v) / len(v)}
                    for k, v in sorted(kernels.items(), key=lambda kv: -sum(kv[1]))}
    d["kernels_total_us"] = sum(x["total_us"] for x in d["kernels"].values())
    del eng, g, chain
    mem_reset()
    return d


def fp32_check(cfg, tensors, ctx: int) -> dict:
    """Next-token logits after a ``ctx``-token prompt from the engine (bf16 weights, float32
    activations) and from the PyTorch peer in bf16, each against the peer in float32 on the same
    (bf16-rounded) weights: relative L2 error and argmax agreement."""
    ids = prompt_ids(ctx, cfg.vocab_size, 5)
    ref_peer = TorchQwen3(cfg, tensors, "cuda", torch.float32, ctx)
    ref = ref_peer.prefill(ids).double()
    del ref_peer
    mem_reset()
    peer = TorchQwen3(cfg, tensors, "cuda", torch.bfloat16, ctx)
    bf = peer.prefill(ids).double()
    del peer
    mem_reset()
    eng = qwen3.from_weights(cfg, tensors, device="cuda", dtype="bfloat16", max_seq_len=ctx)
    ours = torch.from_numpy(eng.logits(ids)).double().cuda()
    del eng
    mem_reset()

    def rel(a):
        return float((a - ref).norm() / ref.norm())
    return {"ctx": ctx, "safetile_rel_err": rel(ours), "torch_bf16_rel_err": rel(bf),
            "safetile_argmax_ok": int(ours.argmax()) == int(ref.argmax()),
            "torch_bf16_argmax_ok": int(bf.argmax()) == int(ref.argmax())}


# ----------------------------------------------------------------------------- peers

def run_torch_peer(cfg, tensors, contexts, new) -> list[dict]:
    out = []
    mem_reset()
    base = mem_allocated()
    peer = TorchQwen3(cfg, tensors, DEV["device"], DEV["dtype"], max(contexts))
    modes = [("torch-eager", peer.step, min(new, 16))]
    if DEV["device"] != "cpu":
        modes.append(("torch-graph", peer.graphed_step(), new))
    for ctx in contexts:
        ids = prompt_ids(ctx - new, cfg.vocab_size, ctx)
        dev = float("nan")
        if len(modes) > 1:
            peer.prefill(ids)
            dev = device_ms(modes[1][1], reps=2)  # 3 replays from position ctx - new
        for mode, step, n in modes:
            sync()
            t0 = time.perf_counter()
            peer.prefill(ids)
            toks = [int(peer.tok)]
            ttft = time.perf_counter() - t0
            t1 = time.perf_counter()
            for _ in range(n - 1):
                step()
                toks.append(int(peer.tok))
            dt = time.perf_counter() - t1
            out.append({"engine": mode, "ctx": ctx, "new_tokens": n, "tokens": toks,
                        "decode_tokens_per_s": (n - 1) / dt, "ttft_s": ttft,
                        "device_ms_per_token": dev if mode == "torch-graph" else float("nan"),
                        "prefill_tokens_per_s": len(ids) / ttft})
    # the peer stacks q/k/v and gate/up (new memory, in the peak) and reads the rest in place
    copied = _nbytes(tensors, _projections(tensors, ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")))
    total = _nbytes(tensors, list(tensors))
    for r in out:
        r["gpu_memory_bytes"] = total - copied + mem_peak() - base
    del peer, modes
    mem_reset()
    return out


def run_transformers(cfg, tensors, contexts, new) -> list[dict]:
    import transformers
    hc = transformers.Qwen3Config(
        vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_hidden_layers, num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, rms_norm_eps=cfg.rms_norm_eps,
        rope_theta=cfg.rope_theta, max_position_embeddings=max(cfg.max_position_embeddings, max(contexts)),
        tie_word_embeddings=cfg.tie_word_embeddings)
    mem_reset()
    base = mem_allocated()
    with torch.device(DEV["device"]):
        torch.set_default_dtype(DEV["dtype"])
        try:
            model = transformers.Qwen3ForCausalLM(hc)
        finally:
            torch.set_default_dtype(torch.float32)
    model.load_state_dict(tensors, strict=False, assign=True)  # the same tensors, not copies
    if cfg.tie_word_embeddings:
        model.tie_weights()
    model.eval()
    mem_reset()
    base = mem_allocated() - _nbytes(tensors, list(tensors))
    out = []
    n = min(new, 16)
    for ctx in contexts:
        ids = torch.tensor([prompt_ids(ctx - new, cfg.vocab_size, ctx)], device=DEV["device"])
        kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
        with torch.no_grad():
            model.generate(ids[:, :64], max_new_tokens=2, **kw)  # warm-up
            sync()
            t0 = time.perf_counter()
            model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
            sync()
            ttft = time.perf_counter() - t0
            t0 = time.perf_counter()
            g = model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
            sync()
            total = time.perf_counter() - t0
        out.append({"engine": "transformers", "ctx": ctx, "new_tokens": n, "tokens": g[0, ids.shape[1]:].tolist(),
                    "decode_tokens_per_s": (n - 1) / (total - ttft) if total > ttft else float("nan"), "ttft_s": ttft,
                    "prefill_tokens_per_s": ids.shape[1] / ttft})
    for r in out:
        r["gpu_memory_bytes"] = mem_peak() - base
    del model
    mem_reset()
    return out


# ----------------------------------------------------------------------------- GEMV sweep

SWEEP = [  # (BN, BK, warps, stages, tma, unroll)
    (8, 512, 4, 1, False, True), (8, 512, 4, 3, False, False), (8, 256, 4, 1, False, True),
    (16, 256, 4, 1, False, True), (4, 512, 4, 1, False, True), (8, 512, 8, 1, False, True),
    (16, 512, 8, 1, False, True), (4, 1024, 4, 1, False, True), (8, 512, 4, 3, True, False),
]


def sweep_gemv(cfg, bw: float, configs=SWEEP) -> list[dict]:
    """Each decode GEMV kind under each configuration: a graph of 24 launches cycling over weight
    sets larger than L2, timed on the device (CUDA events around back-to-back replays)."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    sets, reps = 6, 24
    kinds = {"gate_up": (kv.rms_gate_up, i, h, 2), "down": (kv.gemv_residual, h, i, 1),
             "qkv": (kv.rms_gemv, cfg.q_size + 2 * cfg.kv_size, h, 1), "o": (kv.gemv_residual, h, cfg.q_size, 1)}
    dev, dt = DEV["device"], DEV["dtype"]
    out = []
    for kind, (fn, n, k, mats) in kinds.items():
        ws = [[ct.from_dlpack(torch.randn(n, k, device=dev).mul_(0.02).to(dt)).shared() for _ in range(mats)]
              for _ in range(sets)]
        gamma = ct.from_dlpack(torch.ones(k, device=dev, dtype=dt)).shared()
        for bn, bk, warps, stages, tma, unroll in configs:
            kern = ct.entry(num_warps=warps, num_stages=stages)(fn.__wrapped__).generics(BK=bk)
            pool = {"x": ct.from_dlpack(torch.randn(1, k, device=dev)), "y": ct.zeros((1, n), device=dev).sync(),
                    "r": ct.from_dlpack(torch.randn(1, n, device=dev))}
            try:
                c = Chain(pool)
                for j in range(reps):
                    w = ws[j % sets]
                    if kind == "gate_up":
                        c.launch(kern, Out("y", (1, bn)), In("x"), gamma, w[0], w[1], 0, 1e-6, tma, unroll)
                    elif kind == "qkv":
                        c.launch(kern, Out("y", (1, bn)), In("x"), gamma, w[0], 0, 1e-6, tma, unroll)
                    else:
                        c.launch(kern, Out("y", (1, bn)), In("r"), In("x"), w[0], 0, tma, unroll)
                g = c.op.graph(ct.Stream(dev))  # a CUDA stream: a chain from ct.empty() has no device of its own
                per = graph_device_ms(g, reps=3) / reps / 1e3
                nbytes = mats * n * k * 2
                out.append({"kind": kind, "n": n, "k": k, "bn": bn, "bk": bk, "warps": warps, "stages": stages,
                            "tma": tma, "unroll": unroll, "us": per * 1e6, "bytes": nbytes, "gbps": nbytes / per / 1e9,
                            "fraction_of_copy": nbytes / per / bw})
            except Exception as e:  # noqa: BLE001 - a failing configuration is a result too
                out.append({"kind": kind, "bn": bn, "bk": bk, "warps": warps, "stages": stages, "tma": tma,
                            "unroll": unroll, "error": f"{type(e).__name__}: {e}"[:500]})
            print(json.dumps(out[-1]), flush=True)
        del ws
        mem_reset()
    return out


# ----------------------------------------------------------------------------- driver

def tuning_from(args) -> qwen3.Tuning:
    t = qwen3.tuning.GPU
    if args.tuning:
        t = t.with_(**json.loads(args.tuning))
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="0.6B,4B,8B")
    ap.add_argument("--contexts", default="1024,8192")
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--peers", default="torch,transformers")
    ap.add_argument("--tuning", default="", help="JSON of Tuning fields to override")
    ap.add_argument("--variants", default="", help="JSON list of extra tunings to run on the first shape")
    ap.add_argument("--sweep", default="", help="shape whose decode GEMVs to sweep (last)")
    ap.add_argument("--diagnose", action="store_true", help="per-kernel device times etc. on the first shape")
    ap.add_argument("--fp32-check", default="", help="shapes whose logits to check against a float32 peer")
    ap.add_argument("--out", default="bench/results/gpu")
    ap.add_argument("--smoke", action="store_true", help="a tiny float32 model on the CPU (checks the script)")
    args = ap.parse_args()
    if args.smoke:
        DEV.update(device="cpu", dtype=torch.float32)
        qwen3.config.SHAPES["tiny"] = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                           vocab_size=256, tie_word_embeddings=False)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "qwen3_bench.json")
    contexts = [int(c) for c in args.contexts.split(",")]
    bw = copy_bandwidth(64 << 20 if args.smoke else 2 << 30)
    res = {"device": torch.cuda.get_device_name() if DEV["device"] != "cpu" else "cpu", "torch": torch.__version__, "python": platform.python_version(),
           "copy_bandwidth_Bps": bw, "contexts": contexts, "new_tokens": args.new, "tuning": tuning_from(args).__dict__,
           "runs": [], "sweep": [], "errors": []}
    try:
        import transformers
        import triton
        res["triton"], res["transformers"] = triton.__version__, transformers.__version__
    except ImportError:
        pass
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s", flush=True)

    def save():
        with open(path, "w") as f:
            json.dump(res, f, indent=1)

    def attempt(what, fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - keep measuring the rest
            res["errors"].append({"what": what, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]})
            print(f"ERROR in {what}: {type(e).__name__}: {e}", flush=True)
            mem_reset()
            return []

    variants = json.loads(args.variants) if args.variants else []
    for si, shape in enumerate(args.shapes.split(",")):
        cfg = qwen3.shape_config(shape)
        tensors = random_weights(cfg, seed=si)
        runs = []
        runs += attempt(f"{shape} safetile", lambda cfg=cfg, tensors=tensors: run_engine(
            cfg, tensors, contexts, args.new, tuning_from(args)))
        save()
        if si == 0 and DEV["device"] != "cpu" and args.diagnose:
            res["diagnosis"] = attempt("diagnosis", lambda cfg=cfg, tensors=tensors: diagnose(
                cfg, tensors, contexts[0], tuning_from(args)))
            save()
        if args.fp32_check and DEV["device"] != "cpu" and shape in args.fp32_check.split(","):
            res.setdefault("fp32_check", {})[shape] = attempt(
                f"{shape} fp32 check", lambda cfg=cfg, tensors=tensors: fp32_check(cfg, tensors, contexts[0]))
            save()
        if si == 0:
            for v in variants:
                t = tuning_from(args).with_(**v)
                runs += attempt(f"{shape} variant {v}", lambda t=t, v=v, cfg=cfg, tensors=tensors: run_engine(
                    cfg, tensors, contexts, args.new, t, label="safetile " + json.dumps(v, separators=(",", ":"))))
        if "torch" in args.peers:
            runs += attempt(f"{shape} torch", lambda cfg=cfg, tensors=tensors: run_torch_peer(
                cfg, tensors, contexts, args.new))
        if "transformers" in args.peers:
            runs += attempt(f"{shape} transformers", lambda cfg=cfg, tensors=tensors: run_transformers(
                cfg, tensors, contexts, args.new))
        peer = "torch-graph" if any(r["engine"] == "torch-graph" for r in runs) else "torch-eager"
        ref = {r["ctx"]: r["tokens"] for r in runs if r["engine"] == peer}
        graph_tps = {r["ctx"]: r["decode_tokens_per_s"] for r in runs if r["engine"] == peer}
        graph_dev = {r["ctx"]: r.get("device_ms_per_token", float("nan")) for r in runs if r["engine"] == peer}
        for r in runs:
            r["shape"] = shape
            r.update(roofline(cfg, r["ctx"], r["new_tokens"], bw))
            r["roofline_fraction"] = r["decode_tokens_per_s"] / r["roofline_tokens_per_s"]
            dev = r.get("device_ms_per_token", float("nan"))
            r["device_roofline_fraction"] = 1e3 / dev / r["roofline_tokens_per_s"]
            if r["ctx"] in ref:
                r["tokens_agreeing_with_torch"] = agree(r["tokens"], ref[r["ctx"]])
                r["speedup_vs_torch_graph"] = r["decode_tokens_per_s"] / graph_tps[r["ctx"]]
                r["device_speedup_vs_torch_graph"] = graph_dev[r["ctx"]] / dev
        res["runs"] += runs
        del tensors
        mem_reset()
        save()
    if args.sweep:
        res["sweep"] = attempt("sweep", lambda: sweep_gemv(qwen3.shape_config(args.sweep), bw))
        save()
    report(res)


def report(res: dict) -> None:
    print(f"\ncopy bandwidth {res['copy_bandwidth_Bps'] / 1e12:.2f} TB/s on {res['device']}")
    print(f"{'shape':5} {'ctx':>5} {'engine':30} {'tok/s':>7} {'roof':>6} {'frac':>5} {'xgrph':>5} {'dev ms':>6} "
          f"{'dfrac':>5} {'dxgr':>5} {'TTFT ms':>8} {'pf tok/s':>8} {'GiB':>5} {'agree':>5}")
    for r in res["runs"]:
        print(f"{r['shape']:5} {r['ctx']:5} {r['engine'][:30]:30} {r['decode_tokens_per_s']:7.1f} "
              f"{r['roofline_tokens_per_s']:6.0f} {r['roofline_fraction']:5.2f} {r.get('speedup_vs_torch_graph', 0):5.2f} "
              f"{r.get('device_ms_per_token', float('nan')):6.3f} {r.get('device_roofline_fraction', float('nan')):5.2f} "
              f"{r.get('device_speedup_vs_torch_graph', float('nan')):5.2f} "
              f"{r['ttft_s'] * 1e3:8.1f} {r['prefill_tokens_per_s']:8.0f} {r.get('gpu_memory_bytes', 0) / 2**30:5.1f} "
              f"{r.get('tokens_agreeing_with_torch', -1):5}")
    d = res.get("diagnosis") or {}
    if d:
        print(f"diagnosis: launch+sync {d['launch_and_sync_us']:.0f} us, read one value {d['read_one_value_us']:.0f} us, "
              f"graph launch (wall) {d['graph_launch_wall_ms']:.3f} ms, graph (device) {d['graph_device_ms']:.3f} ms, "
              f"kernels of one eager step {d['kernels_total_us']:.0f} us:")
        for name, k in list(d["kernels"].items())[:12]:
            print(f"  {name[:50]:50} x{k['count']:4} {k['total_us']:8.1f} us  ({k['mean_us']:.2f} us each)")
    for shape, c in (res.get("fp32_check") or {}).items():
        if c:
            print(f"fp32 check {shape}: {c}")
    best = {}
    for x in res.get("sweep") or []:
        if "us" in x and (x["kind"] not in best or x["us"] < best[x["kind"]]["us"]):
            best[x["kind"]] = x
    for kind, x in best.items():
        print(f"sweep best {kind}: bn={x['bn']} bk={x['bk']} warps={x['warps']} stages={x['stages']} tma={x['tma']} "
              f"unroll={x['unroll']}: {x['us']:.1f} us, {x['fraction_of_copy']:.2f} of copy")
    for e in res["errors"]:
        print("ERROR", e["what"], e["error"][:300])


if __name__ == "__main__":
    main()
