"""Class 1/2. The C twin reuses a raw Ref's per-terminal alias "while x still shows the facts it was made
from: equal facts are the same memory, since the alias keeps the storage alive". Counter-move inside one
chain: free the alias's bytes in place (x.untyped_storage().resize_(0): the StorageImpl lives on, its data
is freed), allocate a new storage of the same size (glibc hands back the same address), and set_ x onto it.
x now shows the very facts of the cached alias (same pointer, dtype, shape, strides), but the alias is over
a 0-byte storage. Promise: the second launch reads x's new values (7.0) or is refused with a safetile error
-- never freed/NULL memory, never a crash. Run both with the C twin and with SAFETILE_SAFE_NATIVE=0."""
import subprocess
from _r8 import *

N = 10_000_000   # 40 MB: an mmap'd chunk; munmap then mmap of the same size returns the same address
NZ = 64


def scenario():
    ensure_native()
    print("C twin loaded:", c_path_loaded())
    x = torch.arange(N, dtype=torch.float32)
    hits = {"same_addr": 0}

    def step(v):
        z, _ = v
        p0 = x.data_ptr()
        st = x.untyped_storage()
        st.resize_(0)                                   # the alias's bytes freed (both tensors share st)
        b = torch.full((N,), 7.0)                       # same size: glibc gives the same chunk back
        hits["same_addr"] = int(b.data_ptr() == p0)
        x.set_(b.untyped_storage(), 0, (N,), (1,))
        return copyk(z, x)
    z = poisoned(NZ).partition(16)
    try:
        (z, _) = (copyk(z, x).then(lambda v: copyk(v[0], x)).then(lambda v: copyk(v[0], x))
                    .then(step).sync())
        out = z.unpartition().to_numpy()
        res = f"ran: z[:3]={out[:3].tolist()} all7={bool((out == 7.0).all())}"
    except Exception as e:  # noqa
        res = err(e, 100)
    return hits["same_addr"], res


if os.environ.get("R8_CHILD"):
    s, r = scenario()
    print(f"R8 same_addr={s} result={r}")
    os._exit(0)

rows = {}
for mode in ("c", "py"):
    env = dict(os.environ, R8_CHILD="1")
    if mode == "py":
        env["SAFETILE_SAFE_NATIVE"] = "0"
    p = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=60)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("R8 ")]
    rows[mode] = line[0] if line else f"CRASH rc={p.returncode} tail={(p.stdout + p.stderr).strip().splitlines()[-3:]}"
    print(mode, "->", rows[mode])
bad = []
for mode, r in rows.items():
    if r.startswith("CRASH"):
        bad.append(f"{mode}: process crashed ({r})")
    elif "(RAW)" in r:
        bad.append(f"{mode}: raw error {r}")
    elif "ran:" in r and "all7=False" in r:
        bad.append(f"{mode}: launch read memory other than x's ({r})")
if bad:
    broke("; ".join(bad))
if all("same_addr=0" in r for r in rows.values()):
    inconclusive("the allocator did not reuse the address; " + str(rows))
if rows["c"].split("result=")[1][:8] != rows["py"].split("result=")[1][:8]:
    broke("C twin and Python path decide differently (docs: 'the C code decides nothing the Python path would "
          "decide differently'): the C twin reused its per-terminal alias of x because x shows the same facts, "
          "though the alias's storage was freed and x is on new memory at the old address; its pins then refuse "
          "a launch the Python path runs correctly. C: " + rows["c"][3:] + " | Py: " + rows["py"][3:])
if False:
    inconclusive("the allocator did not reuse the address; " + str(rows))
held("; ".join(f"{k}: {v[3:]}" for k, v in rows.items()))
