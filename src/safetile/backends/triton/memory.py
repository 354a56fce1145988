"""Triton lowerings of the memory family (ops/memory.py).

Tile-space ``load``/``store`` always have a correct masked path: element offsets
``index * tile + arange`` per axis, pointer = base + Σ offset·stride, mask = offsets inside
the array (the lower bound is dropped where the index is provably non-negative); masked
loads read the padding value, masked stores write nothing. Where this specialisation
proves a tensor descriptor legal (sm_90+, 16-byte aligned base, unit last stride, 16-byte
strides, identity order, zero/NaN padding) rank ≥ 2 tiles go through
``tl.make_tensor_descriptor`` (TMA on Hopper) instead.

Gather/scatter/atomics address elements through broadcast index tiles; out-of-bounds or
masked-off lanes read ``padding_value`` (0 for atomics' old values) and write nothing.
``atomic_cas`` has no mask in Triton, so dead lanes compare-and-swap the array's first
element with itself.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir.core import Value, tile_type
from ...ir.types import TileType
from ...ops.memory import MemoryOrder, MemoryScope, PaddingMode
from .codegen import ArrayInfo, Gen, lowers, py_literal

_PAD = {PaddingMode.UNDETERMINED: "0", PaddingMode.ZERO: "0", PaddingMode.NEG_ZERO: "-0.0",
        PaddingMode.NAN: "_NAN", PaddingMode.POS_INF: "_INF", PaddingMode.NEG_INF: "_NINF"}
_SEM = {MemoryOrder.WEAK: "relaxed", MemoryOrder.RELAXED: "relaxed", MemoryOrder.ACQUIRE: "acquire",
        MemoryOrder.RELEASE: "release", MemoryOrder.ACQ_REL: "acq_rel"}
_SCOPE = {MemoryScope.NONE: "gpu", MemoryScope.BLOCK: "cta", MemoryScope.CLUSTER: "gpu",
          MemoryScope.DEVICE: "gpu", MemoryScope.SYS: "sys"}


@lowers("array_dim")
def array_dim(g: Gen, op):
    info = g.array(op.operands[0])
    axis = op.attrs["axis"]
    if info.static[axis] is not None:
        g.m.consts[op.result.id] = (int(info.static[axis]), dt.int32, ())
        return None
    s = info.sizes[axis]
    return f"{s}.to(tl.int32)" if info.idx64 else s


@lowers("array_stride")
def array_stride(g: Gen, op):
    info = g.array(op.operands[0])
    s = info.strides[op.attrs["axis"]]
    if s == "1":
        g.m.consts[op.result.id] = (1, dt.int32, ())
        return None
    return f"{s}.to(tl.int32)" if info.idx64 else s


# ---------------------------------------------------------------------------------- tile space

def _expand(x: str, d: int, rank: int) -> str:
    if rank == 1:
        return x
    return f"{x}[{', '.join(':' if k == d else 'None' for k in range(rank))}]"


def _tile_index(g: Gen, i, s: int, wide: bool, coordinate: bool = False) -> str:
    """A run-time tile index ``i`` clamped so that ``i * s`` plus a lane cannot wrap round in its
    integer type (an int32 index of 2**28 times 16 would be 0: a tile inside the array). A
    clamped index still addresses no element: past the top, every lane is at least
    ``2**31 - 2s``, beyond any array that uses 32-bit offsets (``launcher.needs_idx64``);
    below zero every lane is negative."""
    iv = g.val(i)
    d = i.type.dtype
    if wide and d.bits < 64:
        return f"{iv}.to(tl.int64)"  # a narrower index times s cannot overflow 64 bits
    limit = 2**63 if d.bits == 64 and not coordinate else 2**31  # a descriptor's coordinates are int32
    clamped = f"tl.minimum({iv}, {limit // s - 1})"
    if d.is_signed:
        clamped = f"tl.maximum({clamped}, {-(limit // s)})"
    if coordinate and d.bits != 32:
        clamped = f"({clamped}).to(tl.int32)"
    iv = g.tmp(clamped, "i")
    return f"{iv}.to(tl.int64)" if wide else iv


def _tile_access(g: Gen, info: ArrayInfo, index, shape, order, full: bool = False):
    """(pointers, mask or None, pointer shape) for the tile at ``index``. Unit tile axes address
    with scalars, so the pointers have the tile's shape without its size-1 axes; ``full`` puts
    those axes back (expand_dims), for tiles that are used at their own rank."""
    kept = [d for d, s in enumerate(shape) if s != 1]
    rank = len(kept)
    terms, masks = [], []
    for d in range(len(shape)):
        ax, s, i = order[d], shape[d], index[d]
        c = g.const(i)
        if s == 1:  # a scalar offset
            if c is not None:
                e = str(int(c))
            else:
                e = g.val(i)
                if info.idx64:
                    e = g.tmp(f"{e}.to(tl.int64)", "o")
        else:
            if c is not None:
                start = int(c) * s
                off = f"tl.arange(0, {s})" + (f" + {start}" if start else "")
                if info.idx64:
                    off = f"(tl.arange(0, {s}).to(tl.int64) + {start})"
            else:
                iv = _tile_index(g, i, s, info.idx64)
                off = f"{iv} * {s} + tl.arange(0, {s})"
            e = _expand(g.tmp(off, "o"), kept.index(d), rank)
        stride = info.strides[ax]
        if not (c == 0 and s == 1):
            terms.append(e if stride == "1" else f"{e} * {stride}")
        static = info.static[ax]
        lower_ok = (c is not None and c >= 0) or (c is None and g.nonneg(i))
        upper_ok = c is not None and static is not None and (int(c) + 1) * s <= static
        if not upper_ok:
            masks.append(f"({e} < {info.sizes[ax]})")
        if not lower_ok:
            masks.append(f"({e} >= 0)")
    ptrs = f"{info.ptr} + " + " + ".join(terms) if terms else info.ptr
    mask = " & ".join(masks) if masks else None
    sq_shape = tuple(shape[d] for d in kept)
    if full and sq_shape != tuple(shape):
        if not kept:  # every axis has size 1: scalar pointer and mask, broadcast
            ptrs = f"tl.broadcast_to({ptrs}, {list(shape)!r})"
            mask = None if mask is None else f"tl.broadcast_to({mask}, {list(shape)!r})"
        else:
            ptrs = _unsqueeze(f"({ptrs})", shape)
            mask = None if mask is None else _unsqueeze(f"({mask})", shape)
        sq_shape = tuple(shape)
    ptrs = g.tmp(ptrs, "p")
    mask = g.tmp(mask, "m") if mask is not None else None
    return ptrs, mask, sq_shape


def _squeezed_use(g: Gen, v) -> bool:
    """Whether every use of tile ``v`` drops its size-1 axes (``reshape`` to the squeezed shape,
    e.g. a (1, BN, D) tile of a 3-D array used as (BN, D)): then it is loaded without them.
    Otherwise it is loaded at its own rank, so Triton gives the load the layout its uses
    share (a squeezed load followed by ``x[None, :]`` costs a shared-memory layout
    conversion per use, e.g. per chunk of a row loop)."""
    sq = tuple(n for n in v.type.shape if n != 1)
    users = g.m.users(v)
    return bool(users) and all(u.name == "reshape" and tuple(u.attrs["shape"]) == sq for u in users)


def _unsqueeze(sq: str, shape) -> str:
    """The full-shape view of a tile computed without its size-1 axes (expand_dims: no data movement)."""
    kept = [s for s in shape if s != 1]
    if not kept:
        return f"tl.broadcast_to({sq}, {list(shape)!r})" if shape else sq
    if len(kept) == len(shape):
        return sq
    return f"{sq}[{', '.join(':' if s != 1 else 'None' for s in shape)}]"


def squeezed_source(g: Gen, v):
    """A value holding ``v``'s elements without its size-1 axes, if one exists already."""
    sq = g.squeezed.get(v.id)
    if sq is not None:
        return sq
    op = v.owner
    shape = tuple(v.type.shape)
    if op is not None and op.name == "reshape":
        src = op.operands[0]
        if tuple(src.type.shape) == tuple(s for s in shape if s != 1):
            return g.val(src)
    return None


