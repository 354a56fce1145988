"""Kernel source: finding a Python function's AST and mapping its nodes to file positions.

The whole defining file is parsed (once per file version) and the function's node is
found by its first line, so line and column numbers in errors are exact for kernels
defined anywhere: at module level, indented inside test functions, or as lambdas.

Source comes from ``linecache``, which also holds IPython/Jupyter cells, Python 3.13's
interactive prompt and anything registered there before ``exec``. A kernel defined by
``python -c`` is recovered from the command line (checked against the function's own
bytecode). Where no source can be found (the classic ``<stdin>`` prompt, ``exec`` of a plain
string), the decorators fail at once with the reason (``require_source``).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import sys
import types
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from ..errors import SourceLoc, TileSyntaxError
from ..locks import FORK_LOCKS

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


@dataclass
class ParsedFunction:
    """The AST of one Python function plus the file it lives in."""

    node: FunctionNode
    filename: str
    name: str
    lines: tuple[str, ...] = ()  # the source the node was parsed from

    def loc(self, node: ast.AST) -> SourceLoc:
        """The source location of ``node`` (a multi-line node is underlined to its first line's end)."""
        line: int = getattr(node, "lineno", 0) or getattr(self.node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        text = (self.lines[line - 1] if 0 < line <= len(self.lines) else linecache.getline(self.filename, line)) or None
        if end_line != line or end_col is None:
            end_col = len(text.rstrip("\n")) if text is not None else None
        return SourceLoc(self.filename, line, col, end_col, text, self.name)


class SourceIndex:
    """Parsed kernel sources, shared by every compilation and guarded by one lock: the
    files parsed (per file version) and the functions found in them (per code object)."""

    def __init__(self) -> None:
        self._lock = FORK_LOCKS.new()
        self._functions: dict[Any, ParsedFunction] = {}
        # per file: its lines when parsed, its AST, and the function nodes found so far by first line
        self._modules: dict[str, tuple[tuple[str, ...], ast.Module, dict[int, list[FunctionNode]]]] = {}

    def parse_function(self, fn: Callable) -> ParsedFunction:
        """Find and parse ``fn``'s definition (cached per code object)."""
        code = getattr(fn, "__code__", None)
        key = _key(fn)
        parsed = self._functions.get(key)
        if parsed is None:
            with self._lock:
                parsed = self._functions.get(key)
                if parsed is None:
                    parsed = self._functions[key] = self._parse(fn, code)
        return parsed

    def _parse(self, fn: Callable, code) -> ParsedFunction:
        name = code.co_name if code is not None else getattr(fn, "__name__", "<function>")
        filename = code.co_filename if code is not None else None
        lines = _file_lines(fn, filename)
        if lines is None:
            raise no_source_error(fn)
        assert filename is not None  # no file, no lines
        node = _find_node(self._functions_at(filename, lines, code.co_firstlineno), name, code)
        if node is None:
            raise TileSyntaxError(f"cannot find the definition of {name!r} in {filename}")
        return ParsedFunction(node, filename, name, lines)

    def _functions_at(self, filename: str, lines: tuple[str, ...], line: int) -> list[FunctionNode]:
        """The function and lambda nodes of the file whose definition starts on ``line``.

        The file is parsed once per version; the search descends only into nodes whose lines
        contain ``line`` (a first launch should not walk every node of a big file)."""
        cached = self._modules.get(filename)
        if cached is None or cached[0] != lines:
            try:
                module = ast.parse("".join(lines), filename)
            except SyntaxError as e:
                raise TileSyntaxError(f"cannot parse {filename}: {e.msg} (line {e.lineno})") from None
            cached = self._modules[filename] = (lines, module, {})
        _, module, found = cached
        nodes = found.get(line)
        if nodes is None:
            nodes = found[line] = _nodes_starting_at(module, line)
        return nodes


def _nodes_starting_at(module: ast.Module, line: int) -> list[FunctionNode]:
    nodes: list[FunctionNode] = []
    stack: list[ast.AST] = [module]
    while stack:
        for child in ast.iter_child_nodes(stack.pop()):
            start = getattr(child, "lineno", None)
            if start is None:  # arguments, comprehensions...: no position of their own
                stack.append(child)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                start = _first_line(child)
                if start == line:
                    nodes.append(child)
            if start <= line <= (getattr(child, "end_lineno", None) or start):
                stack.append(child)
    return nodes


def _key(fn: Callable) -> Any:
    """A function's cache key: its code object and file (code objects compare equal across files:
    two identical functions defined at the same line of two files must not share a source)."""
    code = getattr(fn, "__code__", None)
    return (code, code.co_filename) if code is not None else fn


SOURCES = SourceIndex()
parse_function = SOURCES.parse_function


def declaration_loc(fn: Callable, param: str | None = None) -> SourceLoc | None:
    """Where a declaration problem is: parameter ``param``'s annotation (or name), else the
    decorator line; None where the source cannot be found."""
    try:
        parsed = parse_function(fn)
    except Exception:  # noqa: BLE001 - no source: the message alone must do
        return None
    node = parsed.node
    args = node.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if a is not None and a.arg == param:
            return parsed.loc(a.annotation if a.annotation is not None else a)
    decorators = getattr(node, "decorator_list", None)
    return parsed.loc(decorators[0] if decorators else node)


def caller_loc() -> SourceLoc | None:
    """The line of the user's code that called into safetile (e.g. evaluating an annotation while
    Python runs a ``def``); the first frame outside the package."""
    frame: types.FrameType | None = sys._getframe(1)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    mutmut = os.sep + "mutmut" + os.sep  # mutation testing wraps every function of safe/ in a trampoline
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith(package)
                                 or mutmut in frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line) or None
    col = len(text) - len(text.lstrip()) if text else 0
    return SourceLoc(filename, line, col, len(text.rstrip("\n")) if text else None, text)


def require_source(fn: Callable) -> None:
    """Fail now, with the reason, if ``fn``'s source cannot be found (decorators call this, so a
    kernel typed where Python keeps no source fails where it is defined, not at its launch)."""
    code = getattr(fn, "__code__", None)
    if code is None or _key(fn) in SOURCES._functions:
        return
    if _file_lines(fn, code.co_filename) is None:
        raise no_source_error(fn)


def no_source_error(fn: Callable) -> TileSyntaxError:
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "<function>"))
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else None
    if filename == "<stdin>":
        why = "it was typed at the interactive prompt, which keeps no source (IPython, Jupyter and Python 3.13's " \
              "prompt do keep it)"
    elif filename == "<string>":
        why = "it was made by exec() of a string, which keeps no source"
    elif filename is None or filename.startswith("<"):
        why = f"its source ({filename}) is not in linecache"
    else:
        why = f"{filename} cannot be read"
    return TileSyntaxError(
        f"cannot read the source of {name!r}: {why}. Tile code is compiled from its source: define it in a .py "
        "file or a notebook cell, or register the text before exec: linecache.cache[name] = (len(src), None, "
        "src.splitlines(True), name); exec(compile(src, name, 'exec'), namespace)")


