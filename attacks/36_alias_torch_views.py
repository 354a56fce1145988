"""Promise: Mut vs any other argument overlapping it is refused — torch transpose, expand
(stride 0 read-only Ref over the Mut), unfold, as_strided views passed raw as Ref."""
import torch
from _common import *

tt = torch.zeros(64, 64)
M = lambda: ct.from_dlpack(tt).partition((16, 16))  # noqa: E731
cases = [
    ("t.T", lambda: tt.t()),
    ("expand of one row", lambda: tt[5:6].expand(64, 64)),
    ("unfold windows", lambda: tt.view(-1)[:4096].unfold(0, 64, 64)),
    ("as_strided diagonal", lambda: tt.as_strided((64, 1), (65, 1)).expand(64, 64)),
    ("as_strided sparse last element", lambda: tt.view(-1)[4095:].expand(64, 64)),
]
for name, mk in cases:
    expect_refusal(lambda: fill2d(M(), mk()).sync(), ct.AliasError, [], name)
held("torch views aliasing the Mut refused")
