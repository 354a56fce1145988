"""Promise (safety.md G5): 'Host reads (to_numpy, copies) register for the duration of the
copy'; (safe.md) 'Host reads never race a launch: a moved tensor raises; a view taken
before the move waits for the unfinished launch that writes that memory'; (G6) while a
Shared lives nothing writes its memory.

Thread W cycles: s.try_unwrap() -> partition -> map(1) -> a persistent launch whose single
block stores the sub-tensors one after another (slowly) with the cycle number -> unmap ->
unpartition -> shared(). Three reader threads read at the same time through a view taken
before anything moved (to_numpy, np.asarray, dup().sync()) and through the current Shared.
Every read must see one cycle's value everywhere (never a mix of two cycles)."""
import threading
import time

from _r2 import *


@ct.entry
def walk(c: ct.MappedMut[ct.f32, "B"], v: ct.f32):
    for idx in c.iter_indices():
        acc = ct.full((B,), 0.0, ct.float32)
        for i in range(40):
            acc = acc * 0.0 + v
        c.store(acc, idx)


def body():
    N = 1 << 14
    t = ct.zeros(N).sync()
    view = t[:]
    cur = [t.shared()]
    stop = []
    torn, other, nreads, errs_seen = [], [], [0], []

    def writer():
        k = 0
        t_end = time.time() + 8
        while (k < 30 or nreads[0] < 300) and time.time() < t_end:
            k += 1
            while True:
                try:
                    tt = cur[0].try_unwrap()
                    break
                except ct.OwnershipError:
                    time.sleep(0.0005)
            m = tt.partition(256).map(1)
            m, _ = walk(m, float(k)).sync()
            cur[0] = m.unmap().unpartition().shared()
            time.sleep(0.002)
        stop.append(1)

    def reader(kind):
        while not stop:
            try:
                if kind == "view":
                    a = view.to_numpy()
                elif kind == "asarray":
                    a = np.asarray(view)
                elif kind == "dup":
                    a = view.dup().sync().to_numpy()
                else:
                    a = cur[0].to_numpy()
                nreads[0] += 1
                time.sleep(0.0002)
                u = np.unique(a)
                if len(u) != 1:
                    torn.append(f"{kind}: {u[:4]}")
                    return
            except Exception as e:  # noqa: BLE001
                if not is_safetile_error(e):
                    other.append(f"{kind}: {type(e).__name__}: {e}")
                    return
                errs_seen.append(f"{kind}: {type(e).__name__}: {str(e)[:100]}")
                time.sleep(0.001)

    ths = [threading.Thread(target=writer, daemon=True)] + [
        threading.Thread(target=reader, args=(k,), daemon=True) for k in ("view", "asarray", "dup", "shared")]
    [x.start() for x in ths]
    deadline = time.time() + 40
    for x in ths:
        x.join(max(0.0, deadline - time.time()))
    if any(x.is_alive() for x in ths):
        broken("hang: readers and the unwrap/write/share cycle never finished")
    if other:
        broken("non-safetile error: " + other[0][:200])
    if torn:
        broken(f"torn host read of memory a launch was writing: {torn[0]}")
    held(f"{nreads[0]} concurrent host reads, none torn")


run_guarded(body, "thr reads vs unwrap cycle")
