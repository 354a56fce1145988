"""Shared test setup: make ``src/`` importable without installing the package, and keep the
suite out of the user's caches: safetile's disk cache goes to a temporary directory of this
process (each xdist worker has its own), removed when the process ends."""
import atexit
import os
import shutil
import sys
import tempfile

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

_CACHE = tempfile.mkdtemp(prefix="safetile-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
os.environ["SAFETILE_CACHE_DIR"] = _CACHE