_THROUGH = frozenset({"reshape", "astype", "permute", "broadcast", "broadcast_to", "bitcast"})
_ARITH = frozenset({"add", "sub", "mul", "truediv", "maximum", "minimum", "where", "negative", "exp", "exp2"})


def _feeds_mma(g: Gen, v, depth: int = 0) -> bool:
    """Whether tile ``v`` reaches a matrix product through shape changes and casts."""
    for u in g.m.users(v):
        if u.name == "mma":
            return True
        if u.name in _THROUGH and depth < 4 and _feeds_mma(g, u.result, depth + 1):
            return True
    return False


def _from_mma(g: Gen, v, depth: int = 0) -> bool:
    """Whether tile ``v`` is computed from a matrix product (an epilogue: casts, scaling, ...)."""
    op = v.owner
    if op is None or depth > 6:
        return False
    if op.name == "mma":
        return True
    if op.regions:  # a loop-carried or branch value: what the regions yield for it
        i = op.results.index(v)
        return any(_from_mma(g, r.ops[-1].operands[i], depth + 1) for r in op.regions
                   if r.ops and r.ops[-1].name == "yield" and len(r.ops[-1].operands) > i)
    if op.name in _THROUGH or op.name in _ARITH:
        return any(_from_mma(g, o, depth + 1) for o in op.operands if isinstance(o.type, TileType) and o.type.shape)
    return False


