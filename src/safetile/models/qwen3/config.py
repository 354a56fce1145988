"""The Qwen3 (dense) configuration: what ``config.json`` says, checked before anything loads."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ...errors import SafetileError


class CheckpointError(SafetileError, ValueError):
    """A checkpoint directory that is missing files, weights, or has an unsupported configuration."""


@dataclass(frozen=True)
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 40960
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"
    eos_token_id: tuple[int, ...] = ()

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.num_attention_heads // self.num_key_value_heads

    def num_parameters(self) -> int:
        h, i, v = self.hidden_size, self.intermediate_size, self.vocab_size
        layer = h * (self.q_size + 2 * self.kv_size) + self.q_size * h + 3 * h * i + 2 * h + 2 * self.head_dim
        return v * h * (1 if self.tie_word_embeddings else 2) + self.num_hidden_layers * layer + h

    def weight_bytes_per_token(self, itemsize: int) -> int:
        """Bytes of weights a decode step reads: every matrix except the embedding table (one
        row of it), which the head reads in full when it is tied."""
        emb = self.vocab_size * self.hidden_size
        read = self.num_parameters() - (0 if self.tie_word_embeddings else emb)
        return read * itemsize

    def kv_bytes_per_position(self, itemsize: int) -> int:
        """Cache bytes (keys and values, all layers) per cached position."""
        return 2 * self.num_hidden_layers * self.kv_size * itemsize

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Qwen3Config:
        def need(key: str) -> Any:
            if key not in d:
                raise CheckpointError(f"config.json: missing {key!r}")
            return d[key]

        mt = d.get("model_type", "qwen3")
        if mt != "qwen3":
            raise CheckpointError(f"config.json: model_type {mt!r} is not supported (only 'qwen3', the dense models)")
        if d.get("attention_bias", False):
            raise CheckpointError("config.json: attention_bias is true; Qwen3 has no attention biases")
        if d.get("hidden_act", "silu") != "silu":
            raise CheckpointError(f"config.json: hidden_act {d['hidden_act']!r} is not supported (only 'silu')")
        if d.get("use_sliding_window", False):
            raise CheckpointError("config.json: sliding-window attention is not supported")
        rope = d.get("rope_parameters") or {}
        scaling = d.get("rope_scaling")
        rope_type = (scaling or {}).get("rope_type", (scaling or {}).get("type")) or rope.get("rope_type", "default")
        if rope_type != "default":
            raise CheckpointError(f"config.json: RoPE scaling {rope_type!r} is not supported")
        theta = rope.get("rope_theta", d.get("rope_theta", 1_000_000.0))
        h, nq = int(need("hidden_size")), int(need("num_attention_heads"))
        nkv = int(d.get("num_key_value_heads") or nq)
        hd = int(d.get("head_dim") or h // nq)
        if nq % nkv:
            raise CheckpointError(f"config.json: {nq} attention heads are not a multiple of {nkv} key/value heads")
        if hd & (hd - 1) or hd < 2:
            raise CheckpointError(f"config.json: head_dim {hd} must be a power of two (tiles are power-of-two shaped)")
        eos = d.get("eos_token_id")
        eos_t = tuple(int(e) for e in (eos if isinstance(eos, list) else [eos])) if eos is not None else ()
        return cls(vocab_size=int(need("vocab_size")), hidden_size=h,
                   intermediate_size=int(need("intermediate_size")),
                   num_hidden_layers=int(need("num_hidden_layers")), num_attention_heads=nq,
                   num_key_value_heads=nkv, head_dim=hd, rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)),
                   rope_theta=float(theta), max_position_embeddings=int(d.get("max_position_embeddings", 40960)),
                   tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
                   torch_dtype=str(d.get("torch_dtype") or d.get("dtype") or "bfloat16"), eos_token_id=eos_t)

    @classmethod
    def from_file(cls, path: str) -> Qwen3Config:
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except FileNotFoundError:
            raise CheckpointError(f"no config.json in {os.path.dirname(path) or '.'}") from None
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{path}: not valid JSON ({e})") from None
        return cls.from_dict(d)


# Public model shapes (for benchmarks with random weights); see shared/reference/qwen3.md.
SHAPES: dict[str, dict[str, Any]] = {
    "0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "4B": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "8B": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=False),
    "32B": dict(hidden_size=5120, intermediate_size=25600, num_hidden_layers=64, num_attention_heads=64,
                num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=False),
}


def shape_config(name: str, **over: Any) -> Qwen3Config:
    """The configuration of a public Qwen3 model shape ('0.6B', '4B', '8B', '32B')."""
    return Qwen3Config(**{**SHAPES[name], **over})
