"""Thread stress: 8 host threads, 10,000 randomised launches of both styles, compiles interleaved.

Every thread runs its own random program (seeded, so a failure replays): safe launches
(``sync``, ``then`` chains, graph replays) on its own partitions reading a ``Shared``
input every thread reads, unchecked ``ct.launch``es on its own arrays, specialisations
compiled on the fly (new tile sizes, element types, ``Constant`` values) and kernels
defined and compiled while other threads launch. After every operation the thread
compares its data with its sequential NumPy reference. All threads also increment one
counter through their own views of the same memory, so the in-flight registry must order
them: the final count must equal the number of increments.
"""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import safetile as ct

THREADS = 8
LAUNCHES = 10_000  # over all threads
SIZE = 128


@ct.entry
def axpy(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], a: "E"):
    z.store(z.load() * 0.5 + ct.load_tile_like(x, z) * a)


@ct.entry
def bump(z: ct.Mut[ct.f32, "B"]):
    z.store(z.load() + 1.0)


@ct.kernel
def scale_add(x, y, out, s, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) * s + ct.load(y, index=(i,), shape=(T,)))


def fresh_kernel(k: int):
    """A kernel defined now: compiled from scratch while other threads launch and compile."""
    @ct.kernel
    def shift(x, out, T: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) + float(k))
    return shift


class Worker:
    """One thread's random program and its sequential reference."""

    def __init__(self, seed: int, shared_x: dict, counter, launches: int):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.shared_x = shared_x  # dtype name -> (Shared handle, its NumPy copy)
        self.counter = counter  # a Tensor over the global counter (this thread's own view)
        self.bumps = 0
        self.launches = launches
        self.done = 0

    def check(self, got, ref, what):
        tol = 1e-5 if got.dtype == np.float32 else 1e-12
        assert np.allclose(got, ref, rtol=tol, atol=tol), f"seed {self.seed}: {what} differs from the reference"

    def run(self):
        rng = self.rng
        dtype = rng.choice(["f32", "f64"])
        x, xref = self.shared_x[dtype]
        t = ct.from_dlpack(rng.standard_normal(SIZE).astype(xref.dtype))
        zref = t.to_numpy()
        while self.done < self.launches:
            op = rng.integers(0, 100)
            if op < 35:  # safe: one launch, synchronised; a tile size chosen at random compiles on demand
                b = int(rng.choice([16, 32, 64]))
                a = xref.dtype.type(rng.integers(-3, 4))  # the scalar's type binds the generic E too
                z, _, _ = axpy(t.partition(b), x, a).sync()
                t = z.unpartition()
                zref = zref * 0.5 + xref * a
                self.done += 1
            elif op < 50:  # safe: a then-chain of several launches
                n = int(rng.integers(2, 6))
                a = xref.dtype.type(rng.integers(-3, 4))
                chain = axpy(t.partition(32), x, a)
                for _ in range(n - 1):
                    chain = chain.then(lambda r: axpy(*r))
                z, _, _ = chain.sync()
                t = z.unpartition()
                for _ in range(n):
                    zref = zref * 0.5 + xref * a
                self.done += n
            elif op < 55:  # safe: a captured graph, replayed
                g = axpy(t.partition(64), x, xref.dtype.type(1)).then(lambda r: axpy(*r)).graph()
                reps = int(rng.integers(1, 4))
                for _ in range(reps):
                    g.launch()
                t = g.value[0].unpartition()
                g.close()
                for _ in range(2 * reps):
                    zref = zref * 0.5 + xref
                self.done += 2 * reps
            elif op < 85:  # unchecked launches with Constant tile sizes (compiles per value)
                T = int(rng.choice([8, 16, 32, 64, 128]))
                s = np.float32(rng.integers(-2, 3))
                xs = rng.standard_normal(SIZE).astype(np.float32)
                ys = rng.standard_normal(SIZE).astype(np.float32)
                out = np.full(SIZE, np.nan, np.float32)
                ct.launch(None, (SIZE // T,), scale_add, (xs, ys, out, s, T))
                self.check(out, xs * s + ys, "scale_add")
                self.done += 1
                continue
            elif op < 97:  # the global counter: every thread bumps the same memory through its own view
                p, = bump(self.counter.partition(SIZE)).sync()
                self.counter = p.unpartition()
                self.bumps += 1
                self.done += 1
                continue
            else:  # a kernel defined and compiled now
                k = int(rng.integers(0, 1000))
                xs = rng.standard_normal(SIZE).astype(np.float32)
                out = np.full(SIZE, np.nan, np.float32)
                ct.launch(None, (SIZE // 32,), fresh_kernel(k), (xs, out, 32))
                self.check(out, xs + k, "fresh kernel")
                self.done += 1
                continue
            self.check(t.to_numpy(), zref, "axpy")


@pytest.mark.parametrize("seed", [9])
def test_eight_threads_ten_thousand_launches(seed):
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads often: interleavings the default interval would hide
    try:
        rng = np.random.default_rng(seed)
        shared_x = {}
        for name, npd in (("f32", np.float32), ("f64", np.float64)):
            a = rng.standard_normal(SIZE).astype(npd)
            shared_x[name] = (ct.from_dlpack(a.copy()).shared(), a)
        counter = ct.zeros(SIZE).sync()
        views = [counter[:] for _ in range(THREADS)]
        workers = [Worker(seed * 100 + i, shared_x, views[i], LAUNCHES // THREADS) for i in range(THREADS)]
        errors = []

        def run(w):
            try:
                w.run()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=run, args=(w,)) for w in workers]
        for th in threads:
            th.start()
        for th in threads:
            th.join(600)
        assert not any(th.is_alive() for th in threads), "a thread hung"
        assert not errors, errors[0]
        assert sum(w.done for w in workers) >= LAUNCHES
        total = sum(w.bumps for w in workers)
        assert total > 0 and np.array_equal(counter.to_numpy(), np.full(SIZE, total, np.float32)), \
            "lost counter updates"
        for name, (s, a) in shared_x.items():
            assert np.array_equal(s.to_numpy(), a), "a Shared input was written"
    finally:
        sys.setswitchinterval(old)
