"""Promise (models.md): 'a request that does not fit is refused before anything runs';
generations are independent (a seed reproduces a run). After refused requests and an
interrupted stream the model's next outputs equal a fresh model's; sampling with a seed
reproduces; bad requests give errors, never a crash or garbage."""
from _qwen_tiny import *

m, _ = tiny()
ref_g = m.generate([5, 6, 7, 8], max_new_tokens=8)
ref_s = m.generate([5, 6, 7, 8], max_new_tokens=8, temperature=0.9, top_k=20, top_p=0.9, seed=3) \
    if "temperature" in m.generate.__code__.co_varnames else None
ref_l = m.logits([5, 6, 7, 8])
fails = []
for name, f in [("too long", lambda: m.generate(list(range(1, 61)), max_new_tokens=10)),
                ("bad id", lambda: m.generate([512], max_new_tokens=2)),
                ("negative id", lambda: m.generate([-1], max_new_tokens=2)),
                ("empty", lambda: m.generate([], max_new_tokens=2)),
                ("negative max_new_tokens", lambda: m.generate([1], max_new_tokens=-3)),
                ("huge max_new_tokens", lambda: m.generate([1], max_new_tokens=10**9)),
                ("logits too long", lambda: m.logits(list(range(1, 100))))]:
    try:
        r = f()
        if name in ("negative max_new_tokens",) and r == []:
            continue
        fails.append(f"{name}: accepted ({str(r)[:60]})")
    except Exception as e:  # noqa: BLE001
        if isinstance(e, (SystemError, MemoryError, IndexError)):
            fails.append(f"{name}: {type(e).__name__}")
s = m.stream([9, 9, 9], 10)
next(s); next(s)
s.close()
if m.generate([5, 6, 7, 8], max_new_tokens=8) != ref_g:
    fails.append("greedy output changed after refusals / an interrupted stream")
if not np.allclose(m.logits([5, 6, 7, 8]), ref_l, rtol=0, atol=0):
    fails.append("logits changed after refusals")
if ref_s is not None and m.generate([5, 6, 7, 8], max_new_tokens=8, temperature=0.9, top_k=20, top_p=0.9, seed=3) != ref_s:
    fails.append("seeded sampling not reproducible")
m2, _ = tiny()
if m2.generate([5, 6, 7, 8], max_new_tokens=8) != ref_g:
    fails.append("a fresh model disagrees")
if fails:
    broken("; ".join(fails))
held("refusals leave the model untouched; runs reproducible")
