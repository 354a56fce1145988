"""torch.md collectives ("Refused before anything runs, arguments untouched: ... a group this process
is not in, torch.distributed not initialised"; round-6 fix: non-ProcessGroup groups and
uint16/32/64 refused) and G7 (a safetile error, never raw; tensors usable). With a world-size-1 gloo
group: groups that are ProcessGroups but not usable here (a group destroyed with
destroy_process_group, a hand-made ProcessGroup(rank, size) never registered, a ProcessGroup
subclass made in Python, dist.new_group(ranks=[]) result (not a member), GroupMember.WORLD/NON_GROUP_MEMBER),
and element types beyond the three refused ones (bool, complex64, float8_e4m3fn views, int8,
float16, bfloat16, float64). Each either runs correctly (all_reduce over one rank is the identity)
or is refused with a safetile error with the tensor unchanged and usable."""
from _r7 import *
import torch, tempfile
import torch.distributed as dist
from safetile.integrations import distributed as ctd


def tr(out, name, mk_tensor, group_fn):
    a = mk_tensor()
    before = a.copy()
    try:
        t = ct.from_dlpack(a)
    except BaseException as e:  # noqa
        out[name] = "not a safetile tensor: " + err(e, 40)
        return
    try:
        r = ctd.all_reduce(t, op="sum", group=group_fn()).sync()
        res = "ran" + ("" if np.array_equal(np.asarray(r).view(np.uint8), before.view(np.uint8)) else " WRONG")
        t = r
    except BaseException as e:  # noqa
        res = err(e, 70)
    try:
        t.to_numpy()
        if not np.array_equal(a.view(np.uint8), before.view(np.uint8)):
            res += " [tensor CHANGED]"
    except BaseException as e:  # noqa
        res += " [tensor unusable: " + err(e, 40) + "]"
    out[name] = res


def scenario():
    out = {}
    f = tempfile.NamedTemporaryFile(delete=False).name
    dist.init_process_group("gloo", init_method="file://" + f, rank=0, world_size=1)
    ok = lambda: np.arange(8, dtype=np.float32)  # noqa
    from torch.distributed.distributed_c10d import GroupMember
    tr(out, "control default group", ok, lambda: None)
    tr(out, "GroupMember.NON_GROUP_MEMBER", ok, lambda: GroupMember.NON_GROUP_MEMBER)
    tr(out, "GroupMember.WORLD", ok, lambda: GroupMember.WORLD)
    try:
        ng = dist.new_group(ranks=[])
    except Exception as e:  # noqa
        ng = e
    tr(out, "new_group(ranks=[])", ok, lambda: ng)
    try:
        raw_pg = dist.ProcessGroup(0, 1)
    except Exception as e:  # noqa
        raw_pg = None
    if raw_pg is not None:
        tr(out, "ProcessGroup(0,1) unregistered", ok, lambda: raw_pg)

    class MyPG(dist.ProcessGroup):
        pass
    try:
        my = MyPG(0, 1)
        tr(out, "Python ProcessGroup subclass", ok, lambda: my)
    except Exception as e:  # noqa
        out["Python ProcessGroup subclass"] = "cannot make: " + err(e, 40)
    for dt in (np.bool_, np.int8, np.float16, np.float64, np.int16, np.uint8):
        tr(out, f"dtype {np.dtype(dt).name}", lambda: np.ones(8, dtype=dt), lambda: None)
    g = dist.group.WORLD
    dist.destroy_process_group()
    tr(out, "destroyed default group", ok, lambda: g)
    tr(out, "after destroy, group=None", ok, lambda: None)
    return out


def judge(c, py):
    bad = [f"{k}: {v}" for k, v in c.items() if "(raw)" in v or "WRONG" in v or "CHANGED" in v or "unusable" in v]
    if bad:
        return "BROKEN", "C path: " + " | ".join(bad)
    return "HELD", "odd groups and element types refused or correct"


differential(scenario, judge)
