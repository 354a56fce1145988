"""Choosing the next token from logits: greedy, or temperature / top-k / top-p sampling.

The warpers apply in Hugging Face's order (temperature, then top-k, then top-p) and draw
with a NumPy ``Generator`` seeded once per generation, so a seed reproduces a run. The
device narrows the vocabulary first where it can (``top_candidates``: each block's K best
logits), so the host sorts a few thousand candidates instead of the whole vocabulary.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ...errors import ArgumentError


def is_int(v) -> bool:
    """An integer (Python, NumPy, or anything with ``__index__`` such as a 0-d torch tensor), not a bool."""
    if isinstance(v, (bool, np.bool_)):
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0: greedy (argmax on the device)
    top_k: int = 0  # 0: no top-k cut
    top_p: float = 1.0  # 1: no nucleus cut
    seed: int | None = None

    def __post_init__(self):
        t, k, p, seed = self.temperature, self.top_k, self.top_p, self.seed
        if not (is_real(t) and t >= 0.0 and np.isfinite(t)):
            raise ArgumentError(f"temperature must be a finite number >= 0, got {t!r}")
        if not (is_int(k) and k >= 0):
            raise ArgumentError(f"top_k must be an integer >= 0, got {k!r}")
        if not (is_real(p) and 0.0 < p <= 1.0):
            raise ArgumentError(f"top_p must be in (0, 1], got {p!r}")
        if seed is not None and not (is_int(seed) and 0 <= seed < 2**64):
            raise ArgumentError(f"seed must be None or an integer in [0, 2**64), got {seed!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def choose(logits: np.ndarray, ids: np.ndarray, s: Sampling, rng: np.random.Generator) -> int:
    """Sample one token id among candidates (``logits[i]`` belongs to token ``ids[i]``)."""
    z = logits.astype(np.float64) / s.temperature
    order = np.argsort(-z, kind="stable")
    if s.top_k:
        order = order[:s.top_k]
    z, ids = z[order], ids[order]
    p = np.exp(z - z[0])
    p /= p.sum()
    if s.top_p < 1.0:
        # keep the most likely tokens until their mass reaches top_p (at least one)
        keep = int(np.searchsorted(np.cumsum(p), s.top_p, side="left")) + 1
        p = p[:keep] / p[:keep].sum()
        ids = ids[:keep]
    return int(ids[rng.choice(len(p), p=p)])
