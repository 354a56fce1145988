"""Promise (safe.md): conflicting launches on other streams wait for unfinished work; the
registry holds one entry per running terminal. Two threads run chains in opposite orders
(A: write a reading b, then write b reading a; B: the reverse) with host closures between
the steps, many times: no deadlock, no error, results consistent."""
import threading
import time

from _common import *


@ct.entry
def add1(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + 1.0)


a_t = ct.zeros(256).sync()
b_t = ct.zeros(256).sync()
va, vb = a_t[0:256], b_t[0:256]          # views usable as Refs while the other is moved
pa, pb = a_t.partition(64), b_t.partition(64)
bad = []


def chain_a():
    global pa
    for _ in range(15):
        try:
            pa, _ = add1(pa, vb).inspect(lambda v: time.sleep(0.002)).sync()
        except Exception as e:  # noqa: BLE001
            bad.append(f"A: {type(e).__name__}: {str(e)[:120]}")
            return


def chain_b():
    global pb
    for _ in range(15):
        try:
            pb, _ = add1(pb, va).inspect(lambda v: time.sleep(0.002)).sync()
        except Exception as e:  # noqa: BLE001
            bad.append(f"B: {type(e).__name__}: {str(e)[:120]}")
            return


ta, tb = threading.Thread(target=chain_a), threading.Thread(target=chain_b)
ta.start(); tb.start()
ta.join(40); tb.join(40)
if ta.is_alive() or tb.is_alive():
    broken("deadlock: cross-dependent launches on two threads never finished")
if bad:
    broken("; ".join(bad[:4]))
held("no deadlock between cross-dependent launches")
