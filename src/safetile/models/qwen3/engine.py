"""The Qwen3 engine: buffers, the prefill pass, the decode step captured as a graph, generation.

One model serves one generation at a time (batch 1). A generation is a prefill over the
prompt (GEMMs and causal flash attention, run as one chain of launches), then one replay
of the captured decode graph per token: the graph embeds the current token, runs every
layer (fused norm + projections, cache append, split-K attention and merge, SwiGLU),
the head and the argmax, and advances the position, all on device buffers whose
addresses never change. Greedy decoding reads one int per token back; sampling narrows
the logits on the device and draws on the host (``sampling.py``).

Under tensor parallelism (``parallel.py``) each rank runs the same passes on its share of
the heads, columns and vocabulary, with the collectives in the chains: an all-reduce after
each output and down projection, an all-gather of the head's per-block maxima before the
argmax. They are recorded into the decode graph like the launches. With one rank the chains
hold no collective.
"""
from __future__ import annotations

import operator
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import safetile as ct

from ...errors import ArgumentError, SafetileError
from . import kernels_attention as ka
from . import kernels_gemm as kg
from . import kernels_gemv as kv
from .chain import Chain, In, Out, Own
from .checkpoint import Weights
from .config import CheckpointError, Qwen3Config
from .parallel import Layout, layout
from .sampling import Sampling, is_int, choose
from .tuning import Tuning, clip, default, pow2_at_least
from ...locks import FORK_LOCKS