def _wants_descriptor(g: Gen, op) -> bool:
    """``allow_tma`` True or False decides; by default a tensor descriptor (TMA) is used where
    the tile passes through shared memory anyway: operands of matrix products and their results.
    Elsewhere (row kernels, transposes, gathers' outputs) plain loads and stores go straight
    between registers and memory, which measured faster (an 8192² fp16 transpose on an H100:
    2.9× torch with descriptors, 5.5× without)."""
    allow = op.attrs.get("allow_tma")
    if allow is not None:
        return bool(allow)
    return _feeds_mma(g, op.result) if op.name == "load" else _from_mma(g, op.operands[-1])


def _descriptor(g: Gen, op, info: ArrayInfo, shape, order, padding) -> str | None:
    """The hoisted tensor descriptor for this access, when legal for the specialisation and wanted."""
    f = g.m.facts
    rank = len(shape)
    if f.target < 90 or not f.tma or g.vectorized or not _wants_descriptor(g, op):
        return None
    af = info.facts
    d = info.dtype
    if not (2 <= rank <= 5) or tuple(order) != tuple(range(rank)) or d.is_bool or af.idx64:
        return None
    if not (af.ptr_align == 16 and af.unit[-1]
            and all(af.stride_div[a] * d.itemsize % 16 == 0 for a in range(rank - 1))):
        return None
    if shape[-1] * d.itemsize < 16 or any(s > 256 for s in shape):
        return None
    if padding not in (PaddingMode.UNDETERMINED, PaddingMode.ZERO) and not (padding is PaddingMode.NAN and d.is_float):
        return None
    pad = "nan" if padding is PaddingMode.NAN else "zero"
    g.m.uses_descriptors = True
    return g.hoist(("desc", info.name, tuple(shape), pad),
                   f"tl.make_tensor_descriptor({info.ptr}, shape=[{', '.join(info.sizes)}], "
                   f"strides=[{', '.join(info.strides[:-1] + ['1'])}], block_shape={list(shape)!r}, "
                   f"padding_option={pad!r})", "desc")


def _desc_offsets(g: Gen, index, shape) -> str:
    """The element coordinates (int32) of the tile at ``index``; run-time indices are clamped so
    that an index far past either end is still out of bounds (read as padding, never stored),
    not wrapped round onto a tile inside the tensor."""
    offs = []
    for i, s in zip(index, shape):
        c = g.const(i)
        offs.append(str(int(c) * s) if c is not None else (f"{_tile_index(g, i, s, False, True)} * {s}" if s != 1
                                                            else g.val(i)))
    return "[" + ", ".join(offs) + "]"


