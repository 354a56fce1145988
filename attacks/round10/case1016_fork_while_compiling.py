"""G9 fork: os.fork() while another thread is *compiling* a kernel (first launch of a fresh specialisation:
`ct.static_eval` sleeps 1 s; the docs: "compilation takes the kernel's compile lock"; "stores take the kernel's
cache lock"). The fork guard lists the process-wide locks it takes around a fork (ownership, interned facts,
stream pools, the registry, its condition); a kernel's own compile/cache lock is not among them. In the child,
launch (a) the same kernel with another fresh specialisation, (b) the same kernel with the specialisation being
compiled in the parent, (c) another kernel, (d) the same kernel from a borrowed partition.
Expect (G9: "the child never inherits a lock held by a thread it does not have"): every child step finishes
(bounded: 10 s) with a result or a safetile error; the parent's compile and launch finish normally.
Run with the C fast path on and off."""
from _r10 import *
import random

both_ways()
native_loaded()
rnd = random.Random(os.getpid())


@ct.entry
def inc_sc(z: ct.Mut[ct.f32, "B"], k: ct.Constant[int]):
    ct.static_eval(time.sleep(1.0))
    z.store(z.load() + 1.0)


@ct.entry
def inc_fast(z: ct.Mut[ct.f32, "B"], k: ct.Constant[int]):
    z.store(z.load() + 1.0)


K1 = rnd.randrange(1 << 50)
out = []


def compiler():
    try:
        p = ct.zeros(64).sync().partition(16)
        p, _ = inc_sc(p, K1).sync()
        out.append(p.unpartition().to_numpy()[0])
    except BaseException as e:  # noqa
        out.append(e)


th = threading.Thread(target=compiler, daemon=True)
th.start()
time.sleep(0.3)                    # the thread is inside inc_sc's compilation
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    import signal as _s

    def step(name, f):
        t0 = time.time()
        try:
            v = f()
            msg = f"{name}=ok({time.time() - t0:.1f}s)"
        except BaseException as e:  # noqa
            msg = f"{name}={type(e).__name__}{'' if is_st(e) else '(RAW)'}({time.time() - t0:.1f}s)"
        os.write(w, (msg + "\n").encode())

    def a():
        p = ct.zeros(64).sync().partition(16)
        return inc_sc(p, K1 + 1).sync()

    def b():
        p = ct.zeros(64).sync().partition(16)
        return inc_sc(p, K1).sync()

    def c():
        p = ct.zeros(64).sync().partition(16)
        return inc_fast(p, 3).sync()

    def d():
        t = ct.zeros(64).sync()
        with ct.borrow_mut(t) as bb:
            p = bb.partition(16)
            return inc_sc(p, K1 + 2).sync()
    for name, f in (("c_other_kernel", c), ("a_same_kernel_new_spec", a), ("b_spec_compiling_in_parent", b),
                    ("d_borrowed", d)):
        # each step in its own thread so that a hang is seen as one
        done = threading.Event()
        thr = threading.Thread(target=lambda: (step(name, f), done.set()), daemon=True)
        thr.start()
        if not done.wait(8):
            os.write(w, f"{name}=HANG\n".encode())
            os._exit(0)
    os._exit(0)
os.close(w)
buf = b""
deadline = time.time() + 22
import select
while time.time() < deadline:
    rr, _, _ = select.select([r], [], [], 0.5)
    if rr:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        buf += chunk
try:
    os.kill(pid, 9)
except ProcessLookupError:
    pass
os.waitpid(pid, 0)
th.join(10)
lines = buf.decode().split()
if not (out and not isinstance(out[0], BaseException) and out[0] == 1.0):
    broke(f"parent compile/launch failed: {out}")
hang = [x for x in lines if x.endswith("HANG")]
raw = [x for x in lines if "(RAW)" in x]
if hang or raw:
    broke(f"native={NATIVE}: in the forked child: {lines}")
if len(lines) < 4:
    broke(f"native={NATIVE}: child died/hung without finishing: {lines}")
held(f"native={NATIVE}: child {lines}")
