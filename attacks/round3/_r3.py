"""Round-3 helpers: puts attacks/ on sys.path so `from _r2 import *` gives attacks/_common.py."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import *  # noqa: E402,F401,F403
from _common import _hang  # noqa: E402,F401
