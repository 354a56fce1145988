"""A batch-1 Qwen3 inference engine on safetile kernels (see docs/models.md).

```python
from safetile.models import qwen3
model = qwen3.load("path/to/Qwen3-0.6B", device="cuda")
new_ids = model.generate([151644, 872, 198], max_new_tokens=32)
for tok in model.stream(ids, 32, temperature=0.7, top_k=20, top_p=0.8, seed=0):
    ...
```

Modules: ``config`` (config.json), ``checkpoint`` (safetensors → device weights),
``kernels_gemv`` / ``kernels_attention`` / ``kernels_gemm`` (the safe-style kernels),
``chain`` (a forward pass as one DeviceOp), ``engine`` (prefill, the decode graph,
generation), ``sampling``, ``tuning`` (tile sizes).
"""
from __future__ import annotations

from typing import Any

import safetile as ct

from .checkpoint import CheckpointReader, Weights, build_weights
from .config import SHAPES, CheckpointError, Qwen3Config, shape_config
from .engine import Qwen3, Stats
from .sampling import Sampling
from .tuning import Tuning

__all__ = [
    "SHAPES",
    "CheckpointError",
    "Qwen3",
    "Qwen3Config",
    "Sampling",
    "Stats",
    "Tuning",
    "Weights",
    "from_weights",
    "load",
    "shape_config",
]


def _device_and_dtype(device: str, dtype: Any, checkpoint_dtype: str) -> tuple[str, ct.DType]:
    device = "cuda:0" if device == "cuda" else device
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda' ('cuda:N'), got {device!r}")
    if dtype is None:  # the CPU backend computes in float32 anyway: keep it exact there
        d = ct.float32 if device == "cpu" else ct.dtypes.as_dtype(checkpoint_dtype)
    else:
        d = ct.dtypes.as_dtype(dtype)
    if d.name not in ("bfloat16", "float16", "float32"):
        raise ValueError(f"dtype must be bfloat16, float16 or float32, got {d.name}")
    return device, d


def load(path: str, device: str = "cpu", dtype: Any = None, max_seq_len: int | None = None,
         tuning: Tuning | None = None) -> Qwen3:
    """Load a Hugging Face Qwen3 checkpoint directory (config.json + *.safetensors).

    ``dtype`` defaults to the checkpoint's on the GPU and float32 on the CPU; the KV cache
    holds ``max_seq_len`` positions (rounded up to a power of two; default
    min(max_position_embeddings, 4096)).
    """
    reader = CheckpointReader(path)
    cfg = reader.config
    device, d = _device_and_dtype(device, dtype, cfg.torch_dtype)
    weights = build_weights(cfg, reader.get, reader.__contains__, device, d)
    return Qwen3(cfg, weights, device, max_seq_len, tuning)


def from_weights(config: Qwen3Config, tensors: dict[str, Any], device: str = "cpu", dtype: Any = None,
                 max_seq_len: int | None = None, tuning: Tuning | None = None) -> Qwen3:
    """A model from in-memory tensors named as in a checkpoint (NumPy arrays or torch tensors).

    Tensors already on ``device`` in the model's dtype are used in place, not copied: they
    become read-only ``ct.Shared`` weights, so do not modify them while the model is in use.
    """
    device, d = _device_and_dtype(device, dtype, config.torch_dtype)
    return Qwen3(config, build_weights(config, tensors.__getitem__, tensors.__contains__, device, d), device,
                 max_seq_len, tuning)
