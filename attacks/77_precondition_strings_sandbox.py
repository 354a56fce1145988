"""Promise (safe.md Preconditions): 'Strings use dim(t, axis), rank(t), numel(t), scalar and
constant parameters, generic names, integer arithmetic, comparisons and and/or/not'. Strings
outside that language (imports, attribute access, calls, subscripts, lambdas, globals) must
be refused with a safetile error and never evaluated."""
import os
import tempfile

from _common import *

marker = os.path.join(tempfile.gettempdir(), "redteam_precondition_marker")
if os.path.exists(marker):
    os.remove(marker)
EXPRS = [f"__import__('os').system('touch {marker}') == 0", f"open({marker!r}, 'w') is not None",
         "dim(z, 0).__class__ is int", "(lambda: True)()", "[1][0] == 1", "globals() is not None",
         "().__class__.__bases__[0] is object", "B.__add__(1) > 0", "exec('1') is None", "dim(z, 0) if True else 0"]
fails = []
for i, pre in enumerate(EXPRS):
    src = f'''
@ct.entry(preconditions=[{pre!r}])
def k(z: ct.Mut[ct.f32, "B"]):
    z.store(ct.full((B,), 1.0, ct.float32))
'''
    try:
        k = kernel_from_source(src, tag=f"presb{i}")["k"]
        k(ct.zeros(256).sync().partition(64)).sync()
        fails.append(f"{pre}: accepted")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{pre}: {type(e).__module__}.{type(e).__name__}")
if os.path.exists(marker):
    fails.append("a precondition string executed code")
if fails:
    broken("; ".join(fails))
held("precondition strings are a closed language")
