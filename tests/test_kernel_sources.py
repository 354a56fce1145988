"""Kernels defined outside a .py file: where Python (or IPython) keeps the source, they compile
like any other; where it does not, the decorator fails at once and says why."""
from __future__ import annotations

import linecache
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

SRC = str(Path(__file__).resolve().parent.parent / "src")

KERNEL = textwrap.dedent("""
    import safetile as ct

    @ct.kernel
    def double(x, y, T: ct.Constant[int]):
        b = ct.bid(0)
        ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)) * 2)

    @ct.kernel
    def odd_tile(x, y):
        ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(3,)))
    """)
ODD_LINE = 1 + KERNEL.splitlines().index("    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(3,)))")


def _run_c(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_python_dash_c_kernels_compile_with_located_errors():
    code = KERNEL + textwrap.dedent("""
        import numpy as np
        x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
        y = np.full_like(x, np.nan)
        ct.launch(None, (2,), double, (x, y, 4))
        assert np.array_equal(y, x * 2), y
        try:
            ct.launch(None, (1,), odd_tile, (x, y))
        except ct.TileError as e:
            print(e)
        """)
    p = _run_c(code)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "tile dimensions must be powers of two, got shape (3,)"
    assert lines[1].startswith(f'  File "<string>", line {ODD_LINE},') and "in odd_tile" in lines[1]
    assert lines[2].strip() == "ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(3,)))"
    assert set(lines[3].strip()) == {"^"}


def test_python_dash_c_source_is_not_lent_to_an_exec_string_of_the_same_name_and_line():
    """``exec`` of a string shares the file name ``<string>`` with ``python -c``: a function with
    the same name on the same line but other code must not compile from the command's text."""
    code = textwrap.dedent("""
        import safetile as ct
        def k(x, y):
            ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(4,)))
        ns = {"ct": ct}
        exec("import safetile as ct\\ndef k(x, y):\\n    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(8,)) + 1)\\n", ns)
        try:
            ct.kernel(ns["k"])
        except ct.TileSyntaxError as e:
            print("refused:", e)
        print("own:", ct.kernel(k).__name__)
        """)
    p = _run_c(code)
    assert p.returncode == 0, p.stderr
    assert "refused: cannot read the source of 'k': it was made by exec() of a string" in p.stdout
    assert "own: k" in p.stdout


def test_exec_of_a_plain_string_fails_at_decoration_with_the_reason():
    ns: dict = {"ct": ct}
    exec("def f(x, y):\n    pass\n", ns)  # noqa: S102
    for decorate in (ct.kernel, ct.entry, ct.function, ct.kernel(num_warps=4), ct.entry(unchecked=True)):
        with pytest.raises(ct.TileSyntaxError, match=r"cannot read the source of 'f': it was made by exec\(\) of "
                                                     r"a string.*linecache\.cache\[name\]"):
            decorate(ns["f"])


def test_interactive_prompt_kernels_fail_at_decoration():
    ns: dict = {"ct": ct}
    exec(compile("def typed(x, y):\n    pass\n", "<stdin>", "exec"), ns)  # noqa: S102
    with pytest.raises(ct.TileSyntaxError, match="typed at the interactive prompt"):
        ct.kernel(ns["typed"])


def test_sources_registered_in_linecache_compile():
    """IPython/Jupyter cells and Python 3.13's prompt register their text in linecache: a kernel
    defined in such a cell compiles, and its errors show its lines."""
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(KERNEL), None, KERNEL.splitlines(True), name)
    try:
        ns: dict = {}
        exec(compile(KERNEL, name, "exec"), ns)  # noqa: S102
        x = np.random.default_rng(1).standard_normal(8).astype(np.float32)
        y = np.full_like(x, np.nan)
        ct.launch(None, (2,), ns["double"], (x, y, 4))
        assert np.array_equal(y, x * 2)
        with pytest.raises(ct.TileTypeError) as info:
            ct.launch(None, (1,), ns["odd_tile"], (x, y))
        assert info.value.filename == name and info.value.line == ODD_LINE
        assert "shape=(3,)" in str(info.value).splitlines()[2]
    finally:
        linecache.cache.pop(name, None)
