"""pyproject.toml: the license as an SPDX expression (the table form stops building in 2027)
and a setuptools that reads it; optional extras for what is imported lazily."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_and_setuptools_reads_it():
    data = _project()
    assert data["project"]["license"] == "Apache-2.0"
    req = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    assert req and int(re.search(r">=(\d+)", req[0]).group(1)) >= 77  # SPDX expressions need setuptools 77


def test_lazily_imported_dependencies_are_extras():
    extras = _project()["project"]["optional-dependencies"]
    assert any(r.startswith("matplotlib") for r in extras["plot"])
    assert any(r.startswith("matplotlib") for r in extras["dev"])  # the picture tests draw images
    assert any(r.startswith("torch") for r in extras["gpu"])
    for name in ("safetensors", "tokenizers"):  # Qwen3 checkpoints and tokenizers; the tests write and read both
        assert any(r.startswith(name) for r in extras["models"]) and any(r.startswith(name) for r in extras["dev"])


def test_the_package_says_it_is_typed():
    """PEP 561: ``py.typed`` beside ``__init__.py``, and shipped in the wheel."""
    assert (ROOT / "src" / "safetile" / "py.typed").is_file()
    assert "py.typed" in _project()["tool"]["setuptools"]["package-data"]["safetile"]