class GenerationBusyError(SafetileError, RuntimeError):
    """The model is already generating (one generation at a time); nothing was changed."""


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
    """A loaded Qwen3 model on one device, or one rank's share of it (use
    ``safetile.models.qwen3.load``; ``part`` is the rank's ``parallel.Layout``)."""

    def __init__(self, config: Qwen3Config, weights: Weights, device: str, max_seq_len: int | None = None,
                 tuning: Tuning | None = None, part: Layout | None = None):
        cfg = self.config = config
        self.weights = weights
        self.device = device
        p = self.part = part or layout(cfg)
        if cfg.group & (cfg.group - 1) or p.group_size & (p.group_size - 1):
            raise CheckpointError(f"{cfg.num_attention_heads} query heads per {cfg.num_key_value_heads} key/value "
                                  f"heads ({p.group_size} on each of {p.world} ranks): the group size must be a "
                                  "power of two")
        n = max_seq_len or min(cfg.max_position_embeddings, 4096)
        self.capacity = pow2_at_least(max(n, 2))
        self.dtype = weights.dtype
        self.tuning = tuning or default(device, self.dtype.itemsize)
        self.stats = Stats()
        self._lock = FORK_LOCKS.new()
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
        nh, g, d, vs = p.nkv, p.group_size, cfg.head_dim, p.vocab_shard
        zeros = self._zeros
        pool = {}
        for layer in range(cfg.num_hidden_layers):
            for kind in "kv":
                pool[f"{kind}{layer}"] = zeros((nh, self.capacity, d), self.dtype)
        nb_head = -(-vs // clip(t.head_bn, vs))
        nb_topk = -(-vs // self._topk_bv())
        pool.update(
            x=zeros((1, cfg.hidden_size)), x2=zeros((1, cfg.hidden_size)),
            qkv=zeros((1, (p.nq + 2 * nh) * d)), attn=zeros((1, p.nq * d)),
            act=zeros((1, p.inter_size)), logits=zeros((1, vs)),
            opart=zeros((nh, self._splits, g, d)), lse=zeros((nh, self._splits, g)),
            pmax=zeros((1, nb_head)), pidx=zeros((1, nb_head), ct.int32),
            tok=zeros((1,), ct.int32), pos=zeros((1,), ct.int32), hist=zeros((1, self.capacity), ct.int32),
            cand_v=zeros((nb_topk, self._topk_k())), cand_i=zeros((nb_topk, self._topk_k()), ct.int32))
        pool["attn3"] = pool["attn"].reshape(nh, g, d)  # the same memory, per key/value head
        if p.parallel:
            w = p.world
            pool.update(pmax_all=zeros((1, w * nb_head)), pidx_all=zeros((1, w * nb_head), ct.int32),
                        logits_all=zeros((1, w * vs)), cand_v_all=zeros((w * nb_topk, self._topk_k())),
                        cand_i_all=zeros((w * nb_topk, self._topk_k()), ct.int32))
            if p.rank:
                pool["zero"] = zeros((1, cfg.hidden_size))  # the residual this rank adds (rank 0 adds x)
            self._collectives(p.group)
        self._pool: dict[str, ct.Tensor] = pool

    # ------------------------------------------------------------------ helpers

    def _zeros(self, shape, dtype=ct.float32) -> ct.Tensor:
        return ct.zeros(shape, dtype, device=self.device).sync_on(self._stream)

    def _topk_bv(self) -> int:
        return clip(self.tuning.topk_bv, self.part.vocab_shard)

    def _topk_k(self) -> int:
        return min(self.tuning.topk_k, self._topk_bv())

    def _collectives(self, group: Any) -> None:
        """The chains' collective steps over ``group`` (named, as the chain lists its steps)."""
        from ...integrations import distributed as ctd

        def all_reduce(t):
            return ctd.all_reduce(t, group=group)

        def all_gather(out, part):
            return ctd.all_gather(out, part, group=group)
        self._all_reduce, self._all_gather = all_reduce, all_gather

    def _res(self, name: str) -> str:
        """The residual an output projection adds: ``name`` on rank 0, zeros of its shape on the other
        ranks (the all-reduce after it adds the ranks' partial products to it once)."""
        if self.part.rank == 0:
            return name
        return "p_zero" if name.startswith("p_") else "zero"

    def _k(self, kernel: ct.EntryKernel, warps: int | None = None, stages: int | None = None, **generics):
        """``kernel`` with launch hints (GPU only) and generics, made once per engine."""
        hints: dict[str, Any] = {}
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
        cfg, t, w, p = self.config, self.tuning, self.weights, self.part
        h, eps, tma, unroll = cfg.hidden_size, cfg.rms_norm_eps, t.gemv_tma, t.gemv_unroll
        nq, nkv, g, d = p.nq, p.nkv, p.group_size, cfg.head_dim
        cos, sin = self._cos, self._sin
        abn = clip(t.attn_bn, self.capacity)
        qkv_k, qkv_bn = self._gemv(kv.rms_gemv, (nq + 2 * nkv) * d, h)
        o_k, o_bn = self._gemv(kv.gemv_residual, h, nq * d)
        gu_k, gu_bn = self._gemv(kv.rms_gate_up, p.inter_size, h)
        dn_k, dn_bn = self._gemv(kv.gemv_residual, h, p.inter_size)
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
            c.launch(o_k, Out("x2", (1, o_bn)), In(self._res("x")), In("attn"), lw.wo, 0, tma, unroll)
            if p.parallel:
                c.launch(self._all_reduce, Own("x2"))
            c.launch(gu_k, Out("act", (1, gu_bn)), In("x2"), lw.post_norm, lw.w_gate, lw.w_up, 0, eps, tma, unroll)
            c.launch(dn_k, Out("x", (1, dn_bn)), In(self._res("x2")), In("act"), lw.w_down, 0, tma, unroll)
            if p.parallel:
                c.launch(self._all_reduce, Own("x"))

    def _head(self, c: Chain, x: str, row: int, advance: int) -> None:
        cfg, t, p = self.config, self.tuning, self.part
        bn = clip(t.head_bn, p.vocab_shard)
        head = self._k(kv.rms_gemv_argmax, t.gemv_warps, t.gemv_stages, BK=clip(t.gemv_bk, cfg.hidden_size))
        c.launch(head, Out("logits", (1, bn)), Out("pmax", (1, 1)), Out("pidx", (1, 1)), In(x), self.weights.norm,
                 self.weights.head, row, cfg.rms_norm_eps, t.gemv_tma, t.gemv_unroll, p.vocab[0])
        nb = -(-p.vocab_shard // bn) * p.world
        best = ("pmax", "pidx")
        if p.parallel:  # every rank's block maxima, in vocabulary order: the same argmax everywhere
            c.launch(self._all_gather, Own("pmax_all"), In("pmax"))
            c.launch(self._all_gather, Own("pidx_all"), In("pidx"))
            best = ("pmax_all", "pidx_all")
        c.launch(self._k(kv.argmax_final, None, None, BC=clip(t.argmax_bc, nb)), Out("tok", (1,)), Out("pos", (1,)),
                 Out("hist", (1, self.capacity)), In(best[0]), In(best[1]), advance)

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
        cfg, t, w, p = self.config, self.tuning, self.weights, self.part
        h, eps, d = cfg.hidden_size, cfg.rms_norm_eps, cfg.head_dim
        nq, nkv = p.nq, p.nkv
        c = Chain(self._pool)
        bm = clip(t.gemm_bm, n)

        def gemm(kernel, cols: int, k: int):
            return (self._k(kernel, t.gemm_warps, t.gemm_stages, BK=clip(t.gemm_bk, k)), (bm, clip(t.gemm_bn, cols)))
        qkv_k, qkv_t = gemm(kg.rms_gemm, (nq + 2 * nkv) * d, h)
        o_k, o_t = gemm(kg.gemm_residual, h, nq * d)
        gu_k, gu_t = gemm(kg.rms_gate_up_gemm, p.inter_size, h)
        dn_k, dn_t = gemm(kg.gemm_residual, h, p.inter_size)
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
                     p.group_size, d ** -0.5, eps)
            c.launch(o_k, Out("p_x2", o_t), In(self._res("p_x")), In("p_attn"), lw.wo)
            if p.parallel:
                c.launch(self._all_reduce, Own("p_x2"))
            c.launch(gu_k, Out("p_act", gu_t), In("p_x2"), lw.post_norm, lw.w_gate, lw.w_up, eps)
            c.launch(dn_k, Out("p_x", dn_t), In(self._res("p_x2")), In("p_act"), lw.w_down)
            if p.parallel:
                c.launch(self._all_reduce, Own("p_x"))
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
        cfg, p, n = self.config, self.part, len(ids)
        pool = self._pool
        pool["ids"] = ct.from_numpy(ids.astype(np.int32), device=self.device).sync_on(self._stream)
        pool["p_x"] = self._zeros((n, cfg.hidden_size))
        pool["p_x2"] = self._zeros((n, cfg.hidden_size))
        pool["p_qkv"] = self._zeros((n, (p.nq + 2 * p.nkv) * cfg.head_dim))
        pool["p_attn"] = self._zeros((n, p.nq * cfg.head_dim))
        pool["p_act"] = self._zeros((n, p.inter_size), self.dtype)
        if p.parallel and p.rank:
            pool["p_zero"] = self._zeros((n, cfg.hidden_size))
        pool["pos"] = ct.memcpy(pool["pos"], np.array([n], np.int32)).sync_on(self._stream)
        chain = self._prefill_chain(n)
        try:
            chain.op.sync_on(self._stream)
        except BaseException:
            chain.recover()
            raise
        finally:
            for name in ("ids", "p_x", "p_x2", "p_qkv", "p_attn", "p_act", "p_zero"):
                pool.pop(name, None)

    def _check_ids(self, ids: Sequence[int], new: int) -> np.ndarray:
        try:
            items = list(ids)
        except TypeError:
            raise ArgumentError(f"the prompt must be a sequence of token ids, got {type(ids).__name__}") from None
        if not items:
            raise ArgumentError("the prompt must be a non-empty sequence of token ids")
        for i, t in enumerate(items):
            if not is_int(t):
                raise ArgumentError(f"prompt[{i}] = {t!r} is not a token id (an integer)")
            t = items[i] = operator.index(t)
            if not 0 <= t < self.config.vocab_size:
                raise ArgumentError(f"token id {t} (prompt[{i}]) is outside the vocabulary "
                                    f"[0, {self.config.vocab_size})")
        a = np.asarray(items, dtype=np.int64)
        if a.size + new > self.capacity:
            raise ArgumentError(f"{a.size} prompt tokens + {new} new tokens exceed the cache capacity of "
                             f"{self.capacity} positions (load with a larger max_seq_len)")
        return a

    def _read(self, name: str) -> np.ndarray:
        return self._pool[name].to_numpy()

    def _gathered(self, name: str) -> np.ndarray:
        """``name`` as one array over the ranks (``name``_all, gathered now), or ``name`` itself."""
        if not self.part.parallel:
            return self._read(name)
        pool = self._pool
        out, part = pool.pop(name + "_all"), pool.pop(name)
        try:  # a refused or failed collective gives both back unchanged
            out, part = self._all_gather(out, part).sync_on(self._stream)
        finally:
            pool[name + "_all"], pool[name] = out, part
        return self._read(name + "_all")

    def _logits(self) -> np.ndarray:
        """The whole vocabulary's logits after the last step (gathered from the ranks)."""
        return self._gathered("logits")[0, :self.config.vocab_size]

    def logits(self, ids: Sequence[int]) -> np.ndarray:
        """The next-token logits after the prompt ``ids`` (float32, one per vocabulary entry)."""
        a = self._check_ids(ids, 0)
        with self._exclusive():
            self.decode_graph()
            self._prefill(a)
            return self._logits().copy()

    def generate(self, ids: Sequence[int], max_new_tokens: int, *, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int | None = None, stop: Sequence[int] = ()) -> list[int]:
        """The new token ids after the prompt: greedy by default; sampling with ``temperature`` > 0
        (and ``top_k``, ``top_p``, ``seed``). Stops early after a token in ``stop``."""
        return list(self.stream(ids, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                stop=stop))

    def stream(self, ids: Sequence[int], max_new_tokens: int, *, temperature: float = 0.0, top_k: int = 0,
               top_p: float = 1.0, seed: int | None = None, stop: Sequence[int] = ()) -> Iterator[int]:
        """Like ``generate``, yielding each token as soon as it is known."""
        if not (is_int(max_new_tokens) and max_new_tokens >= 0):
            raise ArgumentError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
        s = Sampling(temperature, top_k, top_p, seed)
        a = self._check_ids(ids, int(max_new_tokens))
        try:
            stops = list(stop)
        except TypeError:
            raise ArgumentError(f"stop must be a sequence of token ids, got {type(stop).__name__}") from None
        bad = [t for t in stops if not is_int(t)]
        if bad:
            raise ArgumentError(f"stop: {bad[0]!r} is not a token id (an integer)")
        return self._run(a, int(max_new_tokens), s, frozenset(operator.index(t) for t in stops))

    def _exclusive(self):
        if not self._lock.acquire(blocking=False):
            raise GenerationBusyError("this model is already generating (one generation at a time; finish or close the "
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
            p = self.part
            ids = self._gathered("cand_i")
            ids = (ids.reshape(p.world, -1) + p.vocab_shard * np.arange(p.world)[:, None]).ravel()  # token ids
            vals = self._gathered("cand_v").ravel()
            real = ids < self.config.vocab_size  # a last rank's padding is never a token
            tok = choose(vals[real], ids[real], s, rng)
        else:
            logits = self._logits()
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
