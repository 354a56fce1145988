"""``ct.launch`` of an already compiled kernel on torch CUDA tensors and plain scalars, in one
pass over the arguments.

The key holds everything the checked path's decisions depend on: per tensor its exact type,
dtype, device, pointer alignment, shape and strides (so dtype and rank, hence the
specialisation, and the variant's facts); per scalar its type (and int32 range); per Constant
its type and value. A key seen after a checked launch maps to the compiled variant, so the
launch reads each tensor's attributes once and calls the C launcher (lean.py, or Triton's). Anything else
(other array types, NumPy scalars, huge grids, another current device) returns False and
takes the checked path.

Reading the arguments is most of the host cost of such a launch, so for the argument kinds of
the latest checked launch (which positions hold tensors, ints, floats, Constants) a function
is generated once that reads them without loops or intermediate lists; its keys are the same
as the generic reader's, so both find the same table entries. Where the lean launcher's module
is loaded (lean.py), its C ``Reader`` takes that role: the same keys and decisions, without
Python bytecode between the attribute reads (tests run every fast-path case on both).
"""
from __future__ import annotations

import math

from typing import Any

from ...runtime.launch import MAX_GRID_DIM, normalize_grid
from . import launcher as L
from . import lean

_GRID_YZ_LIMIT = 65535
_CONST_TYPES = frozenset({int, float, bool, str, type(None)})


def _kind(a, is_const: bool) -> str | None:
    t = type(a)
    if t is L._Tensor:
        return None if is_const else f"tensor{a.dim()}"
    if t is int:
        return "const" if is_const else "int"
    if t is float or t is bool:
        return "const" if is_const else t.__name__
    if is_const and (t is str or a is None):
        return "const"
    return None


def _specialised(kinds: tuple[str, ...], table: dict, generic) -> Any:
    """``fast(stream, grid, args)`` for one tuple of argument kinds (tensors with their rank):
    True when it launched, False on a missing entry or a condition only the checked path
    handles; arguments of other kinds go to ``generic``.

    The latest key and its entry are remembered (one tuple, replaced whole, so threads see a
    consistent pair): a launch like the previous one compares keys instead of hashing one. The
    grid is checked inline (1 to 3 Python ints, x up to 2**24 - 1, y and z up to 65535; anything
    else is the checked path's to accept or refuse). The lean launcher (a one-item prefix) is
    called with every argument in place, no tuple built (tensors of another rank than the
    learned one go to ``generic``)."""
    fast = lean.reader(table, kinds, generic, L._Tensor, _CONST_TYPES, L._cuda_get_device, L._get_stream,
                       L.stream_handle)
    if fast is not None:  # the same reader in C, where the lean launcher is loaded
        return fast
    n = len(kinds)
    names = [f"a{i}" for i in range(n)]
    guards, reads, keys, flat, placed, unpack = [], [], [], [], [], []
    tensors: list[int] = []
    for i, k in enumerate(kinds):
        a = names[i]
        if k.startswith("tensor"):
            rank = int(k[6:])
            guards.append(f"type({a}) is _T")
            read = (f"p{i} = {a}.data_ptr(); s{i} = {a}.shape; t{i} = {a}.stride(); "
                    f"k{i} = ({a}.dtype, {a}.get_device(), p{i} & 15, s{i}, t{i}); "
                    f"n{i} = {a}.is_neg()")
            for n_, j in enumerate(tensors[:4]):  # the same tensor passed again (x, x, out): read it once
                reads.append(f"{'el' if n_ else ''}if {a} is a{j}:")
                reads.append(f"    p{i}, s{i}, t{i}, k{i}, n{i} = p{j}, s{j}, t{j}, k{j}, n{j}")
            if tensors:
                reads.append("else:")
            reads.append(f"{'    ' if tensors else ''}{read}")
            tensors.append(i)
            keys.append(f"k{i}")
            flat.append(f"p{i}, *s{i}, *t{i}")
            sizes = [f"n{i}_{d}" for d in range(rank)]
            steps = [f"u{i}_{d}" for d in range(rank)]
            if rank:
                unpack.append(f"{', '.join(sizes)}, = s{i}")
                unpack.append(f"{', '.join(steps)}, = t{i}")
            else:
                unpack.append(f"() = s{i}")
            placed.append(", ".join([f"p{i}", *sizes, *steps]))
        elif k == "int":  # beyond int64 the checked path refuses it
            guards.append(f"type({a}) is int and -9223372036854775808 <= {a} < 9223372036854775808")
            keys.append(f"-2147483648 <= {a} < 2147483648")
            flat.append(a)
            placed.append(a)
        elif k in ("float", "bool"):
            guards.append(f"type({a}) is {k}")
            keys.append(k)
            flat.append(a)
            placed.append(a)
        else:  # a Constant: its type and value are part of the key (a zero float's sign too: 0.0 == -0.0)
            guards.append(f"type({a}) in _CONST")
            keys.append(f"((type({a}), {a}) if {a} != 0.0 or type({a}) is not float "
                        f"else (float, {a}, _sign(1.0, {a})))")
    lines = [
        "def fast(stream, grid, args):",
        "    global last",
        f"    if len(args) != {n}:",
        "        return generic(stream, grid, args)",
        f"    {', '.join(names)}{',' if n == 1 else ''} = args",
        *([f"    if not ({' and '.join(guards)}):", "        return generic(stream, grid, args)"] if guards else []),
        *(f"    {r}" for r in reads),
        *([f"    if {' or '.join(f'n{i}' for i in tensors)}:",  # lazy negative views: the checked path
           "        return generic(stream, grid, args)"] if tensors else []),
        f"    key = ({', '.join(keys)}{',' if n == 1 else ''})",
        "    seen, hit = last",
        "    if key != seen:",
        "        hit = table.get(key)",
        "        if hit is None:",
        "            return False",
        "        last = (key, hit)",
        "    if type(grid) is tuple:",
        "        n = len(grid)",
        "        if n == 1:",
        "            gx, = grid",
        "            gy = gz = 1",
        "        elif n == 2:",
        "            gx, gy = grid",
        "            gz = 1",
        "        elif n == 3:",
        "            gx, gy, gz = grid",
        "        else:",
        "            return False",
        "    elif type(grid) is int:",
        "        gx, gy, gz = grid, 1, 1",
        "    else:",
        "        return False",
        "    if not (type(gx) is int and type(gy) is int and type(gz) is int and "
        f"0 < gx <= {MAX_GRID_DIM} and 0 < gy <= {_GRID_YZ_LIMIT} and 0 < gz <= {_GRID_YZ_LIMIT}):",
        "        return False",
        "    call, prefix, device = hit",
        "    if device != current_device():",
        "        return False",
        "    if stream is None:",
        "        stream = get_stream(device)",
        "    elif type(stream) is not int:",
        "        stream = stream_handle(stream, device)",
        "    if len(prefix) == 1:",
        "        try:",
        *(f"            {u}" for u in unpack),
        "        except ValueError:  # another rank",
        "            return generic(stream, grid, args)",
        f"        call(gx, gy, gz, stream, prefix[0]{''.join(', ' + f for f in placed)})",
        "    else:",
        f"        call(gx, gy, gz, stream, *prefix{''.join(', ' + f for f in flat)})",
        "    return True",
    ]
    if not unpack:
        lines = [ln for ln in lines if ln not in ("        try:", "        except ValueError:  # another rank",
                                                     "            return generic(stream, grid, args)")]
    scope = {"_T": L._Tensor, "_CONST": _CONST_TYPES, "_sign": math.copysign, "table": table, "generic": generic,
             "last": (None, None),
             "current_device": L._cuda_get_device, "get_stream": L._get_stream, "stream_handle": L.stream_handle}
    exec(compile("\n".join(lines), "<safetile fast launch>", "exec"), scope)  # noqa: S102 - our own text
    return scope["fast"]


