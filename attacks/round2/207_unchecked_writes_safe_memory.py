"""# BACKENDS: cpu triton
Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory'; (G5)
'While a launch ... runs, no other launch ... touches the memory it writes'; (safe.md)
borrowed tensors are 'unusable (BorrowError) until the partition is released'.

The unchecked style beside the safe one: `ct.launch` of a `@ct.kernel` accepts safetile
Tensors. Can it write memory the safe style has frozen or lent out?
 a. a Tensor view taken before `.shared()` passed to ct.launch (the Shared's bytes change?)
 b. a Tensor under `ct.borrow_mut(t)` passed to ct.launch
 c. ct.launch on a view while a safe launch writing that memory runs in another thread
    (must wait for it: last write wins)."""
import threading
import time

from _r2 import *


ITERS = 3000 if BACKEND == "cpu" else 40


@ct.kernel
def w(a, v: float):
    ct.store(a, (ct.bid(0),), ct.full((1024,), 1.0, ct.float32) * v)


@ct.entry
def slow(z: ct.Mut[ct.f32, "B"], v: ct.f32):
    acc = z.load()
    for i in range(ITERS):
        acc = acc * 0.0 + v
    z.store(acc)


def body():
    problems = []
    N = 1 << 16 if BACKEND == "cpu" else 1 << 12
    # a. frozen memory
    t = ct.zeros(N).sync()
    view = t[:]
    s = t.shared()
    before = s.to_numpy().copy()
    try:
        ct.launch(None, (N // 1024, 1, 1), w, (view, 3.0))
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            problems.append(f"a: non-safetile {type(e).__name__}")
    if not np.array_equal(s.to_numpy(), before):
        problems.append(f"a: ct.launch wrote a live Shared's memory through a view taken before .shared() "
                        f"({np.unique(before)[:2]} -> {np.unique(s.to_numpy())[:2]})")
    # b. borrowed memory
    t2 = ct.zeros(N).sync()
    with ct.borrow_mut(t2) as b:
        p = b.partition(1024)
        try:
            ct.launch(None, (N // 1024, 1, 1), w, (t2, 4.0))
            problems.append("b: ct.launch accepted a borrowed tensor")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"b: non-safetile {type(e).__name__}")
        p.release()
    # c. concurrent safe launch
    t3 = ct.zeros(N).sync()
    v3 = t3[:]
    p3 = t3.partition(1024)
    p3, _ = slow(p3, 1.0).sync()              # compile
    ct.launch(None, (N // 1024, 1, 1), w, (v3, 0.0))  # compile
    started, done = threading.Event(), []
    op = slow(p3, 7.0).inspect(lambda r: done.append(time.perf_counter()))

    def run():
        started.set()
        op.sync()

    th = threading.Thread(target=run)
    th.start()
    started.wait()
    time.sleep(0.05)
    ct.launch(None, (N // 1024, 1, 1), w, (v3, 9.0))
    t_unchecked = time.perf_counter()
    th.join(20)
    final = v3.to_numpy()
    if done and t_unchecked < done[0]:
        problems.append(f"c: the unchecked launch on a view finished {done[0] - t_unchecked:.3f}s before the "
                        f"safe launch writing that memory ended (final {np.unique(final)[:3]}; 9.0 = ordered)")
    if problems:
        broken("; ".join(problems))
    held("unchecked launches respect frozen, borrowed and in-flight safe memory")


run_guarded(body, "unchecked writes safe memory")
