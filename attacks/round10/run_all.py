#!/usr/bin/env python
"""Run round 10's attacks with the rounds' sequential runner (attacks/sequential_runner.py, which says what
an attack prints): python run_all.py [-k substring] [--timeout S]
Every case runs itself twice (in child processes), with the safe launch's C fast path on
(SAFETILE_SAFE_NATIVE=1) and off (=0), and combines the two verdicts (_r10.both_ways / differential).
Like round 9 it uses its own cache dir (SAFETILE_CACHE_DIR=/tmp/rt10cache) and builds the safe C module there
first, so that the C lock and the C twin are what a warm installation uses."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from sequential_runner import main  # noqa: E402

os.environ["SAFETILE_CACHE_DIR"] = os.environ.get("SAFETILE_CACHE_DIR", "/tmp/rt10cache")
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")
env = dict(os.environ)
env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
os.environ["PYTHONPATH"] = env["PYTHONPATH"]
subprocess.run([sys.executable, "-c", "from safetile.safe.native import MODULE; assert MODULE.get(build=True)"],
               env=env, check=True)

HEADER = ("Round-10 red-team results (G4 borrow exits vs threads/graphs/compiles, graph replays racing, C path vs\n"
          "Python path, Ctrl-C, fork, aliasing, race detector).\n"
          "Run: cd attacks/round10 && python run_all.py  (sequential, CPU backend, SAFETILE_CACHE_DIR=/tmp/rt10cache;\n"
          "each case runs with SAFETILE_SAFE_NATIVE=1 and =0 in child processes and reports both).\n\n")

if __name__ == "__main__":
    sys.exit(main(HERE, r"^case10\d\d[a-z]?_.*\.py$", HEADER))
