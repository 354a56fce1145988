"""Shared test setup: make ``src/`` importable without installing the package, and keep the
suite out of the user's caches: safetile's disk cache goes to a temporary directory of this
process (each xdist worker has its own), removed when the process ends."""
import atexit
import gc
import os
import shutil
import sys
import tempfile

import pytest

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

_CACHE = tempfile.mkdtemp(prefix="safetile-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
os.environ["SAFETILE_CACHE_DIR"] = _CACHE

# The safe launch's common case has a C twin (safe/native.py), loaded in the background after a
# process's first compile. The suite loads it up front so every test takes the same path a warm
# process takes; ``SAFETILE_SAFE_NATIVE=0`` runs the whole suite on the Python path instead (CI does
# both for the safety tests). Mutation runs mutate the Python path, so they keep it.
if os.environ.get("MUTANT_UNDER_TEST"):
    os.environ["SAFETILE_SAFE_NATIVE"] = "0"
elif os.environ.get("SAFETILE_SAFE_NATIVE", "1") != "0":
    # built before safetile is imported here, as in a warm installation: the module's C lock is then
    # OWNERSHIP and the registry's lock (safe/native_lock.py), which are chosen at import
    import subprocess
    subprocess.run([sys.executable, "-c", "from safetile.safe.native import MODULE; MODULE.get(build=True)"],
                   env={**os.environ, "PYTHONPATH": os.pathsep.join([_SRC, os.environ.get("PYTHONPATH", "")])},
                   check=False, capture_output=True, timeout=600)


@pytest.fixture(autouse=True, scope="session")
def _safe_native_loaded():
    from safetile.safe.native import FAST
    FAST.load(build=True)
    yield


# mutmut's stats pass (``MUTANT_UNDER_TEST=stats``) records callers in a context variable. A
# finalizer run by the cyclic collector in the middle of CPython 3.11's ``ContextVar.set`` calls
# traced code, re-enters it and frees the context's map under it (a segfault). In that pass only,
# the collector runs between tests instead, where nothing is half-set.
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    gc.disable()

    def pytest_runtest_teardown(item, nextitem):
        gc.collect()


def _under_mutation() -> bool:
    mutant = os.environ.get("MUTANT_UNDER_TEST")
    return bool(mutant) and mutant != "stats"


def pytest_collection_modifyitems(items):
    """Under mutation, tests marked ``hang_guard`` run first: a mutant that makes a wait hang is then
    killed by their deadline instead of hanging an earlier test until mutmut's timeout (mutmut hands
    pytest a mutant's tests in no fixed order)."""
    if _under_mutation():
        items.sort(key=lambda item: item.get_closest_marker("hang_guard") is None)  # stable


def pytest_collection_finish(session):
    """Under mutation (mutmut names the mutant in ``MUTANT_UNDER_TEST``), a test module that fails
    to import is a detection: the mutant broke something every import runs (a declaration). pytest
    ends such a run as "interrupted" (exit 2) or, when the module's tests are named by node id, as
    "found no collectors" (exit 4), and mutmut files neither as a kill (4 becomes a timeout). Stop
    with the exit code of a failed test instead (bench/NOTES.md, "third pass"). This hook runs at the
    end of collection in both cases; no test has run yet, so ``testsfailed`` counts collection errors."""
    if session.testsfailed and _under_mutation():
        pytest.exit(f"collection failed under mutant {os.environ['MUTANT_UNDER_TEST']}: a detection", returncode=1)


@pytest.fixture
def racy():
    """Switch threads as often as possible: a missing lock shows as a lost update at once (thread tests)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.fixture(scope="session")
def cxx_facts():
    """The C++ fact reader (runtime/torch_facts.py), built into this process's cache: tests that run
    a launch path with and without it take its capsule (``cxx_facts.read``); skipped where it cannot
    be built (no C++ compiler or torch headers)."""
    pytest.importorskip("torch")
    from safetile.runtime import torch_facts
    m = torch_facts.module(build=True)
    if m is None:
        pytest.skip("the C++ fact reader cannot be built here (no C++ compiler or torch headers)")
    return m
