"""Choosing the next token from logits: greedy, or temperature / top-k / top-p sampling.

The warpers apply in Hugging Face's order (temperature, then top-k, then top-p) and draw
with a NumPy ``Generator`` seeded once per generation, so a seed reproduces a run. The
device narrows the vocabulary first where it can (``top_candidates``: each block's K best
logits), so the host sorts a few thousand candidates instead of the whole vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0: greedy (argmax on the device)
    top_k: int = 0  # 0: no top-k cut
    top_p: float = 1.0  # 1: no nucleus cut
    seed: int | None = None

    def __post_init__(self):
        if not (self.temperature >= 0.0 and np.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if int(self.top_k) != self.top_k or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

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
