"""The Gluon source of a kernel matched by pingpong.py: a top function that makes the tensor
descriptors, shared buffers and barriers, then a producer warp and two consumer warp groups
(``gl.warp_specialize``). The consumers emit the kernel's own tile ops through the ordinary
lowerings (``GluonGen``) on a copy of the IR whose row axes are halved (``_halved``)."""
from __future__ import annotations

import math
import re

from ...ir.core import Block, Function, Op, Value, tile_type, walk
from ...ir.types import TileType
from ...ops.memory import PaddingMode
from .codegen import CODEGEN_VERSION, Facts, Gen, Generated, Module, kernel_name, kernel_params, py_literal, tl_dtype
from .memory import _descriptor, _tile_index
from .pingpong import _REDUCTIONS, _TILE_SHAPE_OPS, HALF, STAGES, Plan, _scalar_op, dead_loop, plan

_HEADER = """\
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
"""
# (name, arrivals: 0 for one per consumer, ring: a slot per block in flight, else one per consumer)
_BARRIERS = (("_st_qb", 1, False), ("_st_kf", 1, True), ("_st_ke", 0, True), ("_st_vf", 1, True),
             ("_st_ve", 0, True), ("_st_turn", 1, False))
# registers per thread of the worker partitions: consumers 2.., then the producer (the first
# consumer, the default partition, takes what is left)
_REGISTERS = {2: [232, 40], 4: [112, 112, 112, 24]}


def generate_pingpong(fn: Function, facts: Facts) -> Generated | None:
    """The Gluon source of ``fn`` with the ping-pong schedule, or None (not this loop shape, or a
    tile access no tensor descriptor can make). Raises (``Decline`` or anything else) where it
    cannot write one after all: codegen.generate then writes the kernel as usual."""
    p = plan(fn, facts)
    return None if p is None else _Kernel(fn, facts, p).generate()


def _sliced(axis: int, parent: str) -> str:
    """The layout of a vector along ``parent``'s other axis (a row vector: axis 1)."""
    return f"gl.SliceLayout({axis}, {parent})"


def _parent(tag: str) -> str | None:
    """The 2-D layout a ``_sliced`` layout was sliced from (None for any other layout)."""
    m = re.fullmatch(r"gl\.SliceLayout\(\d+, (.*)\)", tag)
    return m.group(1) if m else None


