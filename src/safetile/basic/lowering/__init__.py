"""Lowering an analysed BASIC program to the tile IR, in rooms with one job each:

``core`` (the Lowerer: state, parameters, run-time errors), ``values`` (constants, tiles,
conversions), ``exprs`` (operators), ``functions`` (built-ins, RND, DEF FN), ``strings`` and
``numtext`` (string tiles; STR$/VAL inside the kernel), ``printing`` (PRINT), ``statements``
(assignments, DATA, arrays, DIM, RANDOMIZE), ``flow`` (structured IF/FOR/WHILE) and
``machine`` (GOTO/GOSUB as a state machine).
"""
from __future__ import annotations

from ...errors import TileError
from ...ir.builder import building
from ...ir.catalogue import OPS
from ...ir.core import Block, Function, walk
from ...ir.verify import verify
from ..analyzer import Analysis
from ..errors import BasicError
from .core import Lowerer, param_name

__all__ = ["Lowerer", "lower", "param_name"]


def remove_dead_ops(fn: Function) -> None:
    """Drop pure ops whose results nobody uses (the lowering makes some speculatively).

    One backward sweep: an op's operands lose a use when it is dropped, so whole dead
    chains (and dead ops inside regions using outer values) go in the same pass."""
    uses: dict[int, int] = {}
    for op in walk(fn.body):
        for v in op.operands:
            uses[v.id] = uses.get(v.id, 0) + 1

    def sweep(block: Block) -> None:
        kept = []
        for op in reversed(block.ops):
            if OPS[op.name].effect == "pure" and op.results and all(uses.get(r.id, 0) == 0 for r in op.results):
                for v in op.operands:
                    uses[v.id] -= 1
                continue
            for region in op.regions:
                sweep(region)
            kept.append(op)
        kept.reverse()
        block.ops = kept

    sweep(fn.body)


def lower(an: Analysis, name: str = "basic_main") -> tuple[Function, Lowerer]:
    """Lower an analysed program to a verified IR ``Function``."""
    low = Lowerer(an)
    with building(low.builder), low.builder.inside(low.body):
        try:
            low.prologue()
            low.lower_program()
        except BasicError:
            raise
        except TileError as e:
            raise low.error(e.message) from None
        except RecursionError:
            raise BasicError("the program is nested too deeply to compile", None) from None
        low.builder.emit("yield", [])
    # programs without tiles keep their values in one warp: scalar state is then consistent
    hints = {} if an.tile_vars or any(a.tile for a in an.arrays.values()) else {"num_warps": 1}
    fn = Function(name, low.params, low.body, hints, an.src.filename)
    remove_dead_ops(fn)
    try:
        verify(fn)
    except TileError as e:
        raise BasicError(f"internal error: {e.message}", e.loc, internal=True) from None
    return fn, low
