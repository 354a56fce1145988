"""Red team round 8 (attacks/round8/): launch caches keyed on a torch tensor's facts, read through the C++
reader (runtime/torch_facts.py) or torch's methods. Each attack that broke is here, on both safe paths
(the C twin and the Python path) and both fact readers where they differ."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import safetile as ct
from safetile.errors import LaunchTypeError
from safetile.runtime import torch_facts
from safetile.safe.errors import AliasError, TensorError
from safetile.safe.native import FAST

torch = pytest.importorskip("torch")
from torch.overrides import TorchFunctionMode  # noqa: E402

POISON = -7777.0


@ct.entry
def copyk(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def shift(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    """Every block reads block 0's slice of x: with x over z's own memory, a block reads what another writes."""
    z.store(ct.load_tile_like(x, z) * 0.0 + x.partition((16,)).load((0,)) + 1.0)


@ct.kernel
def copy_unchecked(x, z, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (T,)))


@pytest.fixture(params=["c+cxx", "c+torch", "python"])
def path(request):
    """The safe launch's C twin reading facts in C++ or through torch's methods, or the Python path."""
    loaded = FAST.load(build=True)
    saved = FAST.build, FAST.run
    if request.param == "python":
        FAST.off()
    elif not loaded:
        pytest.skip("the C twin cannot be built here")
    else:
        cap = None
        if request.param == "c+cxx":
            cap = request.getfixturevalue("cxx_facts").read
        FAST.use_facts(cap)
    yield request.param
    if loaded:
        FAST.load(build=False)
        FAST.use_facts(torch_facts.capsule())
    FAST.build, FAST.run = saved


def test_a_ref_longer_than_its_shrunk_storage_is_refused(path):
    """811: a storage resized smaller in place leaves the tensor showing 4096 floats over 16 bytes; a launch
    read 16 KiB of heap. Refused with a TensorError, before and inside a chain; the output untouched."""
    x = torch.full((4096,), 1.0)
    z = ct.full(4096, POISON).sync().partition(256)
    z, _ = copyk(z, x).sync()  # learned on the healthy tensor (the C twin's cached plan)
    x.untyped_storage().resize_(16)
    with pytest.raises(TensorError, match="storage"):
        copyk(z, x).sync()
    assert np.all(z.unpartition().to_numpy() == 1.0)  # the refused launch wrote nothing
    z2 = ct.full(4096, POISON).sync().partition(256)
    with pytest.raises(TensorError, match="storage"):
        copyk(z2, torch.ones(4096)).then(lambda v: copyk(v[0], x)).sync()


class _LyingPointer(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        r = func(*args, **(kwargs or {}))
        return r + (1 << 40) if getattr(func, "__name__", "") == "data_ptr" else r


class _NotNegative(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        r = func(*args, **(kwargs or {}))
        return False if getattr(func, "__name__", "") == "is_neg" else r


def test_a_torch_function_mode_cannot_answer_for_a_refs_memory(path):
    """812: a mode moving data_ptr() 2**40 away hid a Ref that is a view of the launch's own output from the
    overlap check; 813: a mode answering is_neg() False let a negative view through. safetile reads a
    tensor's facts with torch functions off (or in C++): refused with the mode as without it."""
    zt = ct.zeros(64).sync()
    xt = torch.from_dlpack(zt)  # a torch view of z's memory (an export beside the partition)
    zp = zt.partition(16)
    with pytest.raises(AliasError, match="overlaps"):
        shift(zp, xt).sync()
    with _LyingPointer(), pytest.raises(AliasError, match="overlaps"):
        shift(zp, xt).sync()
    y = torch.arange(64, dtype=torch.float32)
    zq = ct.full(64, POISON).sync().partition(16)
    with _NotNegative(), pytest.raises(TensorError, match="negative"):
        copyk(zq, y._neg_view()).sync()
    zq, _ = copyk(zq, y).sync()  # and a plain Ref under no mode runs, reading its values
    np.testing.assert_array_equal(zq.unpartition().to_numpy(), np.arange(64, dtype=np.float32))


def test_a_freed_storage_recycled_at_the_same_address_reads_the_new_memory(path):
    """805: inside a chain, x's storage freed in place and x re-pointed to new memory that the allocator put
    at the same address: x shows the facts its cached alias was made from, but the alias's memory is gone.
    The C twin took the stale alias (and refused); both paths now run on x's new memory."""
    n = 10_000_000  # 40 MB: an mmap'd block, whose address the next allocation of that size gets back
    x = torch.arange(n, dtype=torch.float32)
    recycled = []

    def swap(v):
        addr = x.data_ptr()
        x.untyped_storage().resize_(0)  # frees the bytes under x and under the chain's alias of x
        fresh = torch.full((n,), 7.0)
        recycled.append(fresh.data_ptr() == addr)
        x.set_(fresh.untyped_storage(), 0, (n,), (1,))
        return copyk(v[0], x)
    z = ct.full(64, POISON).sync().partition(16)
    z, _ = copyk(z, x).then(lambda v: copyk(v[0], x)).then(swap).sync()
    if not recycled[0]:
        pytest.skip("the allocator did not hand the address back here")
    assert np.all(z.unpartition().to_numpy() == 7.0)


@pytest.mark.parametrize("make", [lambda x: x._neg_view(), lambda x: x.to_sparse(),
                                  lambda x: torch.empty(64, device="meta")],
                         ids=["negative view", "sparse", "meta"])
def test_unchecked_launches_refuse_tensors_whose_memory_is_not_their_values(make):
    """819: an unchecked launch read a negative view's memory un-negated and raised a raw BufferError for
    sparse and meta tensors: refused with a LaunchTypeError, also after a plain tensor taught the launch
    its cached signature."""
    x = torch.arange(64, dtype=torch.float32)
    z = torch.full((64,), POISON)
    ct.launch(None, (4,), copy_unchecked, (x, z, 16))
    torch.testing.assert_close(z, x)
    z.fill_(POISON)
    with pytest.raises(LaunchTypeError, match="torch tensor"):
        ct.launch(None, (4,), copy_unchecked, (make(x), z, 16))
    assert torch.all(z == POISON)


@pytest.mark.threads
def test_another_thread_re_pointing_a_ref_never_gives_a_launch_a_mixed_tensor(path):
    """815: torch runs set_ without the GIL, so a launch could alias a tensor half-way through it (one
    state's pointer, another's strides) and read past its memory. Every launch now reads one whole state
    or is refused (the view past its storage): never a mix."""
    states = [torch.full((256,), 1.0), torch.full((512,), 2.0)[::2], torch.full((256,), 3.0)]
    x = torch.full((256,), 1.0)
    stop = threading.Event()

    def repoint():
        i = 0
        while not stop.is_set():
            s = states[i % 3]
            x.set_(s.untyped_storage(), s.storage_offset(), s.shape, s.stride())
            i += 1
    t = threading.Thread(target=repoint, daemon=True)
    t.start()
    seen: set = set()
    try:
        z = ct.full(256, POISON).sync().partition(64)
        for _ in range(400):
            try:
                z, _ = copyk(z, x).sync()
            except TensorError:
                continue
            whole = z.unpartition()
            seen.add(tuple(np.unique(whole.to_numpy())))
            z = whole.partition(64)
    finally:
        stop.set()
        t.join()
    assert seen <= {(1.0,), (2.0,), (3.0,)}, seen
