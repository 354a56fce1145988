"""Promise (errors.py doc): 'Every compile-time problem in a kernel is a TileError carrying
the source location'; refusals are safetile errors naming the parameter. Bad @ct.entry
annotations and bad preconditions must be safetile errors (a LaunchTypeError is also a
TypeError, so `except TypeError` keeps working) — not bare builtins exceptions."""
from _errq import *

SRCS = {
    "missing annotation": "def k(z: ct.Mut[ct.f32, 'B'], w):\n    pass\n",
    "ct.Array annotation": "def k(z: ct.Mut[ct.f32, 'B'], w: ct.Array):\n    pass\n",
    "bare ct.Ref": "def k(z: ct.Mut[ct.f32, 'B'], w: ct.Ref):\n    pass\n",
    "bare ct.Mut": "def k(z: ct.Mut):\n    pass\n",
    "Mut rank 0": "def k(z: ct.Mut[ct.f32, ()]):\n    pass\n",
    "Mut negative size": "def k(z: ct.Mut[ct.f32, -5]):\n    pass\n",
    "Ref bad dtype": "def k(z: ct.Mut[ct.f32, 'B'], x: ct.Ref['nope', 'x', 3]):\n    pass\n",
    "precondition syntax": "@ct.entry(preconditions=['dim(z, 0) ==='])\ndef k(z: ct.Mut[ct.f32, 'B']):\n    pass\n",
    "precondition unknown name": "@ct.entry(preconditions=['dim(q, 0) == 1'])\ndef k(z: ct.Mut[ct.f32, 'B']):\n    pass\n",
    "precondition not str/callable": "@ct.entry(preconditions=[42])\ndef k(z: ct.Mut[ct.f32, 'B']):\n    pass\n",
    "precondition callable unknown param": "@ct.entry(preconditions=[lambda q: True])\ndef k(z: ct.Mut[ct.f32, 'B']):\n    pass\n",
}
cases = []
for name, body in SRCS.items():
    src = body if body.startswith("@") else "@ct.entry\n" + body

    def mk(src=src, name=name):
        k = kernel_from_source(src, tag="dec" + str(abs(hash(name)) % 10000))["k"]
        k(ct.zeros(64).sync().partition(64)).sync()
    cases.append((name, mk))
run_cases(cases, "bad kernel declarations")