@lowers("load")
def load(g: Gen, op):
    info = g.array(op.operands[0])
    index = op.operands[1:]
    shape, order, padding = op.attrs["shape"], op.attrs["order"], op.attrs["padding"]
    squeeze = 1 in shape and _squeezed_use(g, op.result)
    if tuple(order) != tuple(range(len(shape))):
        permuted = _permuted_descriptor_load(g, op, info, index, shape, order, padding, squeeze)
        if permuted is not None:
            return permuted
    desc = _descriptor(g, op, info, shape, order, padding)
    if desc is not None:
        expr = f"{desc}.load({_desc_offsets(g, index, shape)})"
        if not squeeze:
            return expr
        # e.g. a (1, BM, BK) tile of a 3-D array used as (BM, BK): TMA fills shared memory and
        # the rank-reducing reshape is free (the product reads it from there)
        sq = g.tmp(f"tl.reshape({expr}, {[n for n in shape if n != 1]!r})", "q")
        g.squeezed[op.result.id] = sq
        return _unsqueeze(sq, shape)
    full = len(shape) > 1 and 1 in shape and not squeeze
    ptrs, mask, sq_shape = _tile_access(g, info, index, shape, order, full)
    pad = _PAD[padding]
    if pad == "0" and info.dtype.is_float and info.dtype.bits == 8:
        pad = "0.0"  # Triton casts no integer to float8
    expr = f"tl.load({ptrs})" if mask is None else f"tl.load({ptrs}, mask={mask}, other={pad})"
    if sq_shape == tuple(shape):
        return expr
    sq = g.tmp(expr, "q")
    g.squeezed[op.result.id] = sq
    return _unsqueeze(sq, shape)


def _permuted_descriptor_load(g: Gen, op, info: ArrayInfo, index, shape, order, padding, squeeze: bool) -> str | None:
    """A tile loaded in another axis order (``order``: tile axis d is array axis order[d]), e.g. the
    K tile of an attention kernel read transposed: the box is loaded through a tensor descriptor in
    the array's own order and permuted in registers; the product then reads it from shared memory
    transposed, as from any TMA load (pointer loads of the permuted box measured ~10% slower in
    NVIDIA's attention sample). None where no descriptor is legal or wanted."""
    rank = len(shape)
    inverse = [0] * rank
    for d, a in enumerate(order):
        inverse[a] = d
    box = tuple(shape[inverse[a]] for a in range(rank))
    desc = _descriptor(g, op, info, box, tuple(range(rank)), padding)
    if desc is None:
        return None
    expr = f"{desc}.load({_desc_offsets(g, [index[inverse[a]] for a in range(rank)], box)})"
    if not squeeze:
        return f"tl.permute({expr}, {tuple(order)!r})"
    kept = [d for d in range(rank) if shape[d] != 1]  # tile axes kept, in tile order
    axes = sorted(order[d] for d in kept)  # their array axes, in array order
    perm = tuple(axes.index(order[d]) for d in kept)
    sq = g.tmp(f"tl.reshape({expr}, {[box[a] for a in axes]!r})", "q")
    if perm != tuple(range(len(perm))):
        sq = g.tmp(f"tl.permute({sq}, {perm!r})", "q")
    g.squeezed[op.result.id] = sq
    return _unsqueeze(sq, shape)


@lowers("store")
def store(g: Gen, op):
    info = g.array(op.operands[0])
    index, tile = op.operands[1:-1], op.operands[-1]
    shape, order = tile.type.shape, op.attrs["order"]
    val = squeezed_source(g, tile) if 1 in shape else None
    desc = _descriptor(g, op, info, shape, order, PaddingMode.ZERO)
    if desc is not None:
        full = g.val(tile) if val is None else f"tl.reshape({val}, {list(shape)!r})"
        return f"{desc}.store({_desc_offsets(g, index, shape)}, {full})"
    # a tile computed at its own rank is stored at its rank (no reshape: it would cost a layout
    # conversion); one that has a squeezed source is stored from that
    ptrs, mask, sq_shape = _tile_access(g, info, index, shape, order, full=val is None and len(shape) > 1)
    if val is None:
        val = g.val(tile)
        if sq_shape != tuple(shape):
            val = f"tl.reshape({val}, {list(sq_shape)!r})" if sq_shape else f"tl.reshape({val}, [])"
    return f"tl.store({ptrs}, {val})" if mask is None else f"tl.store({ptrs}, {val}, mask={mask})"