def _file_lines(fn: Callable, filename: str | None) -> tuple[str, ...] | None:
    if filename is None:
        return None
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, getattr(fn, "__globals__", None))
    if not lines and filename == "<string>":
        return _command_line_source(fn)
    if not lines:
        try:  # e.g. a file that moved: inspect knows other ways to find source
            src_lines, _ = inspect.findsource(fn)
            lines = src_lines
            linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
        except (OSError, TypeError):
            return None
    return tuple(lines)


def _command_line_source(fn: Callable) -> tuple[str, ...] | None:
    """The lines of ``python -c TEXT`` if ``fn`` was defined there: TEXT compiled again must hold a
    code object with ``fn``'s name, first line and bytecode (``exec`` of other strings shares the
    file name ``<string>``, so a name alone proves nothing)."""
    argv = getattr(sys, "orig_argv", None) or []
    code = fn.__code__
    try:
        text = argv[argv.index("-c") + 1]
        candidates = [compile(text, "<string>", "exec")]
    except (ValueError, IndexError, SyntaxError, TypeError):
        return None
    while candidates:
        c = candidates.pop()
        if c.co_name == code.co_name and c.co_firstlineno == code.co_firstlineno and c.co_code == code.co_code:
            return tuple(text.splitlines(True))
        candidates.extend(k for k in c.co_consts if inspect.iscode(k))
    return None


def _first_line(node: FunctionNode) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _find_node(nodes: list[FunctionNode], name: str, code) -> FunctionNode | None:
    if code is None:
        return None
    candidates = [n for n in nodes
                  if (isinstance(n, ast.Lambda) and name == "<lambda>") or getattr(n, "name", None) == name]
    if len(candidates) > 1 and name == "<lambda>":
        candidates = _lambda_by_position(candidates, code) or candidates
    return candidates[0] if candidates else None


def _lambda_by_position(candidates: list[FunctionNode], code) -> list[FunctionNode]:
    """Several lambdas start on one line: pick the one whose body holds the code's instructions."""
    spots = [(line, col) for line, _, col, _ in code.co_positions() if line is not None and col is not None]
    for node in candidates:
        assert isinstance(node, ast.Lambda)  # only lambdas are named <lambda>
        body = node.body
        start, end = (body.lineno, body.col_offset), (body.end_lineno, body.end_col_offset)
        if any(start <= spot <= end for spot in spots):
            return [node]
    return []