class GluonGen(Gen):
    """The ordinary lowerings, in a Gluon function: constants and aranges take Gluon's inferred
    layout, and where values of the two products' layouts meet in one op (the accumulator scaled
    by a row vector of the scores), the smaller operand is converted."""

    def __init__(self, module: Module, rows: frozenset = frozenset()):
        super().__init__(module)
        self.rows = rows
        self.tags: dict[int, str | None] = {}  # value id -> its layout (an expression), None: inferred

    @staticmethod
    def const_expr(c: tuple) -> str:
        value, d, shape = c
        text = py_literal(value, d)
        if d.is_float and d.bits < 32 and d.name != "float16":
            return f"gl.full({list(shape)!r}, {text}, gl.float32).to({tl_dtype(d)})"
        return f"gl.full({list(shape)!r}, {text}, {tl_dtype(d)})"

    def val(self, v: Value) -> str:
        """Tile constants are written where used: each use is its own value, free to take the
        layout of that use."""
        c = self.m.consts.get(v.id)
        if c is not None and c[2] != () and v.id not in self.names:
            return f"({self.const_expr(c)})"
        return super().val(v)

    def op(self, op: Op) -> None:
        if op.name == "arange":
            self._arange(op)
            return
        out = tile_type(op.result) if op.results else None
        if op.name in _TILE_SHAPE_OPS and out is not None and out.shape and tile_type(op.operands[0]).shape == ():
            # a scalar made a tile: Gluon broadcasts no scalar to a shape without a layout
            self.names[op.result.id] = (f"(gl.full({list(out.shape)!r}, {self.val(op.operands[0])}, "
                                        f"{tl_dtype(out.dtype)}))")
            return
        if op.name == "reshape" and out is not None and self._squeeze(op, out.shape):
            return
        saved = self._reconcile(op)
        super().op(op)
        for v, name in saved:
            self.names[v] = name
        self._tag(op)
        self._inline(op)

    def _inline(self, op: Op) -> None:
        """A tile in Gluon's inferred layout is written where used, not named: one named value used
        in two layouts (a row vector in the scores' mask and in the output's) cannot be inferred."""
        if len(op.results) != 1 or op.regions or self.tags.get(op.result.id) is not None:
            return
        r = op.result
        name = self.names.get(r.id)
        if not tile_type(r).shape or name is None or not self.lines:
            return
        head = "    " * self.depth + f"{name} = "
        if self.lines[-1].startswith(head) and len(self.lines[-1]) - len(head) < 300:
            self.names[r.id] = f"({self.lines.pop()[len(head):]})"

    def _squeeze(self, op: Op, shape: tuple) -> bool:
        """(n, 1) or (1, n) made (n,) in a product's layout: the slice of that layout, which the
        other row vectors are in (a plain reshape gives a layout no other value has)."""
        src = op.operands[0]
        parent = self.tags.get(src.id)
        before = tile_type(src).shape
        if parent is None or len(before) != 2 or len(shape) != 1 or 1 not in before:
            return False
        axis = before.index(1)
        tag = _sliced(axis, parent)
        self.names[op.result.id] = self.tmp(f"gl.convert_layout(tl.reshape({self.val(src)}, {list(shape)!r}), {tag})")
        self.tags[op.result.id] = tag
        return True

    def _arange(self, op: Op) -> None:
        """Gluon's ``arange``; on a row axis, this consumer's rows (``C``: its index)."""
        from .factories import arange
        n = op.attrs["size"]
        expr = arange(self, op)
        base = f"gl.arange(C * {n}, C * {n} + {n})" if (op.result.id, 0) in self.rows else f"gl.arange(0, {n})"
        self.names[op.result.id] = f"({expr.replace(f'tl.arange(0, {n})', base)})"

    def _reconcile(self, op: Op) -> list[tuple[int, str]]:
        """Convert operands whose layout differs from the largest tagged operand's; returns the
        names to restore afterwards."""
        tagged = [o for o in op.operands if self.tags.get(o.id) is not None]
        if len({self.tags[o.id] for o in tagged}) < 2:
            return []
        want = self._widest(tagged)
        saved = []
        for o in tagged:
            if self.tags[o.id] == want:
                continue
            saved.append((o.id, self.names[o.id]))
            src = o.owner
            if (src is not None and src.name == "reshape" and len(tile_type(src.operands[0]).shape) == 1
                    and self.tags.get(src.operands[0].id) is not None and len(tile_type(o).shape) == 2):
                # a row (or column) vector made 2-D: convert the vector, then expand it
                axis = 1 if tile_type(o).shape[1] == 1 else 0
                vec = self.tmp(f"gl.convert_layout({self.val(src.operands[0])}, {_sliced(axis, want)})")
                self.names[o.id] = f"{vec}[{':, None' if axis == 1 else 'None, :'}]"
            else:
                self.names[o.id] = self.tmp(f"gl.convert_layout({self.val(o)}, {want})")
        return saved

    def _if(self, op: Op) -> None:
        """Gen's branch, each result in one layout: the then-branch's (the else-branch's value is set
        or converted to it)."""
        if self.const(op.operands[0]) is not None:
            super()._if(op)
            return
        results = [self.m.fresh("r") for _ in op.results]
        self.line(f"if {self.val(op.operands[0])}:")
        want = self._branch_in(op.regions[0], results, None)
        self.line("else:")
        self._branch_in(op.regions[1], results, want)
        for r, n, t in zip(op.results, results, want):
            self.names[r.id], self.tags[r.id] = n, t

    def _branch_in(self, region: Block, results: list[str], want: list[str | None] | None) -> list[str | None]:
        self.depth += 1
        for o in region.ops[:-1]:
            self.op(o)
        ys = region.results
        tags = want or [self.tags.get(y.id) for y in ys]
        for r, y, t in zip(results, ys, tags):
            self.line(f"{r} = {self.as_layout(y, t)}")
        if not region.ops[:-1] and not ys:
            self.line("pass")
        self.depth -= 1
        return tags

    def _tag(self, op: Op) -> None:
        """The layout of ``op``'s results, from its operands'."""
        if not op.results or not op.operands or op.regions:
            return
        tagged = [o for o in op.operands if self.tags.get(o.id) is not None]
        tag: str | None = None
        if op.name in _REDUCTIONS:
            tag = self.tags.get(op.operands[0].id)
            if tag is not None and not op.attrs.get("keepdims"):
                tag = _sliced(op.attrs["axes"][0], tag)
        elif op.name == "reshape" and tagged:
            before, after = len(tile_type(op.operands[0]).shape), len(tile_type(op.result).shape)
            tag = self.tags[tagged[0].id]
            if before != after:  # a vector made 2-D is in its slice's parent; other reshapes: inferred
                tag = _parent(tag) if tag is not None and (before, after) == (1, 2) else None
        elif tagged:
            tag = self._widest(tagged)
        for r in op.results:
            self.tags[r.id] = tag

    def _widest(self, tagged: list[Value]) -> str:
        """The layout an op over operands of several layouts computes in: its largest operand's
        (the others are converted: a row vector rather than the tile it scales)."""
        tag = self.tags[max(tagged, key=lambda o: math.prod(tile_type(o).shape)).id]
        assert tag is not None  # callers pass tagged operands
        return tag

    def as_layout(self, v: Value, want: str | None) -> str:
        """``v`` in layout ``want`` (set where inferred, converted where another)."""
        have = self.tags.get(v.id)
        if want is None or have == want:
            return self.val(v)
        verb = "set_auto_layout" if have is None else "convert_layout"
        return self.tmp(f"gl.{verb}({self.val(v)}, {want})")


