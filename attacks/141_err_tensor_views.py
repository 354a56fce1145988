"""Promise (help(Tensor.__getitem__)): 'A zero-copy slice (integers, slices with positive
steps, ...)'; reshape 'raises if the layout needs a copy'. Unsupported keys and shapes
must be safetile errors."""
from _errq import *

t = ct.zeros((8, 8)).sync()
tt = ct.zeros((8, 8)).sync()[:, 0:4]
run_cases([
    ("t[::-1]", lambda: t[::-1]), ("t[::0]", lambda: t[::0]), ("t[None]", lambda: t[None]),
    ("t[1.5]", lambda: t[1.5]), ("t['a']", lambda: t["a"]), ("t[[1,2]]", lambda: t[[1, 2]]),
    ("t[np.array([1])]", lambda: t[np.array([1])]), ("t[0,0,0]", lambda: t[0, 0, 0]), ("t[100]", lambda: t[100]),
    ("t[..., ...]", lambda: t[..., ...]), ("t[True]", lambda: t[True]),
    ("reshape(3, 7)", lambda: t.reshape(3, 7)), ("reshape(-1, -1)", lambda: t.reshape(-1, -1)),
    ("reshape('a')", lambda: t.reshape("a")), ("reshape(-2, -32)", lambda: t.reshape(-2, -32)),
    ("strided reshape needing copy", lambda: tt.reshape(32)), ("slice(5, 0, 1)", lambda: t.slice(5, 0, 1)),
    ("slice(0, 'a', 3)", lambda: t.slice(0, "a", 3)),
], "bad tensor views")