class FastPath:
    """The one-pass launch path of one kernel (see the module docstring). ``entry`` is what
    ``ct.launch`` calls: the reader generated for the latest argument kinds, or ``generic``."""

    __slots__ = ("consts", "table", "fast", "kinds", "entry")

    def __init__(self, kernel):
        self.consts = tuple(kernel.constant_params)
        self.table: dict[tuple, tuple] = {}
        self.fast = None
        self.kinds: tuple | None = None
        self.entry = self.generic

    def parts(self, args):
        """(key, flat kernel arguments) of any argument kinds, or None for ones it does not know."""
        key: list = []
        flat: list = []
        for is_const, a in zip(self.consts, args):
            t = type(a)
            if t is L._Tensor:
                if is_const or a.is_neg():  # a lazy negative view: its memory does not hold its values
                    return None
                ptr = a.data_ptr()
                shape = a.shape
                strides = a.stride()
                key.append((a.dtype, a.get_device(), ptr & 15, shape, strides))
                flat.append(ptr)
                flat += shape
                flat += strides
            elif t is int:
                if is_const:
                    key.append((t, a))
                elif not -(2**63) <= a < 2**63:
                    return None  # the checked path refuses it
                else:
                    key.append(-2147483648 <= a < 2147483648)
                    flat.append(a)
            elif t is float or t is bool:
                # a zero Constant keys its sign too (0.0 == -0.0, and each compiles to its own kernel)
                key.append(t if not is_const else (t, a, math.copysign(1.0, a)) if t is float and a == 0.0 else (t, a))
                if not is_const:
                    flat.append(a)
            elif is_const and (t is str or t is type(None)):
                key.append((t, a))
            else:
                return None
        return tuple(key), flat

    def learn(self, v, grid3, args) -> None:
        """Remember the variant a checked launch with these arguments ran."""
        p = self.parts(args)
        if p is None or grid3[1] > _GRID_YZ_LIMIT or grid3[2] > _GRID_YZ_LIMIT:
            return
        if len(self.table) >= 1024:
            self.table.clear()
        self.table[p[0]] = (v.call, v.prefix, L._current_device())
        kinds = tuple(_kind(a, c) for a, c in zip(args, self.consts))
        known = tuple(k for k in kinds if k is not None)
        if known != self.kinds and len(known) == len(kinds):
            self.fast, self.kinds = _specialised(known, self.table, self.generic), known
            self.entry = self.fast

    def __call__(self, stream, grid, args) -> bool:
        return (self.fast or self.generic)(stream, grid, args)

    def generic(self, stream, grid, args) -> bool:
        """The reader for arguments of any kinds (a loop over them)."""
        if len(args) != len(self.consts):
            return False
        p = self.parts(args)
        if p is None:
            return False
        hit = self.table.get(p[0])
        if hit is None:
            return False
        call, prefix, device = hit
        gx, gy, gz = normalize_grid(grid)
        if gy > _GRID_YZ_LIMIT or gz > _GRID_YZ_LIMIT or device != L._current_device():
            return False
        if stream is None:
            stream = L._get_stream(device)
        elif type(stream) is not int:
            stream = L.stream_handle(stream, device)
        call(gx, gy, gz, stream, *prefix, *p[1])
        return True