def _halved(block: Block, rows: frozenset, memo: dict[int, Value]) -> Block:
    """A copy of ``block`` whose row axes have ``HALF`` entries (one consumer's rows); values keep
    their ids, so names and constants carry over between the copy and the original."""
    def value(v: Value, owner: Op | None) -> Value:
        new = Value.__new__(Value)
        t = v.type
        if isinstance(t, TileType) and any((v.id, d) in rows for d in range(len(t.shape))):
            t = TileType(t.dtype, tuple(HALF if (v.id, d) in rows else n for d, n in enumerate(t.shape)))
        new.type, new.id, new.hint, new.owner = t, v.id, v.hint, owner
        memo[v.id] = new
        return new

    out = Block([value(a, None) for a in block.args])
    for op in block.ops:
        new = Op.__new__(Op)
        new.name, new.loc = op.name, op.loc
        new.operands = [memo.get(o.id, o) for o in op.operands]
        new.regions = [_halved(r, rows, memo) for r in op.regions]
        new.results = [value(r, new) for r in op.results]
        attrs = dict(op.attrs)
        if op.results and isinstance(op.result.type, TileType) and new.result.type != op.result.type:
            if "shape" in attrs:
                attrs["shape"] = tuple(tile_type(new.result).shape)
            if op.name == "arange":
                attrs["size"] = tile_type(new.result).shape[0]
        new.attrs = attrs
        out.ops.append(new)
    return out


def _coords(g: Gen, index: list[Value], shape: tuple, row_offset: str = "") -> str:
    """A TMA box's element coordinates (int32, clamped as codegen's), plus ``row_offset`` rows."""
    offs = []
    for i, s in zip(index, shape):
        c = g.const(i)
        offs.append(str(int(c) * s) if c is not None else f"{_tile_index(g, i, s, False, True)} * {s}")
    if row_offset:
        offs[0] = f"{offs[0]} + {row_offset}"
    return "[" + ", ".join(offs) + "]"


def _slot(t: str) -> tuple[str, str]:
    """(ring slot, barrier phase) of block ``t``."""
    return f"({t}) % {STAGES}", f"(({t}) // {STAGES}) & 1"


