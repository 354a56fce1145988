"""Promise: aliasing is by memory, not by object: two from_dlpack wrappers of one NumPy
array (and a wrapper of a torch view of the same storage, and a DLPack round trip through
torch of a safetile tensor) are the same memory; Mut vs Ref over them is refused."""
import torch
from _common import *

a = np.zeros(256, np.float32)
expect_refusal(lambda: fill(ct.from_dlpack(a).partition(64), ct.from_dlpack(a)).sync(), ct.AliasError, ["'z'", "'x'"], "two from_dlpack(a)")
expect_refusal(lambda: fill(ct.from_dlpack(a).partition(64), ct.Tensor(a)).sync(), ct.AliasError, [], "from_dlpack(a) vs ct.Tensor(a)")
expect_refusal(lambda: fill(ct.from_dlpack(a).partition(64), a).sync(), ct.AliasError, [], "from_dlpack(a) vs raw a")
tt = torch.zeros(256)
expect_refusal(lambda: fill(ct.from_dlpack(tt).partition(64), ct.from_dlpack(tt.view(16, 16)[3])).sync(), ct.AliasError, [], "torch view row")
expect_refusal(lambda: fill(ct.from_dlpack(tt).partition(64), tt[100:164]).sync(), ct.AliasError, [], "raw torch slice")
t = ct.zeros(256).sync()
rt = torch.from_dlpack(t)           # export, then re-import
back = ct.from_dlpack(rt[10:20])
expect_refusal(lambda: fill(t.partition(64), back).sync(), ct.AliasError, [], "DLPack round trip through torch")
t2 = ct.zeros(256).sync()
na = np.from_dlpack(t2)
expect_refusal(lambda: fill(t2.partition(64), na).sync(), ct.AliasError, [], "NumPy DLPack export passed raw as Ref")
held("wrappers of one memory alias")
