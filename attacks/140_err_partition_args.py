"""Promise (brief/DESIGN, errors.py doc): every refusal is a safetile error naming the
problem. Bad partition shapes and prefix shapes."""
from _errq import *

t = lambda: ct.zeros(256).sync()  # noqa: E731
t2 = lambda: ct.zeros((16, 16)).sync()  # noqa: E731
run_cases([
    ("partition(0)", lambda: t().partition(0)), ("partition(-64)", lambda: t().partition(-64)),
    ("partition('a')", lambda: t().partition("a")), ("partition(1.5)", lambda: t().partition(1.5)),
    ("partition(None)", lambda: t().partition(None)), ("partition(())", lambda: t().partition(())),
    ("partition((4,4)) of 1-D", lambda: t().partition((4, 4))), ("partition((4,)) of 2-D", lambda: t2().partition((4,))),
    ("partition([64])", lambda: t().partition([64]) and None or (_ for _ in ()).throw(ct.TensorError("ok"))),
    ("partition(2**70)", lambda: t().partition(2 ** 70)), ("partition((np.int64(-4),))", lambda: t().partition((np.int64(-4),))),
    ("partition_prefix(())", lambda: t2().partition_prefix(())), ("partition_prefix((0,))", lambda: t2().partition_prefix((0,))),
    ("partition_prefix((4,4,4))", lambda: t2().partition_prefix((4, 4, 4))),
    ("partition_prefix('x')", lambda: t2().partition_prefix("x")),
], "bad partition shapes")
