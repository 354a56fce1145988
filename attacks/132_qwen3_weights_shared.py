"""Promise (help(qwen3.from_weights)): tensors used in place 'become read-only ct.Shared
weights'; a Shared has no writable alias anywhere (DESIGN). Through safetile's own API
(from_dlpack + partition / borrow_mut / memcpy) the weight memory must not be writable."""
from _qwen_tiny import *

m, t = tiny()
ref = m.generate([1, 2, 3], max_new_tokens=4)
fails = []
w = t["model.layers.0.mlp.up_proj.weight"]
for name, f in [("from_dlpack(w).partition", lambda: fill2d(ct.from_dlpack(w).partition((16, 16)), ct.zeros(w.shape).sync()).sync()),
                ("borrow_mut(from_dlpack(w))", lambda: ct.borrow_mut(ct.from_dlpack(w)).partition((16, 16))),
                ("memcpy into from_dlpack(w)", lambda: ct.memcpy(ct.from_dlpack(w), ct.zeros(w.shape).sync()).sync()),
                ("ct.Tensor(w).partition", lambda: ct.Tensor(w).partition((16, 16)))]:
    try:
        f()
        fails.append(f"{name}: accepted")
    except Exception as e:  # noqa: BLE001
        if not is_safetile_error(e):
            fails.append(f"{name}: non-safetile {type(e).__name__}")
if m.generate([1, 2, 3], max_new_tokens=4) != ref:
    fails.append("the model's output changed: its Shared weights were written")
if fails:
    broken("; ".join(fails))
held("in-place weights are protected Shared memory")