# ---------------------------------------------------------------------------------- element-wise

def _element_access(g: Gen, info: ArrayInfo, index, extra_mask=None, full_shape=None):
    """(pointers broadcast to ``full_shape``, validity mask) for element index tiles."""
    terms, masks = [], []
    for ax, i in enumerate(index):
        iv = g.val(i)
        if info.idx64:
            iv = f"{iv}.to(tl.int64)"
        stride = info.strides[ax]
        terms.append(iv if stride == "1" else f"{iv} * {stride}")
        masks.append(f"({iv} < {info.sizes[ax]})")
        if not g.nonneg(i):
            masks.append(f"({iv} >= 0)")
    if extra_mask is not None:
        masks.append(g.val(extra_mask))
    idx_shape = dt.broadcast_shapes(*(i.type.shape for i in index)) if index else ()
    ptrs = f"{info.ptr} + " + " + ".join(terms) if terms else info.ptr
    if full_shape is not None and tuple(idx_shape) != tuple(full_shape):
        ptrs = f"tl.broadcast_to({ptrs}, {list(full_shape)!r})"
    ptrs = g.tmp(ptrs, "p")
    mask = g.tmp(" & ".join(masks), "m") if masks else None
    if mask is not None and full_shape is not None and full_shape:
        mask_shape = dt.broadcast_shapes(*(i.type.shape for i in index),
                                         *(() if extra_mask is None else (extra_mask.type.shape,)))
        if tuple(mask_shape) != tuple(full_shape):
            mask = g.tmp(f"tl.broadcast_to({mask}, {list(full_shape)!r})", "m")
    return ptrs, mask


def _padding_literal(value, d: dt.DType) -> str:
    if d.is_float:
        return py_literal(float(value), d)
    with np.errstate(all="ignore"):
        return py_literal(np.asarray(value).astype(d.np_dtype).item(), d)


@lowers("gather")
def gather(g: Gen, op):
    info = g.array(op.operands[0])
    n = info.ndim
    index = op.operands[1:1 + n]
    mask = op.operands[1 + n] if op.attrs["has_mask"] else None
    shape = op.result.type.shape
    ptrs, valid = _element_access(g, info, index, mask, shape)
    if valid is None:
        return f"tl.load({ptrs})"
    return f"tl.load({ptrs}, mask={valid}, other={_padding_literal(op.attrs['padding_value'], info.dtype)})"


@lowers("scatter")
def scatter(g: Gen, op):
    info = g.array(op.operands[0])
    n = info.ndim
    index = op.operands[1:1 + n]
    value = op.operands[1 + n]
    mask = op.operands[2 + n] if op.attrs["has_mask"] else None
    shape = dt.broadcast_shapes(*(v.type.shape for v in op.operands[1:]))
    ptrs, valid = _element_access(g, info, index, mask, shape)
    val = g.val(value)
    if tuple(value.type.shape) != tuple(shape):
        val = f"tl.broadcast_to({val}, {list(shape)!r})"
    return f"tl.store({ptrs}, {val})" if valid is None else f"tl.store({ptrs}, {val}, mask={valid})"


def _mem_kw(op) -> str:
    return f"sem={_SEM[op.attrs['memory_order']]!r}, scope={_SCOPE[op.attrs['memory_scope']]!r}"


def _bcast(g: Gen, v, shape) -> str:
    x = g.val(v)
    return x if tuple(v.type.shape) == tuple(shape) else f"tl.broadcast_to({x}, {list(shape)!r})"


