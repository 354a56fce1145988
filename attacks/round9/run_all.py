#!/usr/bin/env python
"""Run round 9's attacks with the rounds' sequential runner (attacks/sequential_runner.py, which says what
an attack prints): python run_all.py [-k substring] [--timeout S]
Round 9 needs the C lock (safe/native_lock.py), which safetile uses only when the safe C module is already
built when it is imported: the runner uses its own cache dir (SAFETILE_CACHE_DIR=/tmp/rt9cache, not "off")
and builds the module there first."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from sequential_runner import main  # noqa: E402

os.environ.setdefault("SAFETILE_CACHE_DIR", "/tmp/rt9cache")
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")
env = dict(os.environ)
env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
os.environ["PYTHONPATH"] = env["PYTHONPATH"]
subprocess.run([sys.executable, "-c", "from safetile.safe.native import MODULE; assert MODULE.get(build=True)"],
               env=env, check=True)

HEADER = ("Round-9 red-team results (G4 ownership and G9 threads/fork with the C lock, safe/native_lock.py).\n"
          "Run: cd attacks/round9 && python run_all.py  (sequential, CPU backend, SAFETILE_CACHE_DIR=/tmp/rt9cache;\n"
          "every case checks that OWNERSHIP and the registry's lock are the C Lock, else INCONCLUSIVE).\n\n")

if __name__ == "__main__":
    sys.exit(main(HERE, r"^case9\d\d[a-z]?_.*\.py$", HEADER))
