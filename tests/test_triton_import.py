"""safetile's first ``import triton`` (backends/triton/cache.py ``import_triton``): Triton's
backend discovery over every installed distribution is skipped where this installation's record
says only Triton's own package adds backends. Each case is a fresh process (Triton imports once)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

SRC = Path(__file__).resolve().parents[1] / "src"

# counts the entry-point scans of Triton's import, made the way safetile's compile path makes it
_CHILD = r"""
import importlib.metadata as md, json, sys
sys.path.insert(0, {src!r})
from safetile.backends.triton import cache  # imports torch, whose own import scans entry points too
assert "triton" not in sys.modules
scans = []
original = md.entry_points
def counting(*a, **k):
    scans.append(1)
    return original(*a, **k)
md.entry_points = counting
cache.import_triton()
import triton.backends as tb, os
print("RESULT", json.dumps({{"scans": len(scans), "backends": sorted(tb.backends),
                            "pinned_after": "TRITON_BACKENDS_IN_TREE" in os.environ}}))
"""


def _run(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_BACKENDS_IN_TREE"}
    env.update(SAFETILE_CACHE_DIR=str(tmp_path / "st"), **extra)
    p = subprocess.run([sys.executable, "-c", _CHILD.format(src=str(SRC))], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT "))[7:])


def _records(tmp_path) -> list[Path]:
    return sorted((tmp_path / "st").glob("triton_backends_*.json"))


def test_a_recorded_installation_skips_the_entry_point_scan(tmp_path):
    first = _run(tmp_path)
    assert first["scans"] == 1 and "nvidia" in first["backends"]
    (record,) = _records(tmp_path)
    assert json.loads(record.read_text()) == {"in_tree_only": True}  # this environment: Triton's own only
    again = _run(tmp_path)
    assert again == {**first, "scans": 0}  # the same backends, found without the scan; nothing left pinned
    # a distribution installed elsewhere on sys.path: a new key, so Triton scans again
    extra = tmp_path / "site"
    (extra / "plugin-1.0.dist-info").mkdir(parents=True)
    (tmp_path / "unrelated").mkdir()
    assert _run(tmp_path, PYTHONPATH=str(tmp_path / "unrelated"))["scans"] == 0  # no distribution there
    assert _run(tmp_path, PYTHONPATH=str(extra))["scans"] == 1
    assert len(_records(tmp_path)) == 2
    record.write_text(json.dumps({"in_tree_only": False}))  # as recorded where another distribution adds one
    assert _run(tmp_path)["scans"] == 1


def test_a_users_setting_is_left_alone_and_not_recorded(tmp_path):
    out = _run(tmp_path, TRITON_BACKENDS_IN_TREE="1")
    assert out["scans"] == 0 and out["pinned_after"]  # the user's own setting, untouched
    assert _records(tmp_path) == []  # what an in-tree import found says nothing about plugins
