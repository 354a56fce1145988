"""Promise (models.md): 'One model serves one generation at a time (a second concurrent one
raises; closing a stream frees the model).' Also: a stream dropped without close, a stream
exhausted, a stream whose consumer raised, and 6 threads generating at once (exactly one
runs at a time; results equal to the sequential ones)."""
import gc
import threading

from _qwen_tiny import *

m, _ = tiny()
ref = m.generate([1, 2, 3], max_new_tokens=6)
fails = []
s = m.stream([1, 2, 3], 6)
next(s)
try:
    m.generate([1, 2, 3], max_new_tokens=2)
    fails.append("second generation accepted while a stream is open")
except Exception:  # noqa: BLE001
    pass
del s
gc.collect()
try:
    if m.generate([1, 2, 3], max_new_tokens=6) != ref:
        fails.append("output differs after a dropped stream")
except Exception as e:  # noqa: BLE001
    fails.append(f"model still busy after its stream was dropped: {e}")
s = m.stream([1, 2, 3], 6)
list(s)
try:
    m.generate([1, 2, 3], max_new_tokens=6)
except Exception as e:  # noqa: BLE001
    fails.append(f"busy after an exhausted stream: {e}")
try:
    for i, tok in enumerate(m.stream([1, 2, 3], 6)):
        if i == 2:
            raise KeyError("consumer bug")
except KeyError:
    pass
gc.collect()
try:
    m.generate([1, 2, 3], max_new_tokens=6)
except Exception as e:  # noqa: BLE001
    fails.append(f"busy after the consumer raised: {e}")
res, errs = [], []
bar = threading.Barrier(6)


def go():
    bar.wait()
    try:
        res.append(m.generate([1, 2, 3], max_new_tokens=6))
    except Exception as e:  # noqa: BLE001
        errs.append(e)


ths = [threading.Thread(target=go) for _ in range(6)]
[t.start() for t in ths]
[t.join(60) for t in ths]
if any(t.is_alive() for t in ths):
    broken("threads hung in generate")
if any(r != ref for r in res):
    fails.append(f"concurrent generations produced wrong tokens: {res} vs {ref}")
if not res:
    fails.append("no thread could generate")
if fails:
    broken("; ".join(fails))
held(f"one generation at a time ({len(res)} ran, {len(errs)} refused under contention)")
