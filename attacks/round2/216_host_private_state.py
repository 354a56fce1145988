"""Promise (safety.md G6): 'While a Shared handle lives, nothing writes its memory'; (G4) 'A
value moved into a launch ... cannot be used until it is given back'; the brief's attacker
may use private attributes and __class__ assignment on host objects (safety.md guards
kernel code's access to private names, G1 mechanism 2; nothing is said for host code).

a. host code reaches a live Shared's raw array through private attributes and writes it;
b. host code clears a moved tensor's private 'moved' mark and partitions it again while the
   first partition lives (two mutable owners of one memory);
c. `__class__` assignment between safetile handle classes is allowed: the swapped object
   (and a launch holding it) then fails with raw AttributeErrors, not safetile errors."""
from _r2 import *


def body():
    problems = []
    # a
    s = ct.ones(64).sync().shared()
    try:
        arr = s.__dict__["_tensor"].__dict__["_data"]
        arr[0] = 42.0
        if s.to_numpy()[0] == 42.0:
            problems.append("a: s.__dict__['_tensor'].__dict__['_data'][0] = 42 wrote a live Shared")
    except Exception:  # noqa: BLE001
        pass
    # b
    t = ct.zeros(64).sync()
    p1 = t.partition(16)
    try:
        t.__dict__["_moved"] = None
        p2 = t.partition(16)
        problems.append("b: after t.__dict__['_moved'] = None a moved tensor was partitioned a second time "
                        "(two live mutable partitions of one memory)")
    except Exception:  # noqa: BLE001
        pass
    # c
    s2 = ct.ones(64).sync().shared()
    op = fill(ct.zeros(64).sync().partition(16), s2)
    try:
        s2.__class__ = ct.Tensor
        try:
            op.sync()
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                problems.append(f"c: `shared.__class__ = ct.Tensor` accepted; a launch holding it then raises "
                                f"{type(e).__module__}.{type(e).__name__}: {e}")
    except Exception:  # noqa: BLE001
        pass
    if problems:
        broken("; ".join(problems))
    held("host-side private state protected")


run_guarded(body, "host private state")
