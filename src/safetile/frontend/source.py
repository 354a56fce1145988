"""Kernel source: parsing a Python function's AST and mapping nodes to file positions."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import SourceLoc, TileSyntaxError


@dataclass
class ParsedFunction:
    """The AST of one Python function plus what is needed to locate its nodes."""

    node: ast.FunctionDef | ast.Lambda
    filename: str
    first_line: int  # 1-based line of the def in the file
    indent: int  # columns removed by dedent
    name: str

    def loc(self, node: ast.AST) -> SourceLoc:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        col = getattr(node, "col_offset", 0) + self.indent
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_col is not None:
            end_col += self.indent
            if end_line is not None and end_line + self.first_line - 1 != line:
                end_col = None  # multi-line node: underline to the end of the first line
        text = linecache.getline(self.filename, line) or None
        if end_col is None and text is not None:
            end_col = len(text.rstrip("\n"))
        return SourceLoc(self.filename, line, col, end_col, text, self.name)


_cache: dict[Any, ParsedFunction] = {}


def parse_function(fn: Callable) -> ParsedFunction:
    """Parse ``fn``'s source (cached per code object)."""
    code = getattr(fn, "__code__", None)
    key = code if code is not None else fn
    if key in _cache:
        return _cache[key]
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise TileSyntaxError(f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}") from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != source else 0
    linecache.checkcache(filename)
    if not linecache.getline(filename, first_line):
        linecache.cache[filename] = (len(source), None, [""] * (first_line - 1) + lines, filename)
    try:
        module = ast.parse(dedented)
    except SyntaxError as e:
        raise TileSyntaxError(f"cannot parse kernel source: {e.msg}") from None
    node = _find_def(module, fn)
    parsed = ParsedFunction(node, filename, first_line, indent, getattr(fn, "__name__", "<lambda>"))
    _cache[key] = parsed
    return parsed


def _find_def(module: ast.Module, fn: Callable) -> ast.FunctionDef | ast.Lambda:
    name = getattr(fn, "__name__", "")
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            if isinstance(node, ast.AsyncFunctionDef):
                raise TileSyntaxError("tile functions cannot be async")
            return node
    lambdas = [n for n in ast.walk(module) if isinstance(n, ast.Lambda)]
    if name == "<lambda>" and len(lambdas) >= 1:
        if len(lambdas) > 1:
            argnames = tuple(fn.__code__.co_varnames[:fn.__code__.co_argcount])
            for lam in lambdas:
                if tuple(a.arg for a in lam.args.args) == argnames:
                    return lam
        return lambdas[0]
    raise TileSyntaxError(f"cannot find the definition of {name!r} in its source")