_RELEASING = (MemoryOrder.RELEASE, MemoryOrder.ACQ_REL)
_ACQUIRING = (MemoryOrder.ACQUIRE, MemoryOrder.ACQ_REL)


def _atomic_line(g: Gen, op, call: str, keep: bool) -> str | None:
    """Emit one atomic with the block's memory order, not one lane's: a releasing atomic follows a
    block barrier (every lane's earlier writes are ordered before it, as whoever reads the flag
    expects); an acquiring tile atomic is followed by one (every lane's later accesses come
    after every lane's acquire; a 0-d atomic runs on one lane and Triton hands its result to
    the others through a barrier already). Conditions are uniform over a block, so every lane
    reaches each barrier. Returns the name holding the old values when ``keep``."""
    order = op.attrs["memory_order"]
    if order in _RELEASING:
        g.line("tl.debug_barrier()")
    old = g.tmp(call, "t") if keep else None
    if not keep:
        g.line(call)
    if order in _ACQUIRING and op.result.type.shape:
        g.line("tl.debug_barrier()")
    return old


_SHAPES = ("reshape", "broadcast", "broadcast_to")


def _arange_start(v: Value, depth: int = 0) -> tuple[int, Value | None] | None:
    """(start, scalar or None) where 1-D int32 ``v`` is ``scalar + arange(n, start=start)`` (step 1,
    every value int32: narrower or wider index types wrap or compare differently)."""
    op = v.owner
    if op is None or depth > 4 or tile_type(v).dtype is not dt.int32:
        return None
    if op.name == "arange":
        return (op.attrs["start"], None) if op.attrs["step"] == 1 and isinstance(op.attrs["start"], int) else None
    if op.name == "add":
        for a, b in (op.operands, op.operands[::-1]):
            inner = _arange_start(a, depth + 1)
            src = b.owner
            while src is not None and src.name in _SHAPES and tile_type(src.operands[0]).shape:
                src = src.operands[0].owner
            scalar = src.operands[0] if src is not None and src.name in ("reshape", "broadcast") else None
            if (inner is not None and inner[1] is None and scalar is not None and tile_type(scalar).shape == ()
                    and tile_type(scalar).dtype is dt.int32):
                return inner[0], scalar
    return None


def _box_corner(g: Gen, index, shape) -> list[tuple[int, Value | None]] | None:
    """(start, scalar or None) per axis of the box that index tiles ``index`` address when each is
    ``scalar + arange`` along its own axis (a whole tile at some offset), else None."""
    corner = []
    for a, v in enumerate(index):
        s = tuple(v.type.shape)
        if len(s) != len(shape) or any(n != 1 for d, n in enumerate(s) if d != a) or s[a] != shape[a]:
            return None
        src = v
        while src.owner is not None and src.owner.name == "reshape" and len(src.type.shape) > 1:
            src = src.owner.operands[0]
        if len(src.type.shape) != 1:
            return None
        found = _arange_start(src)
        if found is None:
            return None
        corner.append(found)
    return corner


def _only_added(g: Gen, array) -> bool:
    """Whether the kernel's only accesses to ``array`` are relaxed atomic adds (and its shape)."""
    return all(u.name in ("array_dim", "array_stride")
               or (u.name == "atomic_rmw" and u.attrs["kind"] == "add" and not g.m.users(u.result))
               for u in g.m.users(array))


