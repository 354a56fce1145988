"""Promise (safety.md G7): 'Every refusal is a safetile error raised before anything runs;
every argument stays byte-identical and usable' (HELPER rules: 'naming the argument').

Misuse of the runtime surfaces round 1 did not probe: graphs (after close, update with a
non-op, capture with a bad stream), streams and pools, combinators given non-callables /
non-ops, Shared.try_partition with a bad shape, borrow misuse, factories on a bad device,
Tensor.view/to, ct.value/ct.zip misuse, distributed collectives without init. Each must
raise a safetile error; where an argument is involved it must stay usable."""
import warnings

from _r2 import *


def body():
    warnings.simplefilter("ignore")
    fails = []

    def case(name, f, keep=(), names=()):
        before = [raw_bytes(k) for k in keep]
        try:
            r = f()
            fails.append(f"{name}: accepted -> {str(r)[:40]}")
        except Exception as e:  # noqa: BLE001
            if not is_safetile_error(e):
                fails.append(f"{name}: {type(e).__module__}.{type(e).__name__}: {str(e)[:60]}")
            else:
                for n in names:
                    if n not in str(e):
                        fails.append(f"{name}: does not name {n!r}: {str(e)[:70]}")
        for k, b in zip(keep, before):
            try:
                if raw_bytes(k) != b:
                    fails.append(f"{name}: changed an argument")
            except Exception as e:  # noqa: BLE001
                fails.append(f"{name}: left an argument unusable ({type(e).__name__}: {str(e)[:60]})")

    z = ct.zeros(256).sync().partition(64)
    x = ct.ones(256).sync()
    g = fill(z, x).graph()
    g.close()
    case("graph.launch after close", lambda: g.launch())
    g2 = fill(z, x).graph()
    case("graph.update(non-op)", lambda: g2.update(42))
    case("graph.update(lambda)", lambda: g2.update(lambda: 1))
    g2.close()
    case("graph_on(non-stream)", lambda: fill(z, x).graph_on("cpu"), keep=(x,))
    case("sync_on(non-stream)", lambda: fill(z, x).sync_on(3), keep=(x,))
    case("ct.Stream('bogus')", lambda: ct.Stream("bogus"))
    case("ct.Stream(device=7)", lambda: ct.Stream(7))
    case("ct.StreamPool(0)", lambda: ct.StreamPool("cpu", 0))
    case("ct.set_default_device('tpu')", lambda: ct.set_default_device("tpu"))
    case("ct.zeros(8, device='tpu')", lambda: ct.zeros(8, device="tpu").sync())
    case("x.to('tpu')", lambda: x.to("tpu").sync(), keep=(x,))
    case("x.view((7,))", lambda: x.view((7,)), keep=(x,), names=("7",))
    case("x.view('a')", lambda: x.view("a"), keep=(x,))
    case("op.then(42)", lambda: ct.value(1).then(42).sync())
    case("op.map(None)", lambda: ct.value(1).map(None).sync())
    case("op.inspect('s')", lambda: ct.value(1).inspect("s").sync())
    case("op.first() of a non-tuple", lambda: ct.value(1).first().sync())
    case("op.unzip() of a non-tuple", lambda: ct.value(1).unzip())
    s = ct.ones(256).sync().shared()
    case("s.try_partition('a')", lambda: s.try_partition("a"))
    case("s.try_partition((0,))", lambda: s.try_partition((0,)))
    try:
        s.to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"s.try_partition refusal consumed the Shared: {type(e).__name__}: {str(e)[:60]}")
    t = ct.zeros(64).sync()
    case("borrow_mut(Shared)", lambda: ct.borrow_mut(s))
    case("borrow_mut(42)", lambda: ct.borrow_mut(42))
    case("borrow_mut(t).partition(-1)", lambda: ct.borrow_mut(t).partition(-1))
    try:
        t.to_numpy()
    except Exception as e:  # noqa: BLE001
        fails.append(f"a refused borrow partition left t unusable: {type(e).__name__}: {str(e)[:80]}")
    case("ct.memcpy(x, x)", lambda: ct.memcpy(x, x).sync(), keep=(x,))
    case("ct.shared(42)", lambda: ct.shared(42))
    case("ct.detect_races(fill, 'grid', ())", lambda: ct.detect_races(fill, "grid", ()))
    try:
        from safetile.integrations import distributed as ctd
        case("all_reduce without init", lambda: ctd.all_reduce(x, op="sum").sync(), keep=(x,))
        case("all_reduce op='mean'", lambda: ctd.all_reduce(x, op="mean").sync(), keep=(x,), names=("mean",))
    except ImportError:
        pass
    if fails:
        broken(f"{len(fails)} runtime misuses badly refused: " + " | ".join(fails))
    held("runtime misuses refused with safetile errors, arguments intact")


run_guarded(body, "runtime misuse errors")
