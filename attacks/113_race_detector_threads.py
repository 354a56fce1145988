"""Promise (DESIGN): 'All of this holds with many host threads at once ...; compile state
belongs to one compilation, never to a process-wide global'; the race detector records the
accesses 'of one launch'. Thread A runs ct.detect_races on a race-free kernel while thread
B launches a racy unchecked kernel (not under the detector) and thread C runs detect_races
on a racy kernel: A must never report a race, C must always report its own."""
import threading

from _common import *

SRC = '''
@ct.kernel
def clean(o):
    ct.store(o, index=(ct.bid(0),), tile=ct.full((64,), 1.0, ct.float32))

@ct.kernel
def racy(o):
    ct.store(o, index=(0,), tile=ct.full((64,), 1.0, ct.float32))
'''
ks = kernel_from_source(SRC, tag="racethr")
bad = []
stop = threading.Event()


def a():
    for i in range(25):
        rep = ct.detect_races(ks["clean"], (8, 1, 1), (np.zeros(512, np.float32),), raise_on_race=False)
        if rep:
            bad.append(f"A (race-free kernel) got a race report: {str(rep).splitlines()[-1][:120]}")
            break
    stop.set()


def b():
    while not stop.is_set():
        ct.launch(None, (8, 1, 1), ks["racy"], (np.zeros(512, np.float32),))


def c():
    while not stop.is_set():
        rep = ct.detect_races(ks["racy"], (8, 1, 1), (np.zeros(512, np.float32),), raise_on_race=False)
        if not rep:
            bad.append("C (racy kernel) got no race report")
            break


ths = [threading.Thread(target=f) for f in (a, b, c)]
[t.start() for t in ths]
[t.join(60) for t in ths]
if any(t.is_alive() for t in ths):
    broken("hang")
if bad:
    broken("; ".join(bad))
held("race detection is per launch under threads")
