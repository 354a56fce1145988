"""A batch-1 Qwen3 inference engine on safetile kernels (see docs/models.md).

```python
from safetile.models import qwen3
model = qwen3.load("path/to/Qwen3-0.6B", device="cuda")
new_ids = model.generate([151644, 872, 198], max_new_tokens=32)
for tok in model.stream(ids, 32, temperature=0.7, top_k=20, top_p=0.8, seed=0):
    ...
```

Under ``torchrun --nproc-per-node N`` (torch.distributed initialised), ``load`` shards the
model over the N ranks (tensor parallelism, ``parallel.py``) and every rank returns the
same results; ``tp_group=`` picks another process group.

Modules: ``config`` (config.json), ``checkpoint`` (safetensors → device weights),
``kernels_gemv`` / ``kernels_attention`` / ``kernels_gemm`` (the safe-style kernels),
``chain`` (a forward pass as one DeviceOp), ``engine`` (prefill, the decode graph,
generation), ``parallel`` (tensor parallelism), ``sampling``, ``tuning`` (tile sizes).
"""
from __future__ import annotations

from typing import Any

import safetile as ct

from ...errors import ArgumentError
from .checkpoint import CheckpointReader, Weights, build_weights
from .config import SHAPES, CheckpointError, Qwen3Config, shape_config
from .engine import GenerationBusyError, Qwen3, Stats
from .parallel import Layout, layout, rank_device, resolve
from .sampling import Sampling
from .tuning import Tuning

__all__ = [
    "SHAPES",
    "CheckpointError",
    "GenerationBusyError",
    "Layout",
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
        raise ArgumentError(f"device must be 'cpu' or 'cuda' ('cuda:N'), got {device!r}")
    if dtype is None:  # the CPU backend computes in float32 anyway: keep it exact there
        d = ct.float32 if device == "cpu" else ct.dtypes.as_dtype(checkpoint_dtype)
    else:
        d = ct.dtypes.as_dtype(dtype)
    if d.name not in ("bfloat16", "float16", "float32"):
        raise ArgumentError(f"dtype must be bfloat16, float16 or float32, got {d.name}")
    return device, d


def _place(cfg: Qwen3Config, device: str, dtype: Any, tp_group: Any) -> tuple[str, ct.DType, Layout]:
    """The device, dtype and this rank's share of the model (checked before any weight loads)."""
    rank, world, group = resolve(tp_group)
    device, d = _device_and_dtype(rank_device(device, world), dtype, cfg.torch_dtype)
    part = layout(cfg, rank, world, group)
    if part.parallel:
        from .parallel import check_backend
        check_backend(device, group)
    return device, d, part


def load(path: str, device: str = "cpu", dtype: Any = None, max_seq_len: int | None = None,
         tuning: Tuning | None = None, tp_group: Any = None) -> Qwen3:
    """Load a Hugging Face Qwen3 checkpoint directory (config.json + *.safetensors).

    ``dtype`` defaults to the checkpoint's on the GPU and float32 on the CPU; the KV cache
    holds ``max_seq_len`` positions (rounded up to a power of two; default
    min(max_position_embeddings, 4096)). When torch.distributed is initialised, every rank
    of its default group (or of ``tp_group``) calls this and holds its share of the model
    (tensor parallelism; "cuda" is then each rank's own GPU, ``LOCAL_RANK`` under torchrun).
    A group of one process gives the whole model.
    """
    reader = CheckpointReader(path)
    cfg = reader.config
    device, d, part = _place(cfg, device, dtype, tp_group)
    weights = build_weights(cfg, reader.get, reader.__contains__, device, d, part)
    return Qwen3(cfg, weights, device, max_seq_len, tuning, part)


def from_weights(config: Qwen3Config, tensors: dict[str, Any], device: str = "cpu", dtype: Any = None,
                 max_seq_len: int | None = None, tuning: Tuning | None = None, tp_group: Any = None) -> Qwen3:
    """A model from in-memory tensors named as in a checkpoint (NumPy arrays or torch tensors);
    sharded like ``load`` under torch.distributed.

    Tensors already on ``device`` in the model's dtype are used in place where the rank's share
    is a block of rows (not copied): they become read-only ``ct.Shared`` weights, so do not
    modify them while the model is in use.
    """
    device, d, part = _place(config, device, dtype, tp_group)
    return Qwen3(config, build_weights(config, tensors.__getitem__, tensors.__contains__, device, d, part), device,
                 max_seq_len, tuning, part)
