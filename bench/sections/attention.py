"""Flash attention, bf16, (batch, heads, seq, d) inputs, against torch's
``F.scaled_dot_product_attention``: its default choice (named: on Hopper torch picks cuDNN's
fused attention) is the baseline; the flash and cuDNN backends are timed beside it.

Forward: per head dim and mask, the ``--attn-configs-*`` tile configs of each kernel kind
(3-D tiles with pointer loads, 2-D tiles with tensor descriptors, the 2-D kernel persistent)
are tried at the probe length; every length then runs the fastest of each kind and keeps the
faster. Backward
(dQ, dK, dV from the forward's log-sum-exp rows): the delta, dK/dV and dQ kernels, configs
picked the same way, or the fused dK/dV kernel that adds dQ up with atomics where it is faster at
the probe length, against SDPA's backward (``torch.autograd.grad`` of its output).

Each row's ``ratio`` is confirmed (benchlib ``confirmed``): the chosen kernels and SDPA's default
timed again in ``--confirm-rounds`` alternating rounds (``select_ratio`` keeps the first
readings'; the named backends' columns compare single readings of both, taken one after another)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import safetile as ct
from benchlib import check, confirmed, geomean, launch, sdpa_backend_name, time_ms
from kernels.attention import (attention, attention_2d, attention_2d_persistent, attention_bwd_delta,
                               attention_bwd_dkdv, attention_bwd_dq, attention_bwd_dq_cast)

# occ (optional): the occupancy hint (blocks per SM); ws (optional): the warp_specialize hint, 1: True
# (Triton 3.6 applies it on Hopper at 4 warps: a producer warp group and two consumer ones), 2:
# "pingpong" (safetile's Gluon lowering with FA3's schedule, BM 128; backends/triton/pingpong.py)
NAMES = ("BM", "BN", "warps", "stages", "occ", "ws")
LOG2E = 1.4426950408889634
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def _configs(text, k2d=None):
    out = [dict(zip(NAMES, map(int, c.split("x")))) for c in text.split(",") if c]
    return out if k2d is None else [{**c, "k2d": k2d} for c in out]


def _inputs(args, d, seq):
    b = max(1, args.attn_tokens // seq)
    q, k, v = (torch.randn((b, args.attn_heads, seq, d), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    return b, q, k, v


def _hints(cfg):
    hints = {"num_warps": cfg["warps"], "num_stages": cfg["stages"]}
    if cfg.get("occ"):
        hints["occupancy"] = cfg["occ"]
    if cfg.get("ws"):
        hints["warp_specialize"] = "pingpong" if cfg["ws"] == 2 else True
    return hints


def _fwd_launch(cfg, d, seq, causal, q, k, v, o, lse=None):
    bh = q.shape[0] * q.shape[1]
    scale = LOG2E / math.sqrt(d)
    grid = (ct.cdiv(seq, cfg["BM"]), bh)
    hints = _hints(cfg)
    if cfg.get("k2d") == 2:  # persistent: one block per SM over the (query block, batch*head) tiles
        flat = [t.view(-1, d) for t in (q, k, v, o)]
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        return attention_2d_persistent.replace_hints(**hints), (min(sms * (cfg.get("occ") or 1), grid[0] * bh),), (
            *flat, seq, scale, cfg["BM"], cfg["BN"], d, causal)
    if cfg.get("k2d"):
        flat = [t.view(-1, d) for t in (q, k, v, o)]
        keep = lse is not None
        lse_arg = lse if keep else torch.empty(1, device="cuda")
        # a warp-specialised causal kernel runs one masked loop (Triton partitions one loop, not two)
        return attention_2d.replace_hints(**hints), grid, (*flat, lse_arg, seq, scale, cfg["BM"], cfg["BN"], d,
                                                           causal, keep, not cfg.get("ws"), cfg.get("ws") == 2)
    return attention.replace_hints(**hints), grid, (*[t.view(bh, seq, d) for t in (q, k, v, o)], scale,
                                                    cfg["BM"], cfg["BN"], d, causal)


def _fits(cfg, seq):
    return not cfg.get("k2d") or (seq % cfg["BM"] == 0 and seq % cfg["BN"] == 0)


def _run_fwd(cfg, d, seq, causal, tensors, reps, res):
    b, q, k, v = tensors
    o = torch.full_like(q, float("nan"))
    kern, grid, kargs = _fwd_launch(cfg, d, seq, causal, q, k, v, o)
    launch(grid, kern, kargs)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    ok = check(f"attention fwd d={d} s={seq} causal={causal} {cfg}", o, ref, 2e-2, 2e-2, res)
    return ok, time_ms([lambda: launch(grid, kern, kargs)], reps), lambda: launch(grid, kern, kargs)


def _probe(args, d, kinds, res):
    """The fastest correct config of each kernel kind at the probe length, per mask."""
    chosen = {}
    tensors = _inputs(args, d, args.attn_probe_seq)
    for causal in (False, True):
        sweep = []
        for cfg in kinds:
            if not _fits(cfg, args.attn_probe_seq):
                continue
            try:
                ok, t, _ = _run_fwd(cfg, d, args.attn_probe_seq, causal, tensors, args.reps, res)
            except Exception as e:  # noqa: BLE001 - e.g. out of shared memory: try the next config
                print(f"  attention d={d} {cfg}: failed ({type(e).__name__}: {str(e)[:200]})")
                continue
            sweep.append({**cfg, "ms": t, "ok": ok})
            print(f"  attention probe d={d} seq={args.attn_probe_seq} causal={causal} {cfg}: {t:.3f} ms", flush=True)
        good = [e for e in sweep if e["ok"]] or sweep
        chosen[causal] = [min(kind, key=lambda e: e["ms"]) for kind in
                          ([e for e in good if e["k2d"] == k2d] for k2d in args.attn_kernels) if kind]
        res.setdefault("attention_sweep", {})[f"{d}{' causal' if causal else ''}"] = sweep
    return chosen


def _torch_times(q, k, v, causal, reps):
    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out = {"default": time_ms([sdpa], reps)}
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel(backend):
                out[name] = time_ms([sdpa], reps)
        except RuntimeError:  # backend not available for these inputs
            pass
    return out, sdpa_backend_name(sdpa)


def bench_attention(args, res):
    rows = []
    for d in args.attn_dims:
        kinds = [c for k2d in args.attn_kernels for c in
                 _configs(args.attn_configs_64 if d <= 64 else args.attn_configs_128, k2d)]
        chosen = _probe(args, d, kinds, res)
        bwd_cfg = _probe_bwd(args, d, res) if args.attn_bwd else None
        for seq in args.attn_seqs:
            for causal in (False, True):
                tensors = _inputs(args, d, seq)
                b, q, k, v = tensors
                tried = [(not ok, t, ok, cfg, call) for cfg in chosen[causal] if _fits(cfg, seq)
                         for ok, t, call in [_run_fwd(cfg, d, seq, causal, tensors, args.reps, res)]]
                _, t_sel, ok, cfg, call = min(tried, key=lambda e: e[:2])
                flop = 4.0 * b * args.attn_heads * seq * seq * d * (0.5 if causal else 1.0)
                tt, backend = _torch_times(q, k, v, causal, args.reps)
                t_first = tt["default"]
                t_st, t_ref = confirmed(call, lambda q=q, k=k, v=v, causal=causal: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal), args.confirm_rounds, args.reps)
                tt["default"] = t_ref  # the named backends' rows keep their single readings
                row = {"pass": "fwd", "batch": b, "heads": args.attn_heads, "seq": seq, "d": d, "causal": causal,
                       "config": cfg, "ok": ok, "safetile_ms": t_st, "safetile_TFLOPs": flop / t_st / 1e9,
                       "torch_ms": tt["default"], "torch_backend": backend, "torch_TFLOPs": flop / tt["default"] / 1e9,
                       "ratio": tt["default"] / t_st, "select_ratio": t_first / t_sel,
                       **{f"torch_{n}_ms": t for n, t in tt.items() if n != "default"},
                       **{f"ratio_vs_{n}": t / t_sel for n, t in tt.items() if n != "default"}}
                rows.append(row)
                print(f"  attention fwd d={d:3d} seq={seq:5d} causal={causal!s:5s}: safetile {row['safetile_TFLOPs']:6.1f} "
                      f"TFLOP/s  SDPA default ({backend}) {row['torch_TFLOPs']:6.1f}  ratio {row['ratio']:.2f}  "
                      + "  ".join(f"vs {n} {row[f'ratio_vs_{n}']:.2f}" for n in BACKENDS if f"ratio_vs_{n}" in row),
                      flush=True)
                if bwd_cfg is not None and seq % 128 == 0:
                    rows.append(_bwd_row(args, d, seq, causal, tensors, bwd_cfg, res))
                del tensors, q, k, v
    res["attention"] = rows
    for p in ("fwd", "bwd"):
        rs = [r["ratio"] for r in rows if r["pass"] == p]
        long = [r["ratio"] for r in rows if r["pass"] == p and r["seq"] >= 4096]
        if rs:
            res[f"attention_{p}_geomean"] = geomean(rs)
            res[f"attention_{p}_geomean_seq4096plus"] = geomean(long)


# ------------------------------------------------------------------------------------ backward

def _bwd_launches(cfg, d, seq, causal, q, k, v, o, lse, do, dq, dk, dv, delta):
    """The steps of one backward pass: delta, then dK/dV and dQ (two kernels), or with
    ``cfg["fused"]`` dK/dV with dQ added up by atomics into a zeroed float32 buffer, then cast.
    dK/dV masks only the blocks at the diagonal (SPLIT: a branch in the loop) except under
    Triton's own warp specialisation (ws 1), which takes no branch there."""
    bh = q.shape[0] * q.shape[1]
    sm = 1.0 / math.sqrt(d)
    flat = [t.view(-1, d) for t in (q, k, v, do)]
    steps = [lambda: launch((bh * seq // 128,), attention_bwd_delta, (o.view(-1, d), do.view(-1, d), delta, 128, d))]
    if "fused" in cfg:
        c = cfg["fused"]
        acc = torch.empty(bh * seq, d, device=q.device, dtype=torch.float32)
        kf = attention_bwd_dkdv.replace_hints(**_hints(c))
        fused = ((seq // c["BN"], bh), kf, (*flat, lse, delta, dk.view(-1, d), dv.view(-1, d), acc, seq, sm * LOG2E,
                                            sm, c["BM"], c["BN"], d, causal, not c.get("ws"), True))
        cast = ((bh * seq // 128,), attention_bwd_dq_cast, (acc, dq.view(-1, d), sm, 128, d))
        return steps + [acc.zero_, lambda: launch(*fused), lambda: launch(*cast)]
    c1, c2 = cfg["dkdv"], cfg["dq"]
    kd = attention_bwd_dkdv.replace_hints(**_hints(c1))
    kq = attention_bwd_dq.replace_hints(**_hints(c2))
    dkdv = ((seq // c1["BN"], bh), kd, (*flat, lse, delta, dk.view(-1, d), dv.view(-1, d), dq.view(-1, d), seq,
                                        sm * LOG2E, sm, c1["BM"], c1["BN"], d, causal, c1.get("ws") != 1, False))
    dq_ = ((seq // c2["BM"], bh), kq, (*flat, lse, delta, dq.view(-1, d), seq, sm * LOG2E, sm, c2["BM"], c2["BN"], d,
                                       causal))
    return steps + [lambda: launch(*dkdv), lambda: launch(*dq_)]


def _bwd_setup(args, d, seq, causal, tensors):
    b, q, k, v = tensors
    o = torch.empty_like(q)
    lse = torch.empty(q.numel() // d, device="cuda", dtype=torch.float32)
    cfg = {"BM": 128, "BN": 64 if d > 64 else 128, "warps": 8 if d > 64 else 4, "stages": 3, "k2d": 1}
    kern, grid, kargs = _fwd_launch(cfg, d, seq, causal, q, k, v, o, lse)
    launch(grid, kern, kargs)
    do = torch.randn_like(q)
    delta = torch.empty_like(lse)
    return o, lse, do, delta


def _run_bwd(args, d, seq, causal, tensors, cfg, res, check_it=True):
    b, q, k, v = tensors
    o, lse, do, delta = _bwd_setup(args, d, seq, causal, tensors)
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    steps = _bwd_launches(cfg, d, seq, causal, q, k, v, o, lse, do, dq, dk, dv, delta)

    def run():
        for step in steps:
            step()
    run()
    ok = True
    if check_it:
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
        refs = torch.autograd.grad(out, (qr, kr, vr), do)
        for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
            tol = 3e-2 * ref.abs().max().item()
            ok &= check(f"attention bwd {name} d={d} s={seq} causal={causal} {cfg}", got, ref, 3e-2, tol, res)
    return ok, time_ms([run], args.reps), run


def _probe_bwd(args, d, res):
    """The fastest dK/dV and dQ configs at the probe length (non-causal)."""
    seq = args.attn_probe_seq
    tensors = _inputs(args, d, seq)
    dkdv = _configs(args.attn_bwd_dkdv_64 if d <= 64 else args.attn_bwd_dkdv_128)
    dq = _configs(args.attn_bwd_dq_64 if d <= 64 else args.attn_bwd_dq_128)
    best = {"dkdv": dkdv[0], "dq": dq[0]}
    t_best = float("inf")
    for part, cands in (("dkdv", dkdv), ("dq", dq)):
        timed = []
        for c in cands:
            cfg = {**best, part: c}
            try:
                ok, t, _ = _run_bwd(args, d, seq, False, tensors, cfg, res, check_it=False)
            except Exception as e:  # noqa: BLE001 - a config that does not fit
                print(f"  attention bwd d={d} {part} {c}: failed ({type(e).__name__}: {str(e)[:160]})")
                continue
            timed.append((t, c))
            print(f"  attention bwd probe d={d} {part} {c}: {t:.3f} ms", flush=True)
        if timed:
            best[part] = min(timed, key=lambda e: e[0])[1]
            t_best = min(e[0] for e in timed)
    for c in _configs(args.attn_bwd_fused_64 if d <= 64 else args.attn_bwd_fused_128):
        try:  # dK/dV with dQ by atomics: one kernel instead of two, when it is faster
            ok, t, _ = _run_bwd(args, d, seq, False, tensors, {"fused": c}, res, check_it=False)
        except Exception as e:  # noqa: BLE001 - a config that does not fit
            print(f"  attention bwd d={d} fused {c}: failed ({type(e).__name__}: {str(e)[:160]})")
            continue
        print(f"  attention bwd probe d={d} fused {c}: {t:.3f} ms", flush=True)
        if t < t_best:
            best, t_best = {"fused": c}, t
    res.setdefault("attention_bwd_config", {})[str(d)] = best
    return best


def _bwd_row(args, d, seq, causal, tensors, cfg, res):
    b, q, k, v = tensors
    ok, t_sel, run = _run_bwd(args, d, seq, causal, tensors, cfg, res)
    do = torch.randn_like(q)
    qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
    times = {}
    for name, backend in [("default", None), *BACKENDS.items()]:
        try:
            if backend is None:
                out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
            else:
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
            times[name] = time_ms([lambda out=out: torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)],
                                  args.reps)
        except RuntimeError:
            continue
    flop = 2.5 * 4.0 * b * args.attn_heads * seq * seq * d * (0.5 if causal else 1.0)
    out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
    backend = sdpa_backend_name(lambda: torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True))
    t_st, t_ref = confirmed(run, lambda: torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True),
                            args.confirm_rounds, args.reps)
    t_first, times["default"] = times["default"], t_ref  # the named backends keep their single readings
    row = {"pass": "bwd", "batch": b, "heads": args.attn_heads, "seq": seq, "d": d, "causal": causal, "config": cfg,
           "ok": ok, "safetile_ms": t_st, "safetile_TFLOPs": flop / t_st / 1e9, "torch_ms": times["default"],
           "torch_backend": backend,
           "torch_TFLOPs": flop / times["default"] / 1e9, "ratio": times["default"] / t_st,
           "select_ratio": t_first / t_sel,
           **{f"torch_{n}_ms": t for n, t in times.items() if n != "default"},
           **{f"ratio_vs_{n}": t / t_sel for n, t in times.items() if n != "default"}}
    print(f"  attention bwd d={d:3d} seq={seq:5d} causal={causal!s:5s}: safetile {row['safetile_TFLOPs']:6.1f} TFLOP/s "
          f" SDPA default ({backend}) {row['torch_TFLOPs']:6.1f}  ratio {row['ratio']:.2f}  "
          + "  ".join(f"vs {n} {row[f'ratio_vs_{n}']:.2f}" for n in BACKENDS if f"ratio_vs_{n}" in row), flush=True)
    return row
