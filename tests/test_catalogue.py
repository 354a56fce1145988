"""The op catalogue is the spine: every op declared once, documented, and lowered on the CPU."""
from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import safetile as ct
import safetile.backends.cpu.lowerings  # noqa: F401 - registers every CPU lowering
from safetile.backends.cpu.executor import LOWERINGS
from safetile.ir.catalogue import OPS, declare

SRC = pathlib.Path(ct.__file__).parent
CONTROL = {"if", "for", "while", "yield"}  # walked by the executor itself


def test_catalogue_is_populated():
    for name in ("add", "load", "store", "mma", "reduce_sum", "gather", "atomic_rmw", "cumsum", "where"):
        assert name in OPS


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_has_cpu_lowering(name):
    if name in CONTROL:
        assert OPS[name].effect == "control"
        assert name not in LOWERINGS
    else:
        assert name in LOWERINGS, f"op {name!r} has no CPU lowering"
        assert callable(LOWERINGS[name])


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_documented(name):
    doc = OPS[name].doc
    assert isinstance(doc, str) and len(doc.strip()) >= 3, f"op {name!r} has no documentation"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_lives_in_its_family(name):
    """Each op names a family module under ``ops/`` and its CPU lowering sits in the matching
    ``backends/cpu/<family>.py``."""
    family = OPS[name].family
    assert (SRC / "ops" / f"{family}.py").is_file(), f"op {name!r}: no ops/{family}.py"
    if name not in CONTROL:
        module = LOWERINGS[name].__module__
        assert module == f"safetile.backends.cpu.{family}", \
            f"op {name!r} of family {family!r} is lowered in {module}"


def test_no_lowering_without_op():
    assert set(LOWERINGS) <= set(OPS)


def _declared_names(path: pathlib.Path) -> list[str]:
    """String-literal op names passed to ``declare(...)`` in one source file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "declare":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.append(node.args[0].value)
    return names


def test_no_op_declared_in_two_places():
    seen: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "catalogue.py":
            continue
        names = _declared_names(path) if "declare(" in path.read_text() else []
        where = str(path.relative_to(SRC))
        for name in names:
            assert name not in seen, f"op {name!r} declared in {seen[name]} and {where}"
            assert names.count(name) == 1, f"op {name!r} declared twice in {where}"
            seen[name] = where
    # every literal declaration is a live catalogue entry
    assert set(seen) <= set(OPS)


def test_redeclaring_an_op_is_rejected():
    with pytest.raises(RuntimeError, match="declared twice"):
        declare("add", "elementwise", "again", lambda types, attrs: [])
    assert OPS["add"].doc != "again"


def test_public_functions_are_documented():
    missing = []
    for name in dir(ct):
        obj = getattr(ct, name)
        if inspect.isfunction(obj) and obj.__module__.startswith("safetile.ops"):
            if not (obj.__doc__ or "").strip():
                missing.append(name)
    assert not missing, f"public tile functions without a docstring: {missing}"
