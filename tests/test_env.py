"""Settings are read in one place: ``safetile/runtime/env.py``. Every other module asks it, so
each variable has one parser, one default and one documented meaning (docs/architecture.md,
"Environment variables"). The source is read as an AST: a new ``os.environ`` or ``os.getenv``
anywhere else fails here."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

from safetile.runtime import env

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "safetile"
ENV = SRC / "runtime" / "env.py"
DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
_OS_NAMES = {"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"}


def environment_reads(text: str, filename: str = "<probe>") -> list[int]:
    """Lines that touch the process environment: ``os.environ``/``os.getenv`` (under any alias
    of ``os``) and names imported from ``os`` such as ``from os import environ``."""
    tree = ast.parse(text, filename)
    aliases = {"os"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "os"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _OS_NAMES \
                and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" \
                and any(a.name in _OS_NAMES for a in node.names):
            found.append(node.lineno)
    return sorted(found)


MODULES = sorted(p for p in SRC.rglob("*.py") if p != ENV)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_only_env_reads_the_environment(path):
    lines = environment_reads(path.read_text(), str(path))
    assert not lines, (f"{path.relative_to(SRC)} reads the environment at line(s) {lines}: "
                       "add an accessor to safetile/runtime/env.py and call it")


def test_the_scanner_sees_every_spelling():
    code = ("import os\nimport os as o\nfrom os import getenv\n"
            "a = os.environ.get('X')\nb = o.environ['Y']\nc = getenv('Z')\nd = os.getenv('W')\n"
            "e = os.path.join('a')\n")
    assert environment_reads(code) == [3, 4, 5, 7]
    assert environment_reads(ENV.read_text()), "env.py itself reads os.environ: the scanner must see it"


def test_every_variable_is_documented():
    """Each variable env.py reads appears in the documentation's table."""
    names = set(re.findall(r'"((?:SAFETILE|TRITON|CUDA_TILE)_[A-Z_]+|WORLD_SIZE|LOCAL_RANK)"', ENV.read_text()))
    table = DOCS.read_text().split("## Environment variables", 1)[1]
    missing = sorted(n for n in names if f"`{n}`" not in table)
    assert len(names) >= 15 and not missing, f"variables missing from docs/architecture.md's table: {missing}"


def test_accessors_parse_and_default(monkeypatch):
    for name in ("SAFETILE_DEBUG", "CUDA_TILE_COMPILER_TIMEOUT_SEC", "SAFETILE_DEVICE", "WORLD_SIZE",
                 "LOCAL_RANK", "SAFETILE_TMA", "SAFETILE_PDL", "SAFETILE_PIPELINE_LOOPS",
                 "SAFETILE_DISABLE_CACHE", "SAFETILE_DUMP_SOURCE", "SAFETILE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    assert (env.debug(), env.compiler_timeout_sec(), env.default_device(), env.world_size(),
            env.local_rank(), env.tma_enabled(), env.pdl_enabled(), env.pipeline_loops(),
            env.cache_disabled(), env.dump_source(), env.backend_override()) == \
        (False, None, "cpu", 1, None, True, True, 3, False, False, None)
    monkeypatch.setenv("SAFETILE_DEBUG", "1")
    monkeypatch.setenv("CUDA_TILE_COMPILER_TIMEOUT_SEC", "2.5")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setenv("SAFETILE_TMA", "off")
    monkeypatch.setenv("SAFETILE_PDL", "0")
    monkeypatch.setenv("SAFETILE_PIPELINE_LOOPS", "x")
    monkeypatch.setenv("SAFETILE_DISABLE_CACHE", "1")
    monkeypatch.setenv("SAFETILE_BACKEND", "triton")
    assert (env.debug(), env.compiler_timeout_sec(), env.world_size(), env.local_rank(), env.tma_enabled(),
            env.pdl_enabled(), env.pipeline_loops(), env.cache_disabled(), env.backend_override()) == \
        (True, 2.5, 4, 3, False, False, 0, True, "triton")
    monkeypatch.setenv("CUDA_TILE_COMPILER_TIMEOUT_SEC", "soon")
    assert env.compiler_timeout_sec() is None


def test_pinned_interpret_restores(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with env.pinned_triton_interpret(True):
        assert env.triton_interpret()
    assert not env.triton_interpret() and "TRITON_INTERPRET" not in env.child_environment()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(RuntimeError), env.pinned_triton_interpret(False):
        assert not env.triton_interpret()
        raise RuntimeError("the setting comes back after an error too")
    assert env.child_environment({"A_B": "c"})["TRITON_INTERPRET"] == "1"
    assert env.child_environment({"A_B": "c"})["A_B"] == "c"
