"""# BACKENDS: cpu triton
Promise (safety.md G8): 'A reused plan is only reused when every fact its checks read is
unchanged ... raw arrays are read in full on every launch'; (G3) 'The memory a launch
writes overlaps no other argument of the launch'; (safe.md, Graphs) 'On the CPU a replay
runs the recorded sequence (validation skipped)'.

A graph records fill(z, xt) with xt a raw torch tensor (a ct.Ref). After capture, xt is
re-pointed in place with `xt.set_(...)` at the memory z covers (shifted by one
sub-tensor), or its NumPy twin gets a new shape. An ordinary launch with those arguments
is refused (AliasError); a replay must be refused too (or use the old memory), not run
with a read-only argument that overlaps its output."""
from _r2 import *


def body():
    import torch
    problems = []
    t = ct.zeros(8192).sync()
    alias_src = torch.from_dlpack(t[:])     # only used as a storage to point xt at
    z = t[0:4096].partition(1024)
    xt = torch.full((4096,), 3.0)
    g = fill(z, xt).graph()
    g.launch()
    xt.set_(alias_src[1024:5120])
    try:
        r = g.launch()
        zt = r[0]
        vals = zt.to_numpy()
        problems.append(f"replay ran with read-only 'x' re-pointed to overlap mutable 'z' "
                        f"(x = t[1024:5120], z = t[0:4096]; block b read what block b+1 writes); z now "
                        f"{np.unique(vals)[:4]}")
        try:
            fill(zt, xt).sync()
            problems.append("(a fresh launch with the same arguments was accepted too)")
        except ct.AliasError:
            problems.append("(a fresh launch with the same arguments is refused with AliasError)")
        except Exception as e:  # noqa: BLE001
            problems.append(f"(fresh launch: {type(e).__name__})")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"replay after set_: non-safetile {type(e).__module__}.{type(e).__name__}: {e}")
    g.close()
    # NumPy twin: a raw ndarray Ref whose shape is changed in place after capture
    z2 = ct.zeros(4096).sync().partition(1024)
    a = np.full(4096, 5.0, np.float32)
    g2 = fill(z2, a).graph()
    g2.launch()
    a.shape = (64, 64)
    try:
        g2.launch()
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"replay after a Ref's in-place reshape: {type(e).__module__}.{type(e).__name__}: {e}")
    if problems:
        broken("; ".join(problems))
    held("replays revalidate raw Ref arguments")


run_guarded(body, "graph raw ref repointed")