class _Kernel:
    """One kernel's Gluon source."""

    def __init__(self, fn: Function, facts: Facts, p: Plan):
        self.fn, self.facts, self.p = fn, facts, p
        self.m = Module(fn, facts)
        self.top = GluonGen(self.m)
        self.params, self.sig, self.attrs = kernel_params(fn, facts, self.m, self.top)
        self.at = fn.body.ops.index(p.loop)

    # -------------------------------------------------------------- checks
    def _descriptors_legal(self) -> bool:
        """Every tile access takes a tensor descriptor where codegen.py would make one (asked of a
        throwaway Gen: it writes the Triton form of each descriptor it would make)."""
        g = Gen(self.m)
        p = self.p
        for op, shape, pad in ((p.q, (p.bm, p.d), p.q.attrs["padding"]), (p.k, (p.bn, p.d), p.k.attrs["padding"]),
                               (p.v, (p.bn, p.dv), p.v.attrs["padding"]), (p.store, (p.bm, p.dv), PaddingMode.ZERO)):
            if _descriptor(g, op, g.array(op.operands[0]), shape, (0, 1), pad) is None:
                return False
        return True

    # -------------------------------------------------------------- pieces
    def _descriptor(self, name: str, op: Op, block: list[int]) -> str:
        info = self.m.arrays[op.operands[0].id]
        row_bytes = block[1] * info.dtype.itemsize
        swizzle = next(w for w in (128, 64, 32) if row_bytes % w == 0)
        layout = f"gl.NVMMASharedLayout(swizzle_byte_width={swizzle}, element_bitwidth={info.dtype.bits}, rank=2)"
        strides = info.strides[:-1] + ["1"]
        return (f"    {name} = tma.make_tensor_descriptor({info.ptr}, [{', '.join(info.sizes)}], "
                f"[{', '.join(strides)}], {block!r}, {layout})")

    def _partition_gen(self, rows: frozenset = frozenset()) -> GluonGen:
        g = GluonGen(self.m, rows)
        g.names.update(self.top.names)
        return g

    def _loop_bounds(self, g: Gen) -> tuple[str, str]:
        lo, step = self.p.loop.operands[0], self.p.loop.operands[2]
        self.m.iv_start[self.p.loop.regions[0].args[0].id] = lo
        return g.lit(lo), g.lit(step)

    # -------------------------------------------------------------- the producer
    def producer(self) -> list[str]:
        p = self.p
        g = self._partition_gen()
        body = p.loop.regions[0]
        lo, step = self._loop_bounds(g)
        rows = _coords(g, p.q.operands[1:], (p.bm, p.d), f"_st_c * {HALF}")
        g.line(f"for _st_c in gl.static_range({p.groups}):")
        g.line("    mbarrier.expect(_st_qb.index(_st_c), _st_qd.block_type.nbytes)")
        g.line(f"    tma.async_copy_global_to_shared(_st_qd, {rows}, _st_qb.index(_st_c), _st_qs.index(_st_c))")
        g.line("for _st_t in range(_st_n):")
        g.depth += 1
        g.line(f"_st_j = {lo} + _st_t * {step}")
        g.names[body.args[0].id] = "_st_j"
        needed = _slice(body, [i for ld in (p.k, p.v) for i in ld.operands[1:]])
        for op in body.ops:
            if id(op) in needed:
                g.op(op)
        for ring, ld, desc, shape in (("k", p.k, "_st_kd", (p.bn, p.d)), ("v", p.v, "_st_vd", (p.bn, p.dv))):
            slot, phase = _slot("_st_t")
            g.line(f"mbarrier.wait(_st_{ring}e.index({slot}), {phase} ^ 1, pred=_st_t >= {STAGES})")
            g.line(f"mbarrier.expect(_st_{ring}f.index({slot}), {desc}.block_type.nbytes)")
            g.line(f"tma.async_copy_global_to_shared({desc}, {_coords(g, ld.operands[1:], shape)}, "
                   f"_st_{ring}f.index({slot}), _st_{ring}s.index({slot}))")
        return g.hoisted + g.lines

    # -------------------------------------------------------------- the consumers
    def consumer(self) -> list[str]:
        """The consumer function. Generated twice: the first pass finds the layout each carried value
        takes in the steady-state loop, the second carries every value in that layout from the start
        (a Gluon loop-carried value keeps one type)."""
        carried: dict[int, str | None] = {}
        self._consumer(carried)
        return self._consumer(carried, final=True)

    def _consumer(self, carried: dict[int, str | None], final: bool = False) -> list[str]:
        p = self.p
        memo: dict[int, Value] = {}
        body_h = _halved(self.fn.body, p.rows, memo)
        h = {id(a): b for a, b in zip(walk(self.fn.body), walk(body_h))}
        g = self._partition_gen(p.rows)
        lo, step = self._loop_bounds(g)
        for op in self.fn.body.ops[:self.at]:
            if op is not p.q and not _scalar_op(op):
                g.op(h[id(op)])
        loop = h[id(p.loop)]
        body = loop.regions[0]
        iv, *args = body.args
        yields = body.results
        inits = loop.operands[3:]
        others = [k for k in range(len(args)) if k != p.acc]
        s_id, pv = p.s.result.id, h[id(p.pv)]
        stage_b = [h[id(op)] for op in p.loop.regions[0].ops
                   if op not in (p.k, p.kt, p.s, p.v, p.pv) and id(op) not in p.stage_c and op.name != "yield"]
        stage_c = [h[id(op)] for op in p.loop.regions[0].ops if id(op) in p.stage_c]
        # what the loop carries besides the accumulator: the kernel's values (by index), P, C's operand
        values = [yields[k] for k in others] + [pv.operands[0], pv.operands[2]]
        names = [f"_st_c{k}" for k in others] + ["_st_p", "_st_a"]
        keys = others + [-1, p.acc]
        carried.setdefault(p.acc, "_st_OL")

        def want(key: int, v: Value) -> str | None:
            tag = carried.get(key) or g.tags.get(v.id)
            return tag if tag is not None or not final else _default_layout(tile_type(v).shape, p)

        g.names[iv.id] = "_st_j"
        g.line("_st_q = _st_qs.index(C)")
        g.line(f"_st_zero = gl.zeros([{HALF}, {p.bn}], gl.float32, _st_SL)")
        g.line("mbarrier.wait(_st_qb.index(C), 0)")
        g.line("if _st_n > 0:")
        g.depth += 1

        def scores(t: str, pending: int) -> None:
            slot, phase = _slot(t)
            g.line(f"mbarrier.wait(_st_turn.index(C), ({t}) & 1)")
            g.line(f"mbarrier.wait(_st_kf.index({slot}), {phase})")
            g.line(f"_st_s = warpgroup_mma(_st_q, _st_ks.index({slot}).permute((1, 0)), _st_zero, use_acc=False, "
                   "is_async=True)")
            if pending:  # PV(t-1), in the same turn
                vslot, vphase = _slot(f"{t} - 1")
                g.line(f"mbarrier.wait(_st_vf.index({vslot}), {vphase})")
                g.line(f"_st_pv = warpgroup_mma(gl.convert_layout(_st_p, _st_PL), _st_vs.index({vslot}), _st_a, "
                       "is_async=True)")
            g.line(f"mbarrier.arrive(_st_turn.index((C + 1) % {p.groups}), count=1)")
            g.line(f"_st_s = warpgroup_mma_wait(num_outstanding={pending}, deps=(_st_s,))")
            g.line(f"mbarrier.arrive(_st_ke.index({slot}), count=1)")
            g.names[s_id] = "_st_s"
            g.tags[s_id] = "_st_SL"

        def softmax() -> None:
            for op in stage_b:
                g.op(op)

        def operand(acc: str, steady: bool) -> None:
            """C's operand from the accumulator ``acc``, then every carried value renamed at once
            (through temporaries: one may be another's previous value)."""
            g.names[args[p.acc].id] = acc
            g.tags[args[p.acc].id] = "_st_OL"
            for op in stage_c:
                g.op(op)
            if steady and not final:
                for key, v in zip(keys, values):
                    carried[key] = carried.get(key) or g.tags.get(v.id)
            new = [g.as_layout(v, want(key, v)) for key, v in zip(keys, values)]
            temps = [self.m.fresh("_st_y") for _ in new]
            for t, value in zip(temps, new):
                g.line(f"{t} = {value}")
            for name, t in zip(names, temps):
                g.line(f"{name} = {t}")
            for k in others:
                g.names[args[k].id] = f"_st_c{k}"
                g.tags[args[k].id] = want(k, yields[k])

        g.line(f"_st_j = {lo}")
        scores("0", 0)
        for k in others:
            g.names[args[k].id] = g.val(inits[k])
            g.tags[args[k].id] = g.tags.get(inits[k].id)
        softmax()
        operand(g.as_layout(inits[p.acc], "_st_OL"), False)
        g.line("for _st_t in range(1, _st_n):")
        g.depth += 1
        g.line(f"_st_j = {lo} + _st_t * {step}")
        scores("_st_t", 1)
        softmax()  # while the other group's pair runs, then this group's PV(t-1) completes
        g.line("_st_acc = warpgroup_mma_wait(num_outstanding=0, deps=(_st_pv,))")
        g.line(f"mbarrier.arrive(_st_ve.index({_slot('_st_t - 1')[0]}), count=1)")
        operand("_st_acc", True)
        g.depth -= 1
        vslot, vphase = _slot("_st_n - 1")
        g.line(f"mbarrier.wait(_st_vf.index({vslot}), {vphase})")
        g.line(f"_st_pv = warpgroup_mma(gl.convert_layout(_st_p, _st_PL), _st_vs.index({vslot}), _st_a, is_async=True)")
        g.line(f"_st_r{p.acc} = warpgroup_mma_wait(num_outstanding=0, deps=(_st_pv,))")
        for k in others:
            g.line(f"_st_r{k} = _st_c{k}")
        g.depth -= 1
        g.line("else:")
        g.depth += 1
        for k in range(len(args)):
            g.line(f"_st_r{k} = {g.as_layout(inits[k], want(k, yields[k]))}")
        g.depth -= 1
        for k, r in enumerate(loop.results):
            g.names[r.id] = f"_st_r{k}"
            g.tags[r.id] = want(k, yields[k])
        store = h[id(p.store)]
        for op in self.fn.body.ops[self.at + 1:]:
            if dead_loop(op):
                for init, r in zip(op.operands[3:], op.results):
                    g.names[r.id], g.tags[r.id] = g.val(init), g.tags.get(init.id)
            elif op in p.row_stores:
                self._row_store(g, h[id(op)])
            elif op is not p.store and op.name != "yield":
                g.op(h[id(op)])
        g.line("_st_o = _st_os.index(C)")
        g.line(f"_st_o.store({g.val(store.operands[-1])})")
        g.line("fence_async_shared()")
        rows = _coords(g, store.operands[1:-1], (p.bm, p.dv), f"C * {HALF}")
        g.line(f"tma.async_copy_shared_to_global(_st_od, {rows}, _st_o)")
        g.line("tma.store_wait(pendings=0)")
        layouts = [f"    _st_SL: gl.constexpr = {_mma_layout(p.bn)}", f"    _st_OL: gl.constexpr = {_mma_layout(p.dv)}",
                   "    _st_PL: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=_st_OL, k_width=2)"]
        return layouts + g.hoisted + g.lines

    def _row_store(self, g: GluonGen, op: Op) -> None:
        """This consumer's 64 values of a per-row vector, through pointers (masked at the end)."""
        info = self.m.arrays[op.operands[0].id]
        i, vec = op.operands[1], op.operands[-1]
        c = g.const(i)
        bm = self.p.bm
        base = str(int(c) * bm) if c is not None else f"{_tile_index(g, i, bm, False)} * {bm}"
        rows = g.tmp(f"{base} + gl.arange(C * {HALF}, C * {HALF} + {HALF})", "o")
        tag = g.tags.get(vec.id)
        if tag is not None:
            rows = g.tmp(f"gl.set_auto_layout({rows}, {tag})", "o")
        stride = info.strides[0]
        ptrs = f"{info.ptr} + {rows}" + ("" if stride == "1" else f" * {stride}")
        mask = f"({rows} < {info.sizes[0]})"
        if not ((c is not None and c >= 0) or g.nonneg(i)):
            mask += f" & ({rows} >= 0)"
        g.line(f"gl.store({ptrs}, {g.val(vec)}, mask={mask})")

    # -------------------------------------------------------------- the kernel
    def generate(self) -> Generated | None:
        if not self._descriptors_legal():
            return None
        p, g = self.p, self.top
        for op in self.fn.body.ops[:self.at]:
            if _scalar_op(op):
                g.op(op)
        lo, hi = (g.lit(v) for v in p.loop.operands[:2])
        step_op = p.loop.operands[2].owner
        assert step_op is not None  # plan() takes only constant steps
        step = int(step_op.attrs["value"])
        n = f"tl.maximum({hi} - {lo}, 0)"
        if g.const(p.loop.operands[0]) is not None and g.const(p.loop.operands[1]) is not None:
            n = str(max(int(g.const(p.loop.operands[1])) - int(g.const(p.loop.operands[0])), 0))
        g.line(f"_st_n = ({n} + {step - 1}) // {step}")
        q, o = self.m.arrays[p.q.operands[0].id], self.m.arrays[p.store.operands[0].id]
        descs = [self._descriptor("_st_qd", p.q, [HALF, p.d]), self._descriptor("_st_kd", p.k, [p.bn, p.d]),
                 self._descriptor("_st_vd", p.v, [p.bn, p.dv]), self._descriptor("_st_od", p.store, [HALF, p.dv])]
        smem = [f"_st_qs = gl.allocate_shared_memory({tl_dtype(q.dtype)}, [{p.groups}, {HALF}, {p.d}], _st_qd.layout)",
                f"_st_ks = gl.allocate_shared_memory({tl_dtype(q.dtype)}, [{STAGES}, {p.bn}, {p.d}], _st_kd.layout)",
                f"_st_vs = gl.allocate_shared_memory({tl_dtype(q.dtype)}, [{STAGES}, {p.bn}, {p.dv}], _st_vd.layout)"]
        if o.dtype is q.dtype and p.dv == p.d:
            smem.append("_st_os = _st_qs")  # each consumer's Q buffer is free once its last product is done
        else:
            smem.append(f"_st_os = gl.allocate_shared_memory({tl_dtype(o.dtype)}, [{p.groups}, {HALF}, {p.dv}], "
                        "_st_od.layout)")
        for name, arrivals, ring in _BARRIERS:
            size, count = (STAGES if ring else p.groups), (arrivals or p.groups)
            smem.append(f"{name} = gl.allocate_shared_memory(gl.int64, [{size}, 1], mbarrier.MBarrierLayout())")
            smem.append(f"for _st_i in gl.static_range({size}):")
            smem.append(f"    mbarrier.init({name}.index(_st_i), count={count})")
        smem.append("mbarrier.arrive(_st_turn.index(0), count=1)  # the first consumer takes the first turn")
        scalars = list(dict.fromkeys(self.params + [n for v, n in g.names.items()]))
        shared = ["_st_qd", "_st_kd", "_st_vd", "_st_od", "_st_qs", "_st_ks", "_st_vs", "_st_os",
                  *(b for b, _, _ in _BARRIERS), "_st_n", *scalars]
        producer, consumer = self.producer(), self.consumer()
        # each partition takes only what it reads: every argument is another value in each scope
        # that Triton's front end copies at every branch and loop (a third of its time otherwise)
        p_args, c_args = (", ".join(n for n in shared if n in _identifiers(body)) for body in (producer, consumer))
        name = kernel_name(self.fn)
        lines = [f"# generated by safetile (Triton backend v{CODEGEN_VERSION}, Gluon ping-pong) from kernel "
                 f"{self.fn.name!r}", _HEADER, "", "@gluon.jit", f"def {name}_producer({p_args}):", *producer, "",
                 "", "@gluon.jit", f"def {name}_consumer(C: gl.constexpr, {c_args}):", *consumer, "", "",
                 "@gluon.jit", f"def {name}({', '.join(self.params)}):"]
        if self.facts.pdl:
            lines += ["    _st_gdc_launch()", "    _st_gdc_wait()"]
        lines += g.hoisted + descs + g.lines + ["    " + s for s in smem]
        lines += ["    gl.warp_specialize(["]
        lines += [f"        ({name}_consumer, ({c}, {c_args}))," for c in range(p.groups)]
        lines += [f"        ({name}_producer, ({p_args},)),",
                  f"    ], {[4] * (p.groups - 1) + [1]}, {_REGISTERS[p.groups]})"]
        return Generated("\n".join(lines) + "\n", name, self.params, self.sig, self.attrs, False, True, gluon=True)


def _identifiers(lines: list[str]) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(lines)))


class Decline(Exception):
    """This kernel is not generated with the schedule after all (it is generated as written)."""


def _default_layout(shape: tuple, p: Plan) -> str | None:
    """A layout for a carried value that no product's layout reaches (Gluon carries no inferred
    layout through a loop or a branch): the scores' parent for their shapes, its row slice for a
    row vector."""
    if shape == ():
        return None
    if shape == (HALF,):
        return _sliced(1, "_st_SL")
    if shape == (HALF, p.bn):
        return "_st_SL"
    if shape == (HALF, p.dv):
        return "_st_OL"
    raise Decline(f"no layout for a carried tile of shape {shape}")


def _mma_layout(n: int) -> str:
    """A warp group's [64, n] product accumulator."""
    return f"gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, {n}, 16])"


def _slice(body: Block, values: list[Value]) -> set[int]:
    """ids of the ops of ``body`` that ``values`` are computed from."""
    inside = {id(op): op for op in body.ops}
    out: set[int] = set()
    work = list(values)
    while work:
        v = work.pop()
        op = v.owner
        if op is not None and id(op) in inside and id(op) not in out:
            out.add(id(op))
            work.extend(o for o in op.operands if isinstance(o.type, TileType))
    return out
