"""Reading a Hugging Face Qwen3 checkpoint directory into device tensors.

A checkpoint is ``config.json`` plus one or more ``*.safetensors`` files (sharded ones are
listed by ``model.safetensors.index.json``). Weights are read one at a time (safetensors
maps the files), converted to the engine's dtype, placed on the device and wrapped as
read-only ``ct.Shared`` handles, so every launch can read them at once and none can write
them. The query, key and value projections are stacked into one matrix (one GEMV reads
all three); a tied ``lm_head`` is the embedding table itself. Under tensor parallelism
(``parallel.Layout``) each rank keeps only its share: its heads' rows of q/k/v and columns
of the output projection, its intermediate rows of gate/up and columns of down, its
vocabulary rows of the head (a view of the embedding table when tied; the table itself
stays whole).
"""
from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import safetile as ct

from .config import CheckpointError, Qwen3Config
from .parallel import Layout
from .parallel import layout as whole_model

_INDEX = "model.safetensors.index.json"


@dataclass
class LayerWeights:
    input_norm: ct.Shared
    wqkv: ct.Shared  # [Nq·D + 2·Nkv·D, H]: q, k and v projections stacked
    q_norm: ct.Shared
    k_norm: ct.Shared
    wo: ct.Shared
    post_norm: ct.Shared
    w_gate: ct.Shared
    w_up: ct.Shared
    w_down: ct.Shared


