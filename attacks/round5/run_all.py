#!/usr/bin/env python
"""Run this round's attacks with the corpus runner (attacks/run_all.py): python run_all.py [-j N] [-k s]"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
runner = runpy.run_path(os.path.join(HERE, "..", "run_all.py"))
sys.exit(runner["main"](HERE))
