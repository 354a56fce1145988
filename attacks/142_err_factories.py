"""Promise: lazy factories and copies refuse bad arguments with safetile errors (at build or
when the op runs), never raw NumPy errors."""
from _errq import *

run_cases([
    ("zeros(-1)", lambda: ct.zeros(-1).sync()), ("zeros('a')", lambda: ct.zeros("a").sync()),
    ("zeros((2,-3))", lambda: ct.zeros((2, -3)).sync()), ("zeros(4, dtype='nope')", lambda: ct.zeros(4, dtype="nope").sync()),
    ("full(4, 'x')", lambda: ct.full(4, "x").sync()), ("full(4, None)", lambda: ct.full(4, None).sync()),
    ("rand(4, seed='x')", lambda: ct.rand(4, seed="x").sync()), ("rand(4, seed=-1)", lambda: ct.rand(4, seed=-1).sync()),
    ("randn(-3)", lambda: ct.randn(-3, seed=0).sync()), ("arange('a')", lambda: ct.arange("a").sync()),
    ("zeros(4, device='tpu')", lambda: ct.zeros(4, device="tpu").sync()), ("zeros(2**62)", lambda: ct.zeros(2 ** 62).sync()),
    ("from_numpy('abc')", lambda: ct.from_numpy("abc").sync()), ("from_numpy(object array)", lambda: ct.from_numpy(np.array([object()])).sync()),
    ("from_numpy(complex)", lambda: ct.from_numpy(np.zeros(4, np.complex64)).sync()),
    ("to_device(x, 'tpu')", lambda: ct.to_device(ct.zeros(4).sync(), "tpu").sync()),
    ("full(4, 1e400 as int8)", lambda: ct.full(4, 10 ** 30, dtype=ct.int8).sync()),
], "bad factory calls")