def _bulk_reduce(g: Gen, op, info: ArrayInfo, index, update) -> tuple[str, str | None] | None:
    """A relaxed atomic add of a whole tile, its result unused, to an array the kernel only adds
    into: one TMA bulk reduction from shared memory (``cp.reduce.async.bulk.tensor``) instead of
    an atomic per element (attention's dQ added up inside the dK/dV kernel: 16384 atomics per
    128x128 tile). Elements past the array's far edges are dropped by the TMA unit, as the element
    form masks them; a box starting below zero or at an innermost offset off 16 bytes stops the GPU
    (H200, session 13's red team), so those run the element form: (the bulk call, the run-time
    condition it needs or None). Inside a loop only the unconditional form is taken: Triton 3.6's
    sm_90 software pipeliner fails on a loop body holding the guarded branch (H200, session 14)."""
    shape = tuple(update.type.shape)
    if (op.attrs["kind"] != "add" or op.attrs["memory_order"] not in (MemoryOrder.WEAK, MemoryOrder.RELAXED)
            or op.attrs["memory_scope"] not in (MemoryScope.NONE, MemoryScope.DEVICE) or g.m.users(op.result)
            or update.type.dtype is not info.dtype or info.dtype.name not in ("float32", "float16", "bfloat16")
            or len(shape) < 2 or not _only_added(g, op.operands[0])):
        return None
    corner = _box_corner(g, index, shape)
    if corner is None:
        return None
    unit = 16 // info.dtype.itemsize  # elements in 16 bytes
    coords, checks = [], []
    for a, (start, scalar) in enumerate(corner):
        last = a == len(corner) - 1
        if scalar is not None and g.const(scalar) is not None:  # a constant offset: known here
            start, scalar = start + int(g.const(scalar)), None
        if scalar is None:  # a box past 2**31 is not one the element form's wrapped indices address
            if start < 0 or start + shape[a] > 2**31 or (last and start % unit):
                return None
            coords.append(str(start))
            continue
        c = f"({g.val(scalar)} + {start})" if start else g.val(scalar)
        coords.append(c)
        lo = g.bounds(scalar)[0]
        if lo is None or lo + start < 0:
            checks.append(f"({c} >= 0)")
        if last:
            checks.append(f"({c} % {unit} == 0)")
    if checks and g.m.in_loop(op):
        return None
    desc = _descriptor(g, op, info, shape, tuple(range(len(shape))), PaddingMode.ZERO)
    if desc is None:
        return None
    return f"{desc}.atomic_add([{', '.join(coords)}], {g.val(update)})", " & ".join(checks) or None


@lowers("atomic_rmw")
def atomic_rmw(g: Gen, op):
    info = g.array(op.operands[0])
    n = info.ndim
    index, update = op.operands[1:1 + n], op.operands[1 + n]
    bulk = _bulk_reduce(g, op, info, index, update)
    if bulk is not None:
        call, cond = bulk
        if cond is None:
            g.line(call)
            return None
        g.line(f"if {cond}:")  # uniform over the block: one branch or the other for the whole tile
        g.line(f"    {call}")
        g.line("else:")
        g.depth += 1
        _element_atomic(g, op, info, index, update)
        g.depth -= 1
        return None
    return _element_atomic(g, op, info, index, update)


def _element_atomic(g: Gen, op, info: ArrayInfo, index, update) -> str | None:
    shape = op.result.type.shape
    ptrs, valid = _element_access(g, info, index, None, shape)
    fn = f"tl.atomic_{op.attrs['kind']}"
    call = f"{fn}({ptrs}, {_bcast(g, update, shape)}, mask={valid or 'None'}, {_mem_kw(op)})"
    old = _atomic_line(g, op, call, keep=bool(g.m.users(op.result)))
    if old is None:
        return None
    return old if valid is None else f"tl.where({valid}, {old}, 0)"


@lowers("atomic_cas")
def atomic_cas(g: Gen, op):
    info = g.array(op.operands[0])
    n = info.ndim
    index = op.operands[1:1 + n]
    expected, desired = op.operands[1 + n], op.operands[2 + n]
    shape = op.result.type.shape
    ptrs, valid = _element_access(g, info, index, None, shape)
    exp, des = _bcast(g, expected, shape), _bcast(g, desired, shape)
    if valid is not None:  # dead lanes swap element 0 with itself
        ptrs = g.tmp(f"tl.where({valid}, {ptrs}, {info.ptr})", "p")
        exp = g.tmp(f"tl.where({valid}, {exp}, {des})", "t")
    old = _atomic_line(g, op, f"tl.atomic_cas({ptrs}, {exp}, {des}, {_mem_kw(op)})", keep=True)
    return old if valid is None else f"tl.where({valid}, {old}, 0)"
