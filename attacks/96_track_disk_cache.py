"""Promise (semantics.md + DESIGN 'compiled kernels are cached in memory and on disk'):
code folded from a global must not be reused from the disk cache by a process where the
global has another value. Two processes share SAFETILE_CACHE_DIR, Triton backend in the
interpreter; SCALE comes from the environment."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r'''
import os, sys
sys.path.insert(0, os.path.join(%r, "..", "src"))
import numpy as np, torch
import safetile as ct
SCALE = float(os.environ["SCALE"])
@ct.kernel
def k(z, x):
    ct.store(z, index=(0,), tile=ct.load(x, index=(0,), shape=(64,)) * SCALE)
@ct.entry
def e(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) * SCALE)
x = torch.ones(64); z = torch.zeros(64)
ct.launch(None, (1,), k, (z, x))
zz, _ = e(ct.from_dlpack(torch.zeros(64)).partition(64), ct.from_dlpack(x)).sync()
print(float(z[0]), float(zz.to_numpy()[0]))
''' % HERE
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "child.py")
    # same file path in both runs so the kernels are "the same source"
    with open(src, "w") as f:
        f.write(CHILD)
    outs = []
    for scale in ["2.0", "3.0"]:
        env = dict(os.environ, SCALE=scale, SAFETILE_CACHE_DIR=os.path.join(d, "cache"),
                   SAFETILE_BACKEND="triton", TRITON_INTERPRET="1")
        r = subprocess.run([sys.executable, src], env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(r.stderr[-2000:])
            print("INCONCLUSIVE: child failed")
            sys.exit(3)
        outs.append(r.stdout.split())
    if outs[1] != ["3.0", "3.0"]:
        print(f"BROKEN: second process with SCALE=3.0 got {outs[1]} (first: {outs[0]}) from the shared disk cache")
        sys.exit(1)
print("HELD: disk cache keyed on folded globals", outs)