@dataclass
class Weights:
    embed: ct.Shared
    head: ct.Shared  # the embedding table (or this rank's rows of it) when tied
    norm: ct.Shared
    layers: list[LayerWeights]
    dtype: ct.DType
    tied: bool = False

    def nbytes(self) -> int:
        seen, total = set(), 0
        head = () if self.tied else (self.head,)
        for s in (self.embed, *head, self.norm, *(getattr(lw, f) for lw in self.layers
                                                  for f in LayerWeights.__dataclass_fields__)):
            if id(s) not in seen:
                seen.add(id(s))
                total += int(np.prod(s.shape)) * s.dtype.itemsize
        return total


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _read_raw(path: str, name: str) -> np.ndarray:
    """One tensor straight from the file (safetensors' NumPy API has no bfloat16): an 8-byte
    little-endian header length, a JSON header with dtype, shape and byte offsets, the data."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        info = json.loads(f.read(n))[name]
        begin, end = info["data_offsets"]
        f.seek(8 + n + begin)
        raw = f.read(end - begin)
    dtypes: dict[str, npt.DTypeLike] = {"BF16": ct.bfloat16.np_dtype, "F16": np.float16, "F32": np.float32}
    dtype = dtypes.get(info["dtype"])
    if dtype is None:
        raise CheckpointError(f"{path}: tensor {name!r} has unsupported dtype {info['dtype']}")
    return np.frombuffer(raw, dtype=dtype).reshape(info["shape"])


class CheckpointReader:
    """Random access to the tensors of a checkpoint directory, by their Hugging Face names."""

    def __init__(self, path: str):
        try:
            from safetensors import safe_open
        except ImportError:
            raise ImportError("reading checkpoints needs safetensors: pip install 'safetile[models]'") from None
        self._safe_open = safe_open
        self.path = path
        if not os.path.isdir(path):
            raise CheckpointError(f"{path!r} is not a checkpoint directory")
        self.config = Qwen3Config.from_file(os.path.join(path, "config.json"))
        index = os.path.join(path, _INDEX)
        self._file_of: dict[str, str] = {}
        if os.path.exists(index):
            with open(index, encoding="utf-8") as f:
                weight_map = json.load(f).get("weight_map", {})
            for name, fname in weight_map.items():
                full = os.path.join(path, fname)
                if not os.path.exists(full):
                    raise CheckpointError(f"{_INDEX} lists {fname!r} for {name!r}, but the file is missing")
                self._file_of[name] = full
        else:
            files = sorted(glob.glob(os.path.join(path, "*.safetensors")))
            if not files:
                raise CheckpointError(f"no *.safetensors files in {path!r}")
            for full in files:
                with safe_open(full, framework="numpy") as f:
                    for name in f.keys():  # a safetensors handle, not a dict
                        self._file_of[name] = full
        self._framework = "pt" if _torch() is not None else "numpy"

    def __contains__(self, name: str) -> bool:
        return name in self._file_of

    def get(self, name: str) -> Any:
        """The tensor ``name`` (a torch CPU tensor when torch is installed, else a NumPy array)."""
        path = self._file_of.get(name)
        if path is None:
            raise CheckpointError(f"the checkpoint in {self.path!r} has no tensor {name!r}")
        with self._safe_open(path, framework=self._framework) as f:
            if self._framework == "pt":
                return f.get_tensor(name)
            if f.get_slice(name).get_dtype() in ("BF16",):
                return _read_raw(path, name)
            return f.get_tensor(name)


def _to_device(x: Any, device: str, dtype: ct.DType) -> ct.Tensor:
    """``x`` (torch or NumPy) as a contiguous safetile tensor in ``dtype`` on ``device``: the same
    memory when it already is one (a model's weights are never duplicated), else a copy."""
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return ct.from_dlpack(x.detach().to(device=device, dtype=getattr(torch, dtype.name)).contiguous())
    a = np.asarray(x)
    if device == "cpu":
        return ct.from_dlpack(np.ascontiguousarray(a.astype(dtype.np_dtype, copy=False)))
    return ct.from_numpy(a, device=device, dtype=dtype).sync()


def _cat_rows(parts: list[Any]) -> Any:
    torch = _torch()
    if torch is not None and isinstance(parts[0], torch.Tensor):
        return torch.cat(parts, 0)
    return np.concatenate([np.asarray(p) for p in parts], 0)


def build_weights(cfg: Qwen3Config, get: Callable[[str], Any], has: Callable[[str], bool], device: str,
                  dtype: ct.DType, part: Layout | None = None) -> Weights:
    """Device weights from a name → tensor accessor (Hugging Face names and [out, in] shapes);
    ``part``: this rank's share under tensor parallelism (default: the whole model)."""
    h, i, d = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
    part = part or whole_model(cfg)
    (q0, q1), (k0, k1), (i0, i1), (v0, v1) = part.q_heads, part.kv_heads, part.inter, part.vocab

    def take(name: str, shape: tuple[int, ...]) -> Any:
        if not has(name):
            raise CheckpointError(f"the checkpoint has no tensor {name!r}")
        x = get(name)
        if tuple(x.shape) != shape:
            raise CheckpointError(f"tensor {name!r} has shape {tuple(x.shape)}, but config.json implies {shape}")
        return x

    def put(name: str, shape: tuple[int, ...], rows: tuple[int, int] | None = None,
            cols: tuple[int, int] | None = None) -> ct.Shared:
        x = take(name, shape)
        if rows is not None and rows != (0, shape[0]):
            x = x[rows[0]:rows[1]]
        if cols is not None and cols != (0, shape[1]):
            x = x[:, cols[0]:cols[1]]
        return _to_device(x, device, dtype).shared()

    embed_t = _to_device(take("model.embed_tokens.weight", (cfg.vocab_size, h)), device, dtype)
    if cfg.tie_word_embeddings:
        head_t = embed_t if (v0, v1) == (0, cfg.vocab_size) else embed_t[v0:v1]  # a view: no copy
        embed = embed_t.shared()
        head = embed if head_t is embed_t else head_t.shared()
    elif has("lm_head.weight"):
        embed = embed_t.shared()
        head = put("lm_head.weight", (cfg.vocab_size, h), rows=(v0, v1))
    else:
        raise CheckpointError("tie_word_embeddings is false but the checkpoint has no 'lm_head.weight'")
    layers = []
    for n in range(cfg.num_hidden_layers):
        p = f"model.layers.{n}."
        qkv = _cat_rows([take(p + "self_attn.q_proj.weight", (cfg.q_size, h))[q0 * d:q1 * d],
                         take(p + "self_attn.k_proj.weight", (cfg.kv_size, h))[k0 * d:k1 * d],
                         take(p + "self_attn.v_proj.weight", (cfg.kv_size, h))[k0 * d:k1 * d]])
        layers.append(LayerWeights(
            input_norm=put(p + "input_layernorm.weight", (h,)),
            wqkv=_to_device(qkv, device, dtype).shared(),
            q_norm=put(p + "self_attn.q_norm.weight", (d,)),
            k_norm=put(p + "self_attn.k_norm.weight", (d,)),
            wo=put(p + "self_attn.o_proj.weight", (h, cfg.q_size), cols=(q0 * d, q1 * d)),
            post_norm=put(p + "post_attention_layernorm.weight", (h,)),
            w_gate=put(p + "mlp.gate_proj.weight", (i, h), rows=(i0, i1)),
            w_up=put(p + "mlp.up_proj.weight", (i, h), rows=(i0, i1)),
            w_down=put(p + "mlp.down_proj.weight", (h, i), cols=(i0, i1))))
    return Weights(embed, head, put("model.norm.weight", (h,)), layers, dtype, cfg.tie_word_embeddings)
