"""The package's layers point one way: ir ← ops ← frontend ← runtime ← backends, with
safe, basic, models and the tools above. Every import in the source, lazy imports inside
functions included, is read from the AST and checked against that order, so a new import
circle fails here rather than at someone's first launch.

One module sits outside the order: ``runtime/env.py``, where every environment variable is read
(tests/test_env.py). The compiler front end reads settings too (``SAFETILE_DEBUG``, the compiler
timeout) and is below the runtime, so env.py is a leaf: it imports nothing from safetile, and any
layer may import it. Importing it loads only the empty ``runtime/__init__.py`` besides, so it
cannot close a circle."""
from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "safetile"

# lower number = lower layer; a module may import its own layer and the layers below
LAYERS = {
    "dtypes": 0, "errors": 0, "numerics": 0, "compilation": 0, "locks": 0,
    "ir": 1,
    "ops": 2,
    "frontend": 3,
    "runtime": 4,
    "backends": 5,
    "safe": 6, "basic": 6, "tune": 6, "models": 7, "integrations": 7, "cli": 8, "cli_tools": 8, "cli_generate": 8, "__init__": 8, "__main__": 8,
}


# modules that import nothing from safetile, so that any layer may import them
LEAVES = {("runtime", "env")}


def _layer_of(parts: tuple[str, ...]) -> tuple[str, int]:
    if parts in LEAVES:
        return ".".join(parts), -1
    top = parts[0]
    if top not in LAYERS:
        raise AssertionError(f"module safetile.{'.'.join(parts)} has no layer in tests/test_layers.py")
    return top, LAYERS[top]


def _imports(path: pathlib.Path, text: str | None = None) -> list[tuple[int, tuple[str, ...]]]:
    """(line, module parts inside safetile) for every import of a safetile module in ``path``
    (whose source is ``text`` when given)."""
    rel = path.relative_to(SRC).with_suffix("").parts
    package = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if text is None else text, str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)])
                target = base + (node.module.split(".") if node.module else [])
                if not node.module:  # "from . import x": x is a module, or a name of the package
                    name = node.names[0].name
                    is_module = (SRC.joinpath(*base, name + ".py").exists()
                                 or SRC.joinpath(*base, name).is_dir())
                    target = base + [name] if is_module else base + ["__init__"]
            elif node.module and node.module.split(".")[0] == "safetile":
                target = node.module.split(".")[1:]
            else:
                continue
            if target and node.module and len(node.names) == 1 \
                    and SRC.joinpath(*target, node.names[0].name + ".py").exists():
                target = target + [node.names[0].name]  # "from ..runtime import env": a module
            if target:
                found.append((node.lineno, tuple(target)))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "safetile" and "." in a.name:
                    found.append((node.lineno, tuple(a.name.split(".")[1:])))
    return found


MODULES = sorted(p for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path):
    rel = path.relative_to(SRC).with_suffix("").parts
    own_top, own = _layer_of(rel if rel != ("__init__",) else ("__init__",))
    bad = []
    for line, target in _imports(path):
        top, layer = _layer_of(target)
        if layer > own:
            bad.append(f"line {line}: safetile.{'.'.join(rel)} (layer {own_top}) imports "
                       f"safetile.{'.'.join(target)} (layer {top}, above it)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("parts", sorted(LEAVES), ids=".".join)
def test_leaves_import_nothing_from_safetile(parts):
    path = SRC.joinpath(*parts).with_suffix(".py")
    assert _imports(path) == [], f"safetile.{'.'.join(parts)} is a leaf: it must not import safetile"
    assert not (SRC / parts[0] / "__init__.py").read_text().strip(), \
        f"importing a leaf runs safetile/{parts[0]}/__init__.py, which must stay empty"


def test_backends_do_not_import_each_other():
    for path in (SRC / "backends").rglob("*.py"):
        rel = path.relative_to(SRC).parts
        if len(rel) < 3:
            continue
        for line, target in _imports(path):
            if target[0] == "backends" and len(target) > 1 and target[1] != rel[1]:
                raise AssertionError(f"{path}:{line} imports another backend ({'.'.join(target)})")


def test_the_checker_sees_a_violation():
    """The import reader finds lazy relative and absolute imports (so the tests above can fail)."""
    found = _imports(SRC / "ir" / "core.py")
    assert ("errors",) in [t for _, t in found], "ir/core.py imports ..errors; the reader must see it"
    code = "import os\ndef f():\n    from ..runtime.launch import launch\n    import safetile.backends.cpu\n"
    assert _imports(SRC / "ir" / "probe.py", code) == [(3, ("runtime", "launch")), (4, ("backends", "cpu"))]
    leaf = "from ..runtime import env\nfrom ..runtime import env, launch\n"
    assert _imports(SRC / "ir" / "probe.py", leaf) == [(1, ("runtime", "env")), (2, ("runtime",))]
