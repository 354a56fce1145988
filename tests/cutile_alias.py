"""Import cuTile Python programs unchanged with ``cuda.tile`` meaning ``safetile``.

``load_sample(name)`` imports ``tests/cutile_samples/<name>.py`` while ``sys.modules`` maps
``cuda.tile`` (and its ``tune``/``compilation`` submodules) to safetile; the few private
cuTile modules a sample imports for its ``__main__`` block get stand-ins, and
``utils.benchmark`` (the samples' timing helper) a no-op. The aliases are removed again
afterwards, so nothing else in the test session sees them.
"""
from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import sys
import types

import safetile

SAMPLES = pathlib.Path(__file__).resolve().parent / "cutile_samples"


def _module(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def _stand_ins() -> dict[str, types.ModuleType]:
    cuda = _module("cuda", __path__=[], tile=safetile)
    version = _module("cuda.tile._bytecode.version", BytecodeVersion=type("BytecodeVersion", (), {}))
    return {
        "cuda": cuda,
        "cuda.tile": safetile,
        "cuda.tile.tune": safetile.tune,
        "cuda.tile.compilation": safetile.compilation,
        # private modules BlockScaledMatMul.py imports for its __main__ block only
        "cuda.tile._cext": _module("cuda.tile._cext", get_compute_capability=lambda device=0: (0, 0),
                                   dev_features_enabled=lambda: False),
        "cuda.tile._bytecode": _module("cuda.tile._bytecode", __path__=[], version=version),
        "cuda.tile._bytecode.version": version,
        "cuda.tile._compile": _module("cuda.tile._compile", _get_max_supported_bytecode_version=lambda *a, **k: None),
        "utils": _module("utils", __path__=[]),
        "utils.benchmark": _module("utils.benchmark", report_benchmark=lambda *a, **k: {}),
    }


@contextlib.contextmanager
def cuda_tile_alias():
    """``import cuda.tile as ct`` gives safetile inside the block."""
    mods = _stand_ins()
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


_loaded: dict[str, types.ModuleType] = {}


def load_sample(name: str) -> types.ModuleType:
    """The sample module ``name`` (imported once per session)."""
    if name not in _loaded:
        path = SAMPLES / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"cutile_sample_{name}", path)
        module = importlib.util.module_from_spec(spec)
        with cuda_tile_alias():
            spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]
