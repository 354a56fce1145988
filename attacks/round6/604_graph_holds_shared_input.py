"""G6 / G4. A graph captured with a Shared input s: after capture, the program tries to get the
tensor back (s.try_unwrap(), s.try_partition()) and write it, while the graph can still replay
and hand out s again (g.launch() returns the captured value, s among it). Either the unwrap is
refused while the graph lives, or a replay after it is refused; never may a replay return a live
Shared whose memory a partition writes, nor read memory a partition is writing unordered."""
from _r6 import *


def scenario(kind):
    xb = arr(64, 2.0)
    s = ct.from_dlpack(xb).shared()
    z = ct.from_dlpack(arr(64)).partition(16)
    g = fill1(z, s).graph()
    c = None
    try:
        if kind == "unwrap":
            t = s.try_unwrap()
            if t is None:
                return "unwrap answered None (held by graph)"
            p = t.partition(16)
        else:
            p = s.try_partition(16)
            if p is None:
                return "try_partition answered None"
    except Exception as e:  # noqa
        return f"unwrap refused: {type(e).__name__}" if is_st(e) else f"RAW {type(e).__name__}: {e}"
    # the tensor is ours now: write it
    (p,) = inc(p).sync()
    try:
        vals = g.launch()
    except Exception as e:  # noqa
        return f"replay refused after unwrap: {type(e).__name__}"
    # the replay ran: does it hand out a Shared whose memory a live partition owns?
    shared_out = [v for v in (vals if isinstance(vals, tuple) else (vals,)) if isinstance(v, ct.Shared)]
    msgs = []
    for so in shared_out:
        try:
            a = so.to_numpy()
            msgs.append(f"Shared readable ({a[0]}) while partition of its memory lives")
        except Exception as e:  # noqa
            pass
    return "BAD: " + "; ".join(msgs) if msgs else "replay ran, no live Shared aliasing the partition"


out = {k: scenario(k) for k in ("unwrap", "try_partition")}
if any(v.startswith(("BAD", "RAW")) for v in out.values()):
    broken(str(out))
held(str(out))
