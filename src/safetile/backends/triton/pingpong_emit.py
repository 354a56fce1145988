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
from .pingpong import _REDUCTIONS, _TILE_SHAPE_OPS, HALF, Plan, _scalar_op, dead_loop, plan

_HEADER = """\
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
"""
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


def _slot(t: str, slots: int) -> tuple[str, str]:
    """(ring slot, barrier phase) of block ``t`` in a ring of ``slots``."""
    return f"({t}) % {slots}", f"(({t}) // {slots}) & 1"


class _Kernel:
    """One kernel's Gluon source. Names: row tile i ``_st_q{i}[sd]`` (shared buffer, descriptor),
    column tile i ``_st_k{i}[sdfe]`` (ring, descriptor, full and empty barriers), stored tile i
    ``_st_o{i}[sd]``, carried value k ``_st_v{k}``."""

    def __init__(self, fn: Function, facts: Facts, p: Plan):
        self.fn, self.facts, self.p = fn, facts, p
        self.m = Module(fn, facts)
        self.top = GluonGen(self.m)
        self.params, self.sig, self.attrs = kernel_params(fn, facts, self.m, self.top)
        self.at = fn.body.ops.index(p.loop)

    # -------------------------------------------------------------- checks
    def _accesses(self) -> list[tuple[str, Op, tuple[int, int], PaddingMode]]:
        """(name, op, box, padding) of every tile the TMA unit moves."""
        p = self.p
        out = [(f"_st_q{i}", ld, (HALF, p.d), ld.attrs["padding"]) for i, ld in enumerate(p.row_tiles)]
        out += [(f"_st_k{i}", ld, tuple(ld.attrs["shape"]), ld.attrs["padding"]) for i, ld in enumerate(p.cols)]
        out += [(f"_st_o{i}", st, (HALF, tile_type(st.operands[-1]).shape[1]), PaddingMode.ZERO)
                for i, st in enumerate(p.stores)]
        return out

    def _descriptors_legal(self) -> bool:
        """Every tile access takes a tensor descriptor where codegen.py would make one (asked of a
        throwaway Gen: it writes the Triton form of each descriptor it would make)."""
        g = Gen(self.m)
        for _, op, box, pad in self._accesses():
            full = (self.p.bm, box[1]) if box[0] == HALF else box
            if _descriptor(g, op, g.array(op.operands[0]), full, (0, 1), pad) is None:
                return False
        return True

    # -------------------------------------------------------------- pieces
    def _descriptor(self, name: str, op: Op, block: tuple[int, int]) -> str:
        info = self.m.arrays[op.operands[0].id]
        row_bytes = block[1] * info.dtype.itemsize
        swizzle = next(w for w in (128, 64, 32) if row_bytes % w == 0)
        layout = f"gl.NVMMASharedLayout(swizzle_byte_width={swizzle}, element_bitwidth={info.dtype.bits}, rank=2)"
        strides = info.strides[:-1] + ["1"]
        return (f"    {name} = tma.make_tensor_descriptor({info.ptr}, [{', '.join(info.sizes)}], "
                f"[{', '.join(strides)}], {list(block)!r}, {layout})")

    def _partition_gen(self, rows: frozenset = frozenset()) -> GluonGen:
        g = GluonGen(self.m, rows)
        g.names.update(self.top.names)
        return g

    def _loop_bounds(self, g: Gen) -> tuple[str, str]:
        lo, hi, step = self.p.loop.operands[:3]
        self.m.iv_range[self.p.loop.regions[0].args[0].id] = (lo, hi, step)
        return g.lit(lo), g.lit(step)

    # -------------------------------------------------------------- the producer
    def producer(self) -> list[str]:
        p = self.p
        g = self._partition_gen()
        body = p.loop.regions[0]
        lo, step = self._loop_bounds(g)
        rows = [_coords(g, ld.operands[1:], (p.bm, p.d), f"_st_c * {HALF}") for ld in p.row_tiles]
        g.line(f"for _st_c in gl.static_range({p.groups}):")
        nbytes = " + ".join(f"_st_q{i}d.block_type.nbytes" for i in range(len(p.row_tiles)))
        g.line(f"    mbarrier.expect(_st_qb.index(_st_c), {nbytes})")
        for i, r in enumerate(rows):
            g.line(f"    tma.async_copy_global_to_shared(_st_q{i}d, {r}, _st_qb.index(_st_c), _st_q{i}s.index(_st_c))")
        g.line("for _st_t in range(_st_n):")
        g.depth += 1
        g.line(f"_st_j = {lo} + _st_t * {step}")
        g.names[body.args[0].id] = "_st_j"
        needed = _slice(body, [i for ld in p.cols for i in ld.operands[1:]])
        for op in body.ops:
            if id(op) in needed:
                g.op(op)
        for i, ld in enumerate(p.cols):
            slot, phase = _slot("_st_t", p.slots(i))
            g.line(f"mbarrier.wait(_st_k{i}e.index({slot}), {phase} ^ 1, pred=_st_t >= {p.slots(i)})")
            g.line(f"mbarrier.expect(_st_k{i}f.index({slot}), _st_k{i}d.block_type.nbytes)")
            box = _coords(g, ld.operands[1:], tuple(ld.attrs["shape"]))
            g.line(f"tma.async_copy_global_to_shared(_st_k{i}d, {box}, _st_k{i}f.index({slot}), "
                   f"_st_k{i}s.index({slot}))")
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
            if op in p.row_vecs:
                self._vec_load(g, h[id(op)], row=True)
            elif op not in p.row_tiles and not _scalar_op(op):
                g.op(h[id(op)])
        loop = h[id(p.loop)]
        body = loop.regions[0]
        iv, *args = body.args
        yields = body.results
        inits = loop.operands[3:]
        others = [k for k in range(len(args)) if k not in p.acc_index]
        accs = [h[id(a)] for a in p.accs]
        skip = set(map(id, p.cols + p.perms + p.firsts + p.accs)) | p.stage_c
        stage_b = [h[id(op)] for op in p.loop.regions[0].ops if id(op) not in skip and op.name != "yield"]
        stage_c = [h[id(op)] for op in p.loop.regions[0].ops if id(op) in p.stage_c]
        vecs = {id(h[id(op)]) for op in p.col_vecs}
        # what the loop carries besides the accumulators: the kernel's values (by index), and each
        # accumulating product's A and C operands (keys -1-n and acc_index[n])
        values = [yields[k] for k in others] + [a.operands[0] for a in accs] + [a.operands[2] for a in accs]
        names = ([f"_st_v{k}" for k in others] + [f"_st_x{n}" for n in range(len(accs))]
                 + [f"_st_a{n}" for n in range(len(accs))])
        keys = others + [-1 - n for n in range(len(accs))] + list(p.acc_index)
        for k in p.acc_index:
            carried.setdefault(k, "_st_OL")
        for n in range(len(accs)):  # A operands in the products' operand layout before the turn
            carried.setdefault(-1 - n, "_st_PL")
        uses = {i: p.last_use(i) for i in range(len(p.cols))}
        first_cols = sorted({p.col_of(f) for f in p.firsts})
        acc_cols = [p.col_of(a) for a in p.accs]

        def want(key: int, v: Value) -> str | None:
            tag = carried.get(key) or g.tags.get(v.id)
            return tag if tag is not None or not final else _default_layout(tile_type(v).shape, p)

        g.names[iv.id] = "_st_j"
        for i in range(len(p.row_tiles)):
            g.line(f"_st_q{i} = _st_q{i}s.index(C)")
        g.line(f"_st_zero = gl.zeros([{HALF}, {p.bn}], gl.float32, _st_SL)")
        g.line("mbarrier.wait(_st_qb.index(C), 0)")
        g.line("if _st_n > 0:")
        g.depth += 1
        fnames = [f"_st_s{n}" for n in range(len(p.firsts))]
        pnames = [f"_st_pv{n}" for n in range(len(accs))]

        def wait_full(i: int, t: str) -> None:
            slot, phase = _slot(t, p.slots(i))
            g.line(f"mbarrier.wait(_st_k{i}f.index({slot}), {phase})")

        def issue_accs(t: str) -> None:
            """The accumulating products of block ``t`` (their column tiles waited for)."""
            for i in sorted(set(acc_cols)):
                wait_full(i, t)
            for n, i in enumerate(acc_cols):
                g.line(f"{pnames[n]} = warpgroup_mma(_st_x{n}, _st_k{i}s.index({_slot(t, p.slots(i))[0]}), _st_a{n}, "
                       "is_async=True)")

        def wait(targets: list[str], outstanding: int) -> None:
            lhs = targets[0] if len(targets) == 1 else ", ".join(targets)
            g.line(f"{lhs} = warpgroup_mma_wait(num_outstanding={outstanding}, deps=({', '.join(targets)},))")

        def release(t: str, stage: str) -> None:
            for i, use in uses.items():
                if use == stage:
                    g.line(f"mbarrier.arrive(_st_k{i}e.index({_slot(t, p.slots(i))[0]}), count=1)")

        def scores(t: str, pending: bool) -> None:
            g.line(f"mbarrier.wait(_st_turn.index(C), ({t}) & 1)")
            for i in first_cols:
                wait_full(i, t)
            for n, f in enumerate(p.firsts):
                row, col = p.row_tiles.index(f.operands[0].owner), p.col_of(f)
                g.line(f"{fnames[n]} = warpgroup_mma(_st_q{row}, _st_k{col}s.index({_slot(t, p.slots(col))[0]})"
                       ".permute((1, 0)), _st_zero, use_acc=False, is_async=True)")
            if pending:  # block t-1's accumulating products, in the same turn
                issue_accs(f"{t} - 1")
            g.line(f"mbarrier.arrive(_st_turn.index((C + 1) % {p.groups}), count=1)")
            wait(fnames, len(accs) if pending else 0)
            release(t, "first")
            for f, name in zip(p.firsts, fnames):
                g.names[f.result.id] = name
                g.tags[f.result.id] = "_st_SL"

        def softmax() -> None:
            for op in stage_b:
                if id(op) in vecs:
                    self._vec_load(g, op, row=False)
                else:
                    g.op(op)

        def operands_a() -> dict[int, str]:
            """The next products' A operands in their layout, while this group's products run."""
            return {-1 - n: g.as_layout(a.operands[0], want(-1 - n, a.operands[0])) for n, a in enumerate(accs)}

        def operand(results: list[str], steady: bool, ready: dict[int, str]) -> None:
            """The accumulating products' C operands from the accumulators, then every carried value
            renamed at once (through temporaries: one may be another's previous value)."""
            for k, r in zip(p.acc_index, results):
                g.names[args[k].id] = r
                g.tags[args[k].id] = "_st_OL"
            for op in stage_c:
                g.op(op)
            if steady and not final:
                for key, v in zip(keys, values):
                    carried[key] = carried.get(key) or g.tags.get(v.id)
            new = [ready.get(key) or g.as_layout(v, want(key, v)) for key, v in zip(keys, values)]
            temps = [self.m.fresh("_st_y") for _ in new]
            for t, value in zip(temps, new):
                g.line(f"{t} = {value}")
            for name, t in zip(names, temps):
                g.line(f"{name} = {t}")
            for k in others:
                g.names[args[k].id] = f"_st_v{k}"
                g.tags[args[k].id] = want(k, yields[k])

        g.line(f"_st_j = {lo}")
        scores("0", False)
        for k in others:
            g.names[args[k].id] = g.val(inits[k])
            g.tags[args[k].id] = g.tags.get(inits[k].id)
        softmax()
        operand([g.as_layout(inits[k], "_st_OL") for k in p.acc_index], False, operands_a())
        g.line("for _st_t in range(1, _st_n):")
        g.depth += 1
        g.line(f"_st_j = {lo} + _st_t * {step}")
        scores("_st_t", True)
        softmax()  # while the other groups' products run, then this group's of block t-1 complete
        ready = operands_a()
        done = [f"_st_acc{n}" for n in range(len(accs))]
        g.line(f"{done[0] if len(done) == 1 else ', '.join(done)} = warpgroup_mma_wait(num_outstanding=0, "
               f"deps=({', '.join(pnames)},))")
        release("_st_t - 1", "acc")
        operand(done, True, ready)
        g.depth -= 1
        issue_accs("_st_n - 1")
        results = [f"_st_r{k}" for k in p.acc_index]
        g.line(f"{results[0] if len(results) == 1 else ', '.join(results)} = warpgroup_mma_wait(num_outstanding=0, "
               f"deps=({', '.join(pnames)},))")
        for k in others:
            g.line(f"_st_r{k} = _st_v{k}")
        g.depth -= 1
        g.line("else:")
        g.depth += 1
        for k in range(len(args)):
            g.line(f"_st_r{k} = {g.as_layout(inits[k], want(k, yields[k]))}")
        g.depth -= 1
        for k, r in enumerate(loop.results):
            g.names[r.id] = f"_st_r{k}"
            g.tags[r.id] = want(k, yields[k])
        for op in self.fn.body.ops[self.at + 1:]:
            if dead_loop(op):
                for init, r in zip(op.operands[3:], op.results):
                    g.names[r.id], g.tags[r.id] = g.val(init), g.tags.get(init.id)
            elif op in p.row_stores:
                self._row_store(g, h[id(op)])
            elif op not in p.stores and op.name != "yield":
                g.op(h[id(op)])
        for i, st in enumerate(p.stores):
            hs = h[id(st)]
            g.line(f"_st_o{i}s.index(C).store({g.val(hs.operands[-1])})")
        g.line("fence_async_shared()")
        for i, st in enumerate(p.stores):
            rows = _coords(g, h[id(st)].operands[1:-1], (p.bm, tile_type(st.operands[-1]).shape[1]), f"C * {HALF}")
            if i:  # in program order: two parameters may be one tensor (bulk copies are not ordered)
                g.line("tma.store_wait(pendings=0)")
            g.line(f"tma.async_copy_shared_to_global(_st_o{i}d, {rows}, _st_o{i}s.index(C))")
        g.line("tma.store_wait(pendings=0)")
        layouts = [f"    _st_SL: gl.constexpr = {_mma_layout(p.bn)}", f"    _st_OL: gl.constexpr = {_mma_layout(p.dv)}",
                   "    _st_PL: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=_st_OL, k_width=2)"]
        return layouts + g.hoisted + g.lines

    def _vector(self, g: GluonGen, op: Op, row: bool) -> tuple[str, str, str]:
        """(element offsets, layout, mask) of a 1-D access of one value per row (``row``: this
        consumer's rows) or per column of the scores."""
        info = self.m.arrays[op.operands[0].id]
        i = op.operands[1]
        n = self.p.bm if row else self.p.bn
        c = g.const(i)
        base = str(int(c) * n) if c is not None else f"{_tile_index(g, i, n, False)} * {n}"
        lanes = f"gl.arange(C * {HALF}, C * {HALF} + {HALF})" if row else f"gl.arange(0, {n})"
        tag = _sliced(1 if row else 0, "_st_SL")
        offs = g.tmp(f"gl.set_auto_layout({base} + {lanes}, {tag})", "o")
        mask = f"({offs} < {info.sizes[0]})"
        if not ((c is not None and c >= 0) or g.nonneg(i)):
            mask += f" & ({offs} >= 0)"
        stride = info.strides[0]
        ptrs = f"{info.ptr} + {offs}" + ("" if stride == "1" else f" * {stride}")
        return ptrs, tag, mask

    def _vec_load(self, g: GluonGen, op: Op, row: bool) -> None:
        """A 1-D load through pointers, in the scores' row (or column) slice layout."""
        ptrs, tag, mask = self._vector(g, op, row)
        g.names[op.result.id] = g.tmp(f"gl.load({ptrs}, mask={mask}, other=0)")
        g.tags[op.result.id] = tag

    def _row_store(self, g: GluonGen, op: Op) -> None:
        """This consumer's 64 values of a per-row vector, through pointers (masked at the ends)."""
        ptrs, tag, mask = self._vector(g, op, True)
        vec = op.operands[-1]
        g.line(f"gl.store({ptrs}, {g.as_layout(vec, tag)}, mask={mask})")

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
        descs = [self._descriptor(f"{name}d", op, box) for name, op, box, _ in self._accesses()]
        smem, shared = [], []
        for i, ld in enumerate(p.row_tiles):
            dtype = tl_dtype(self.m.arrays[ld.operands[0].id].dtype)
            smem.append(f"_st_q{i}s = gl.allocate_shared_memory({dtype}, [{p.groups}, {HALF}, {p.d}], "
                        f"_st_q{i}d.layout)")
        for i, ld in enumerate(p.cols):
            dtype = tl_dtype(self.m.arrays[ld.operands[0].id].dtype)
            rows, cols = ld.attrs["shape"]
            smem.append(f"_st_k{i}s = gl.allocate_shared_memory({dtype}, [{p.slots(i)}, {rows}, {cols}], "
                        f"_st_k{i}d.layout)")
        free = list(range(len(p.row_tiles)))
        for i, st in enumerate(p.stores):
            out = tile_type(st.operands[-1])
            same = [r for r in free if self.m.arrays[p.row_tiles[r].operands[0].id].dtype is out.dtype
                    and out.shape[1] == p.d]
            if same:  # a consumer's row tile buffer is free once its last product is done
                free.remove(same[0])
                smem.append(f"_st_o{i}s = _st_q{same[0]}s")
            else:
                smem.append(f"_st_o{i}s = gl.allocate_shared_memory({tl_dtype(out.dtype)}, [{p.groups}, {HALF}, "
                            f"{out.shape[1]}], _st_o{i}d.layout)")
        barriers = [("_st_qb", p.groups, 1), ("_st_turn", p.groups, 1)]
        barriers += [(f"_st_k{i}{kind}", p.slots(i), 1 if kind == "f" else p.groups)
                     for i in range(len(p.cols)) for kind in "fe"]
        for name, size, count in barriers:
            smem.append(f"{name} = gl.allocate_shared_memory(gl.int64, [{size}, 1], mbarrier.MBarrierLayout())")
            smem.append(f"for _st_i in gl.static_range({size}):")
            smem.append(f"    mbarrier.init({name}.index(_st_i), count={count})")
        smem.append("mbarrier.arrive(_st_turn.index(0), count=1)  # the first consumer takes the first turn")
        scalars = list(dict.fromkeys(self.params + [n for v, n in g.names.items()]))
        shared = [d.split(" = ")[0].strip() for d in descs] + [line.split(" = ")[0] for line in smem
                                                                 if " = " in line and not line.startswith(" ")]
        shared += ["_st_n", *scalars]
        producer, consumer = self.producer(), self.consumer()
        # each partition takes only what it reads: every argument is another value in each scope
        # that Triton's front end copies at every branch and loop (a third of its time otherwise)
        p_args, c_args = (", ".join(n for n in dict.fromkeys(shared) if n in names)
                          for names in map(_identifiers, (producer, consumer)))
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
