"""Tensor parallelism: which part of the model each rank holds, and the group it talks over.

Megatron-style, for batch-1 decoding. Every rank holds the whole residual stream (the
hidden vector) and:

- attention: a contiguous range of query heads with their key/value heads (and those
  heads' KV cache). The q/k/v projection is split by output rows (no communication);
  the output projection by input columns, so each rank's product is a partial sum, and
  one all-reduce after it gives every rank the full result. When there are fewer
  key/value heads than ranks, each key/value head is replicated on the ranks whose query
  heads use it (``num_key_value_heads`` must divide the world size, and the world size
  the query heads); otherwise ``num_key_value_heads`` must be a multiple of the world
  size. Anything else is refused, naming the field.
- MLP: a range of the intermediate columns (gate/up by rows, down by columns; one
  all-reduce after it). The columns split as evenly as they go.
- head: a range of the vocabulary (vocab-parallel): each rank computes its logits and its
  blocks' best logits; an all-gather of those maxima (and their token ids) lets every rank
  pick the same next token. Full logits are gathered only when asked for (``logits()``,
  sampling). The embedding table is kept whole on every rank (a decode step reads one
  row of it); a tied head is a view of the rank's rows of it.

The residual is added once: rank 0's output projections add it, the other ranks' add a
zero row, and the all-reduce sums the partials. Every rank then holds bit-identical
activations (an all-reduce hands every rank the same sum), so every rank computes the
same tokens. With one rank the layout is the whole model and the engine runs no
collective at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ArgumentError
from ...runtime import env
from .config import CheckpointError, Qwen3Config


@dataclass(frozen=True)
class Layout:
    """What one rank holds: half-open ranges of query heads, key/value heads, intermediate
    columns and vocabulary rows. ``vocab_shard`` is every rank's logits length (the last
    rank's range may be shorter; its missing rows score -inf)."""

    rank: int
    world: int
    group: Any
    q_heads: tuple[int, int]
    kv_heads: tuple[int, int]
    inter: tuple[int, int]
    vocab: tuple[int, int]
    vocab_shard: int

    @property
    def parallel(self) -> bool:
        return self.world > 1

    @property
    def nq(self) -> int:
        return self.q_heads[1] - self.q_heads[0]

    @property
    def nkv(self) -> int:
        return self.kv_heads[1] - self.kv_heads[0]

    @property
    def group_size(self) -> int:
        """Query heads per key/value head on this rank."""
        return self.nq // self.nkv

    @property
    def inter_size(self) -> int:
        return self.inter[1] - self.inter[0]


def _even(n: int, parts: int, i: int) -> tuple[int, int]:
    """The i-th of ``parts`` contiguous ranges covering [0, n), sizes differing by at most one."""
    q, r = divmod(n, parts)
    lo = i * q + min(i, r)
    return lo, lo + q + (1 if i < r else 0)


def layout(cfg: Qwen3Config, rank: int = 0, world: int = 1, group: Any = None) -> Layout:
    """Rank ``rank``'s share of the model over ``world`` ranks (checked; see the module docstring)."""
    nq, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    if world > 1:
        if nkv % world == 0:
            per = nkv // world
            kv = (rank * per, (rank + 1) * per)
            q = (kv[0] * cfg.group, kv[1] * cfg.group)
        elif world % nkv == 0 and nq % world == 0:
            per = nq // world  # the ranks sharing a key/value head split its query heads
            q = (rank * per, (rank + 1) * per)
            g = q[0] // cfg.group
            kv = (g, g + 1)
        else:
            raise CheckpointError(
                f"config.json: num_key_value_heads = {nkv} does not split over {world} tensor-parallel ranks: it "
                f"must be a multiple of the world size, or divide it (then each key/value head is replicated and "
                f"num_attention_heads = {nq} must be a multiple of the world size)")
    else:
        q, kv = (0, nq), (0, nkv)
    shard = -(-cfg.vocab_size // world)
    if cfg.intermediate_size < world or cfg.vocab_size <= (world - 1) * shard:
        raise CheckpointError(f"config.json: intermediate_size = {cfg.intermediate_size} and vocab_size = "
                              f"{cfg.vocab_size} are too small to give each of {world} ranks a share")
    vocab = (min(rank * shard, cfg.vocab_size), min((rank + 1) * shard, cfg.vocab_size))
    return Layout(rank, world, group, q, kv, _even(cfg.intermediate_size, world, rank), vocab, shard)


def resolve(tp_group: Any = None) -> tuple[int, int, Any]:
    """(rank, world size, group): ``tp_group`` when given, else torch.distributed's default group
    when it is initialised, else one rank. Nothing is imported when torch is absent."""
    if tp_group is None:
        try:
            import torch.distributed as dist
        except ImportError:
            return 0, 1, None
        if not (dist.is_available() and dist.is_initialized()):
            return 0, 1, None
    from ...integrations.distributed import group_rank, group_size
    return group_rank(tp_group), group_size(tp_group), tp_group


def rank_device(device: str, world: int) -> str:
    """Under tensor parallelism, "cuda" means this rank's GPU: ``LOCAL_RANK`` (torchrun sets it),
    else the current CUDA device."""
    if device != "cuda" or world == 1:
        return device
    local = env.local_rank()
    if local is not None:
        return f"cuda:{local}"
    import torch
    return f"cuda:{torch.cuda.current_device()}"


def check_backend(device: str, group: Any) -> None:
    """The group's backend must carry tensors of ``device`` (gloo on the CPU, NCCL on the GPU)."""
    import torch.distributed as dist
    backend = str(dist.get_backend(group))
    need = "gloo" if device == "cpu" else "nccl"
    if need not in backend:
        raise ArgumentError(f"tensor parallelism on {device} needs a {need} process group; this group's backend is "
                            f"{backend} (init_process_group(backend={need!r}))")
