"""The Qwen3 engine: buffers, the prefill pass, the decode step captured as a graph, generation.

One model serves one generation at a time (batch 1). A generation is a prefill over the
prompt (GEMMs and causal flash attention, run as one chain of launches), then one replay
of the captured decode graph per token: the graph embeds the current token, runs every
layer (fused norm + projections, cache append, split-K attention and merge, SwiGLU),
the head and the argmax, and advances the position, all on device buffers whose
addresses never change. Greedy decoding reads one int per token back; sampling narrows
the logits on the device and draws on the host (``sampling.py``).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import safetile as ct

from . import kernels_attention as ka
from . import kernels_gemm as kg
from . import kernels_gemv as kv
from .chain import Chain, In, Out
from .checkpoint import Weights
from .config import CheckpointError, Qwen3Config
from .sampling import Sampling, choose
from .tuning import Tuning, clip, default, pow2_at_least


@dataclass
class Stats:
    """Timings of the last generation (seconds; host clock around synchronised work)."""

    prompt_tokens: int = 0
    new_tokens: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0
    first_token_s: float = 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        n = self.new_tokens - 1  # the first token comes from the prefill
        return n / self.decode_s if n > 0 and self.decode_s > 0 else 0.0


class Qwen3:
    """A loaded Qwen3 model on one device (use ``safetile.models.qwen3.load``)."""

    def __init__(self, config: Qwen3Config, weights: Weights, device: str, max_seq_len: int | None = None,
                 tuning: Tuning | None = None):
        cfg = self.config = config
        self.weights = weights
        self.device = device
        if cfg.group & (cfg.group - 1):
            raise CheckpointError(f"{cfg.num_attention_heads} query heads per {cfg.num_key_value_heads} key/value "
                                  "heads: the group size must be a power of two")
        n = max_seq_len or min(cfg.max_position_embeddings, 4096)
        self.capacity = pow2_at_least(max(n, 2))
        self.dtype = weights.dtype
        self.tuning = tuning or default(device, self.dtype.itemsize)
        self.stats = Stats()
        self._lock = threading.Lock()
        self._kernels: dict[Any, Any] = {}
        self._graphs: dict[int, Any] = {}
        # All of the engine's work goes to one stream of its device, named explicitly: a chain that
        # starts from a device-less op (ct.empty()) would otherwise run on the default device's
        # stream pool (the CPU's unless SAFETILE_DEVICE says otherwise), and its graphs would be
        # replayed launch by launch from Python instead of as CUDA graphs.
        self._stream = ct.Stream(device)
        d2 = cfg.head_dim // 2
        inv = (1.0 / (np.float32(cfg.rope_theta) ** (np.arange(0, cfg.head_dim, 2, dtype=np.float32)
                                                       / np.float32(cfg.head_dim)))).astype(np.float32)
        ang = np.arange(self.capacity, dtype=np.float32)[:, None] * inv[None, :d2]
        self._cos = ct.from_numpy(np.cos(ang), device=device).sync_on(self._stream).shared()
        self._sin = ct.from_numpy(np.sin(ang), device=device).sync_on(self._stream).shared()
        t = self.tuning
        self._splits = max(1, min(t.attn_splits, self.capacity // clip(t.attn_bn, self.capacity)))
        nh, g = cfg.num_key_value_heads, cfg.group
        zeros = self._zeros
        pool = {}
        for layer in range(cfg.num_hidden_layers):
            for kind in "kv":
                pool[f"{kind}{layer}"] = zeros((nh, self.capacity, cfg.head_dim), self.dtype)
        nb_head = -(-cfg.vocab_size // clip(t.head_bn, cfg.vocab_size))
        nb_topk = -(-cfg.vocab_size // self._topk_bv())
        pool.update(
            x=zeros((1, cfg.hidden_size)), x2=zeros((1, cfg.hidden_size)),
            qkv=zeros((1, cfg.q_size + 2 * cfg.kv_size)), attn=zeros((1, cfg.q_size)),
            act=zeros((1, cfg.intermediate_size)), logits=zeros((1, cfg.vocab_size)),
            opart=zeros((nh, self._splits, g, cfg.head_dim)), lse=zeros((nh, self._splits, g)),
            pmax=zeros((1, nb_head)), pidx=zeros((1, nb_head), ct.int32),
            tok=zeros((1,), ct.int32), pos=zeros((1,), ct.int32), hist=zeros((1, self.capacity), ct.int32),
            cand_v=zeros((nb_topk, self._topk_k())), cand_i=zeros((nb_topk, self._topk_k()), ct.int32))
        pool["attn3"] = pool["attn"].reshape(nh, g, cfg.head_dim)  # the same memory, per key/value head
        self._pool: dict[str, ct.Tensor] = pool

    # ------------------------------------------------------------------ helpers

    def _zeros(self, shape, dtype=ct.float32) -> ct.Tensor:
        return ct.zeros(shape, dtype, device=self.device).sync_on(self._stream)

    def _topk_bv(self) -> int:
        return clip(self.tuning.topk_bv, self.config.vocab_size)

    def _topk_k(self) -> int:
        return min(self.tuning.topk_k, self._topk_bv())

    def _k(self, kernel: ct.EntryKernel, warps: int | None = None, stages: int | None = None, **generics):
        """``kernel`` with launch hints (GPU only) and generics, made once per engine."""
        hints = {}
        if self.device != "cpu":
            hints = {k: v for k, v in (("num_warps", warps), ("num_stages", stages)) if v}
        key = (kernel, tuple(sorted(hints.items())))
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = ct.entry(**hints)(kernel.__wrapped__) if hints else kernel
        return k.generics(**generics) if generics else k

    def _gemv(self, kernel, n: int, k: int):
        """The kernel and its outputs per block: ``gemv_bn``, halved while fewer than
        ``gemv_min_blocks`` blocks would share the projection (small N needs more blocks in flight)."""
        t = self.tuning
        bn = clip(t.gemv_bn, n)
        while bn > 1 and -(-n // bn) < t.gemv_min_blocks:
            bn //= 2
        return self._k(kernel, t.gemv_warps, t.gemv_stages, BK=clip(t.gemv_bk, k)), bn

    # ------------------------------------------------------------------ the two passes

    def _layers_decode(self, c: Chain) -> None:
        cfg, t, w = self.config, self.tuning, self.weights
        h, eps, tma, unroll = cfg.hidden_size, cfg.rms_norm_eps, t.gemv_tma, t.gemv_unroll
        nq, nkv, g, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.group, cfg.head_dim
        cos, sin = self._cos, self._sin
        abn = clip(t.attn_bn, self.capacity)
        qkv_k, qkv_bn = self._gemv(kv.rms_gemv, cfg.q_size + 2 * cfg.kv_size, h)
        o_k, o_bn = self._gemv(kv.gemv_residual, h, cfg.q_size)
        gu_k, gu_bn = self._gemv(kv.rms_gate_up, cfg.intermediate_size, h)
        dn_k, dn_bn = self._gemv(kv.gemv_residual, h, cfg.intermediate_size)
        attn = self._k(ka.attn_decode, t.attn_warps, None, BN=abn, QM=max(g, t.attn_qm))
        sp = pow2_at_least(self._splits)
        dc = max(1, min(d, t.merge_elems // (sp * g)))
        merge = self._k(ka.attn_merge, None, None, BN=abn, SP=sp)
        for n, lw in enumerate(w.layers):
            kc, vc = f"k{n}", f"v{n}"
            c.launch(qkv_k, Out("qkv", (1, qkv_bn)), In("x"), lw.input_norm, lw.wqkv, 0, eps, tma, unroll)
            c.launch(ka.rope_kv_append, Out(kc, (1,), True), Out(vc, (1,), True), In("qkv"), lw.k_norm, cos, sin,
                     In("pos"), 0, nq, nkv, eps)
            c.launch(attn, Out("opart", (1, 1), True), Out("lse", (1, 1, g)), In("qkv"), In(kc), In(vc), lw.q_norm,
                     cos, sin, In("pos"), 0, d ** -0.5, eps)
            c.launch(merge, Out("attn3", (1, g, dc)), In("opart"), In("lse"), In("pos"))
            c.launch(o_k, Out("x2", (1, o_bn)), In("x"), In("attn"), lw.wo, 0, tma, unroll)
            c.launch(gu_k, Out("act", (1, gu_bn)), In("x2"), lw.post_norm, lw.w_gate, lw.w_up, 0, eps, tma, unroll)
            c.launch(dn_k, Out("x", (1, dn_bn)), In("x2"), In("act"), lw.w_down, 0, tma, unroll)

    def _head(self, c: Chain, x: str, row: int, advance: int) -> None:
        cfg, t = self.config, self.tuning
        bn = clip(t.head_bn, cfg.vocab_size)
        head = self._k(kv.rms_gemv_argmax, t.gemv_warps, t.gemv_stages, BK=clip(t.gemv_bk, cfg.hidden_size))
        c.launch(head, Out("logits", (1, bn)), Out("pmax", (1, 1)), Out("pidx", (1, 1)), In(x), self.weights.norm,
                 self.weights.head, row, cfg.rms_norm_eps, t.gemv_tma, t.gemv_unroll)
        nb = -(-cfg.vocab_size // bn)
        c.launch(self._k(kv.argmax_final, None, None, BC=clip(t.argmax_bc, nb)), Out("tok", (1,)), Out("pos", (1,)),
                 Out("hist", (1, self.capacity)), In("pmax"), In("pidx"), advance)

    def _decode_chain(self, steps: int = 1) -> Chain:
        cfg, t = self.config, self.tuning
        c = Chain(self._pool)
        bh = clip(t.embed_bh, cfg.hidden_size)
        for _ in range(steps):
            c.launch(self._k(kv.embed, None, None), Out("x", (1, bh)), self.weights.embed, In("tok"))
            self._layers_decode(c)
            self._head(c, "x", 0, 1)
        return c

    def _prefill_chain(self, n: int) -> Chain:
        cfg, t, w = self.config, self.tuning, self.weights
        h, eps, d = cfg.hidden_size, cfg.rms_norm_eps, cfg.head_dim
        nq, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
        c = Chain(self._pool)
        bm = clip(t.gemm_bm, n)

        def gemm(kernel, cols: int, k: int):
            return (self._k(kernel, t.gemm_warps, t.gemm_stages, BK=clip(t.gemm_bk, k)), (bm, clip(t.gemm_bn, cols)))
        qkv_k, qkv_t = gemm(kg.rms_gemm, cfg.q_size + 2 * cfg.kv_size, h)
        o_k, o_t = gemm(kg.gemm_residual, h, cfg.q_size)
        gu_k, gu_t = gemm(kg.rms_gate_up_gemm, cfg.intermediate_size, h)
        dn_k, dn_t = gemm(kg.gemm_residual, h, cfg.intermediate_size)
        fill = self._k(ka.rope_kv_fill, None, None, BT=clip(t.fill_bt, n))
        fbm = clip(t.fa_bm, n)
        fa = self._k(ka.attn_prefill, t.fa_warps, t.fa_stages, BN=clip(t.fa_bn, fbm))
        c.launch(self._k(kv.embed, None, None), Out("p_x", (1, clip(t.embed_bh, h))), w.embed, In("ids"))
        for i, lw in enumerate(w.layers):
            kc, vc = f"k{i}", f"v{i}"
            c.launch(qkv_k, Out("p_qkv", qkv_t), In("p_x"), lw.input_norm, lw.wqkv, eps)
            c.launch(fill, Out(kc, (1,), True), Out(vc, (1,), True), In("p_qkv"), lw.k_norm, self._cos, self._sin,
                     nq, nkv, eps)
            c.launch(fa, Out("p_attn", (fbm, d)), In("p_qkv"), In(kc), In(vc), lw.q_norm, self._cos, self._sin,
                     cfg.group, d ** -0.5, eps)
            c.launch(o_k, Out("p_x2", o_t), In("p_x"), In("p_attn"), lw.wo)
            c.launch(gu_k, Out("p_act", gu_t), In("p_x2"), lw.post_norm, lw.w_gate, lw.w_up, eps)
            c.launch(dn_k, Out("p_x", dn_t), In("p_x2"), In("p_act"), lw.w_down)
        self._head(c, "p_x", n - 1, 0)
        return c

    # ------------------------------------------------------------------ running

    def decode_graph(self, steps: int = 1):
        """``steps`` decode steps as one graph, captured on first use (before any prefill: capturing
        on the GPU runs it once)."""
        g = self._graphs.get(steps)
        if g is None:
            chain = self._decode_chain(steps)
            try:
                g = self._graphs[steps] = chain.op.graph(self._stream)
            except BaseException:
                chain.recover()
                raise
        return g

    def _prefill(self, ids: np.ndarray) -> None:
        cfg, n = self.config, len(ids)
        pool = self._pool
        pool["ids"] = ct.from_numpy(ids.astype(np.int32), device=self.device).sync_on(self._stream)
        pool["p_x"] = self._zeros((n, cfg.hidden_size))
        pool["p_x2"] = self._zeros((n, cfg.hidden_size))
        pool["p_qkv"] = self._zeros((n, cfg.q_size + 2 * cfg.kv_size))
        pool["p_attn"] = self._zeros((n, cfg.q_size))
        pool["p_act"] = self._zeros((n, cfg.intermediate_size), self.dtype)
        pool["pos"] = ct.memcpy(pool["pos"], np.array([n], np.int32)).sync_on(self._stream)
        chain = self._prefill_chain(n)
        try:
            chain.op.sync_on(self._stream)
        except BaseException:
            chain.recover()
            raise
        finally:
            for name in ("ids", "p_x", "p_x2", "p_qkv", "p_attn", "p_act"):
                pool.pop(name, None)

    def _check_ids(self, ids: Sequence[int], new: int) -> np.ndarray:
        a = np.asarray(list(ids), dtype=np.int64)
        if a.ndim != 1 or a.size == 0:
            raise ValueError("the prompt must be a non-empty sequence of token ids")
        bad = (a < 0) | (a >= self.config.vocab_size)
        if bad.any():
            raise ValueError(f"token id {int(a[bad][0])} is outside the vocabulary [0, {self.config.vocab_size})")
        if a.size + new > self.capacity:
            raise ValueError(f"{a.size} prompt tokens + {new} new tokens exceed the cache capacity of "
                             f"{self.capacity} positions (load with a larger max_seq_len)")
        return a

    def _read(self, name: str) -> np.ndarray:
        return self._pool[name].to_numpy()

    def logits(self, ids: Sequence[int]) -> np.ndarray:
        """The next-token logits after the prompt ``ids`` (float32, one per vocabulary entry)."""
        a = self._check_ids(ids, 0)
        with self._exclusive():
            self.decode_graph()
            self._prefill(a)
            return self._read("logits")[0].copy()

    def generate(self, ids: Sequence[int], max_new_tokens: int, *, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int | None = None, stop: Sequence[int] = ()) -> list[int]:
        """The new token ids after the prompt: greedy by default; sampling with ``temperature`` > 0
        (and ``top_k``, ``top_p``, ``seed``). Stops early after a token in ``stop``."""
        return list(self.stream(ids, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                stop=stop))

    def stream(self, ids: Sequence[int], max_new_tokens: int, *, temperature: float = 0.0, top_k: int = 0,
               top_p: float = 1.0, seed: int | None = None, stop: Sequence[int] = ()) -> Iterator[int]:
        """Like ``generate``, yielding each token as soon as it is known."""
        if int(max_new_tokens) != max_new_tokens or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
        s = Sampling(float(temperature), int(top_k), float(top_p), seed)
        a = self._check_ids(ids, int(max_new_tokens))
        return self._run(a, int(max_new_tokens), s, frozenset(int(t) for t in stop))

    def _exclusive(self):
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("this model is already generating (one generation at a time; finish or close the "
                               "other stream first)")
        return _Release(self._lock)

    def _run(self, a: np.ndarray, new: int, s: Sampling, stop: frozenset) -> Iterator[int]:
        with self._exclusive():
            st = self.stats = Stats(prompt_tokens=int(a.size))
            if new == 0:
                return
            chunk = max(1, self.tuning.decode_chunk) if s.greedy else 1
            graphs = {k: self.decode_graph(k) for k in {1, chunk}}  # captured before the prefill
            rng = np.random.default_rng(s.seed)
            t0 = time.perf_counter()
            self._prefill(a)
            tok = self._next(s, rng)
            st.prefill_s = st.first_token_s = time.perf_counter() - t0
            st.new_tokens = 1
            yield tok
            t1 = time.perf_counter()
            left, at = new - 1, int(a.size)  # hist[at] is the last token handed out
            while left > 0 and tok not in stop:
                k = chunk if left >= chunk else 1
                graphs[k].launch()
                if s.greedy:
                    toks = [int(v) for v in self._read("hist")[0, at + 1: at + 1 + k]]
                else:
                    toks = [self._next(s, rng)]
                at += k
                left -= k
                for tok in toks:
                    st.new_tokens += 1
                    st.decode_s = time.perf_counter() - t1
                    yield tok
                    if tok in stop:
                        break
            st.decode_s = time.perf_counter() - t1

    def _next(self, s: Sampling, rng: np.random.Generator) -> int:
        """The token after the step that just ran: the device's argmax, or a sample (written back
        to the device as the next step's input)."""
        if s.greedy:
            return int(self._read("tok")[0])
        if s.top_k and s.top_k <= self._topk_k():
            pool = self._pool
            k, bv = self._topk_k(), self._topk_bv()
            vals, idxs, logits = kv.top_candidates.generics(BV=bv)(
                pool.pop("cand_v").partition((1, k)), pool.pop("cand_i").partition((1, k)),
                pool.pop("logits")).sync_on(self._stream)
            pool["cand_v"], pool["cand_i"], pool["logits"] = vals.unpartition(), idxs.unpartition(), logits
            tok = choose(self._read("cand_v").ravel(), self._read("cand_i").ravel(), s, rng)
        else:
            logits = self._read("logits")[0]
            tok = choose(logits, np.arange(logits.size), s, rng)
        self._pool["tok"] = ct.memcpy(self._pool["tok"], np.array([tok], np.int32)).sync_on(self._stream)
        return tok

    def launches_per_token(self) -> int:
        return self.decode_graph(1).num_ops


class _Release:
    def __init__(self, lock: threading.Lock):
        self._lock = lock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._lock.release()
        return False
