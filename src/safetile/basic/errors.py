"""Errors of the BASIC front end.

A ``BasicError`` names the BASIC line number, the column and the problem, and shows the
offending source line with a caret under the culprit::

    prog.bas:3:10: line 30: GOTO 500: there is no line 500
        30 GOTO 500
                ^^^

It is a ``safetile.errors.TileError`` (so callers catching tile compilation errors catch
it too). Several problems found in one program are reported together: ``errors`` lists
every one, ``str()`` renders them all.
"""
from __future__ import annotations

from ..errors import SourceLoc, TileError


class BasicError(TileError):
    """A problem in a BASIC program (syntax, declarations, types, control flow)."""

    def __init__(self, message: str, loc: SourceLoc | None = None, basic_line: int | None = None,
                 internal: bool = False):
        super().__init__(message, loc)
        self.basic_line = basic_line
        self.internal = internal
        self.errors: list[BasicError] = [self]

    @classmethod
    def collect(cls, errors: list[BasicError]) -> BasicError:
        """One error standing for several (the first one's fields, all of them rendered)."""
        if len(errors) == 1:
            return errors[0]
        first = errors[0]
        err = cls(first.message, first.loc, first.basic_line, any(e.internal for e in errors))
        err.errors = list(errors)
        return err

    def render_one(self) -> str:
        loc = self.loc
        where = ""
        if loc is not None:
            where = f"{loc.filename}:{loc.line}:{loc.col + 1}: "
        prefix = f"line {self.basic_line}: " if self.basic_line is not None else ""
        text = f"{where}{prefix}{self.message}"
        if loc is not None and loc.source_line is not None:
            src = loc.source_line.rstrip("\n")
            stripped = src.lstrip()
            indent = len(src) - len(stripped)
            start = max(loc.col - indent, 0)
            end = loc.end_col if loc.end_col is not None and loc.end_col > loc.col else loc.col + 1
            width = max(min(end, len(src)) - loc.col, 1)
            text += f"\n    {stripped}\n    {' ' * start}{'^' * width}"
        return text

    def __str__(self) -> str:
        return "\n".join(e.render_one() for e in self.errors)
