"""ct.tune.exhaustive_search: real searches on the CPU backend and in Triton's interpreter,
the per-kernel/device/shape cache (memory and disk), failing configurations, input errors,
and a search on CUDA (skipped without a GPU)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from triton_interp import triton_interpreter

import safetile as ct
from safetile.tune import TuningError


@ct.kernel
def add(a, b, c, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (T,)) + ct.load(b, (i,), (T,)))


@ct.kernel
def scale_repeat(x, y, T: ct.Constant[int], REPEAT: ct.Constant[int]):
    """y = 2x, recomputed REPEAT times: the cost grows with REPEAT, the result does not."""
    i = ct.bid(0)
    t = ct.load(x, (i,), (T,))
    out = t
    for _ in range(REPEAT):
        out = ct.sqrt(t * t * 4.0)
    ct.store(y, (i,), out)


N = 4096
RNG = np.random.default_rng(0)
A = RNG.random(N).astype(np.float32)
B = RNG.random(N).astype(np.float32)
FAST = dict(reps=2, warmup=0, progress=False)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SAFETILE_DISABLE_CACHE", raising=False)
    ct.tune.clear_cache()
    yield tmp_path / "cache"
    ct.tune.clear_cache()


class Calls:
    """grid_fn/args_fn for ``add`` that count how often the search launched."""

    def __init__(self, a=A, b=B):
        self.a, self.b, self.c = a, b, np.zeros_like(a)
        self.grids = 0

    def grid(self, cfg):
        self.grids += 1
        return (ct.cdiv(len(self.a), cfg["T"]),)

    def args(self, cfg):
        return (self.a, self.b, self.c, cfg["T"])


def search(space, calls, kernel=add, **kw):
    return ct.tune.exhaustive_search(space, None, calls.grid, kernel, calls.args, **{**FAST, **kw})


# ----------------------------------------------------------------------------- searching

def test_picks_the_clearly_fastest_config_and_its_result_is_correct():
    x = RNG.random(N).astype(np.float32)
    y = np.zeros_like(x)
    space = [dict(T=t, REPEAT=r, num_warps=w) for r in (200, 1) for t in (256, 1024) for w in (4, 8)]
    res = ct.tune.exhaustive_search(space, None, lambda cfg: (ct.cdiv(N, cfg["T"]),), scale_repeat,
                                    lambda cfg: (x, y, cfg["T"], cfg["REPEAT"]), **FAST)
    assert res.config in space and res.config["REPEAT"] == 1
    assert len(res.trials) == len(space) and all(t.ok for t in res.trials)
    assert [t.config for t in res.trials] == space
    assert res.time_ms == min(t.time_ms for t in res.trials) > 0
    assert res.hints == {"num_warps": res.config["num_warps"]} == res.kernel.hints
    assert res.kernel is not scale_repeat and not res.cached and res.device == "cpu"
    y[:] = 0
    ct.launch(None, (ct.cdiv(N, res.config["T"]),), res.kernel, (x, y, res.config["T"], 1))
    np.testing.assert_allclose(y, 2 * x, rtol=1e-6)


def test_failing_configs_are_recorded_and_skipped():
    calls = Calls()

    def args(cfg):
        if cfg["T"] == 64:
            raise RuntimeError("no buffers for T=64")
        return calls.args(cfg)

    space = [dict(T=3), dict(T=128), dict(T=64), dict(T=512, num_stages=2)]
    res = ct.tune.exhaustive_search(space, None, calls.grid, add, args, **FAST)
    errors = {t.config["T"]: t.error for t in res.trials}
    assert "powers of two" in errors[3] and errors[64] == "RuntimeError: no buffers for T=64"
    assert errors[128] is None and errors[512] is None
    assert res.config["T"] in (128, 512) and res.trials[0].time_ms is None
    ct.launch(None, calls.grid(res.config), res.kernel, calls.args(res.config))
    np.testing.assert_array_equal(calls.c, A + B)


def test_all_configs_failing_is_one_clear_error():
    with pytest.raises(TuningError, match=r"all 2 configurations of 'add' failed:\n.*powers of two"):
        search([dict(T=3), dict(T=5)], Calls())


def test_cutile_style_namespaces_and_hints_fn():
    calls = Calls()
    grid = lambda cfg: (ct.cdiv(N, cfg.T),)  # noqa: E731
    args = lambda cfg: (calls.a, calls.b, calls.c, cfg.T)  # noqa: E731
    space = [SimpleNamespace(T=256, occ=1), SimpleNamespace(T=1024, occ=2)]
    res = ct.tune.exhaustive_search(space, None, grid, add, args, lambda cfg: {"occupancy": cfg.occ}, **FAST)
    assert res.config in space and res.hints == {"occupancy": res.config.occ} == res.kernel.hints


def test_configs_without_hints_reuse_the_kernel():
    res = search([dict(T=256), dict(T=512)], Calls())
    assert res.kernel is add and res.hints == {}


def test_progress_line_on_stderr(capsys):
    search([dict(T=256), dict(T=512)], Calls(), progress=True)
    assert "tuning add" in capsys.readouterr().err
    search([dict(T=256), dict(T=512)], Calls(), progress=False, cache=False)
    assert capsys.readouterr().err == ""


def test_time_ms_on_the_host():
    calls = []
    t = ct.tune.time_ms(lambda: calls.append(1), cuda=False, reps=5, warmup=2)
    assert len(calls) == 7 and 0 <= t < 100
    with pytest.raises(ValueError, match="reps must be an integer >= 1"):
        ct.tune.time_ms(lambda: None, cuda=False, reps=0)


# ----------------------------------------------------------------------------- cache

def test_cache_hit_skips_the_search_from_memory_and_disk(cache_dir):
    space = [dict(T=256), dict(T=1024, num_warps=8)]
    first = search(space, Calls())
    files = list((cache_dir / "tune").glob("*.json"))
    assert not first.cached and [f.stem for f in files] == [first.key]
    entry = json.loads(files[0].read_text())
    assert entry["device"] == "cpu" and entry["kernel"].endswith(".add") and len(entry["trials"]) == 2

    for forget_memory in (False, True):
        if forget_memory:
            ct.tune.clear_cache()
        calls = Calls()
        again = search(space, calls)
        assert again.cached and calls.grids == 0
        assert again.config == first.config and again.time_ms == first.time_ms and again.hints == first.hints
        assert [t.time_ms for t in again.trials] == [t.time_ms for t in first.trials]

    calls = Calls()
    forced = search(space, calls, force=True)
    assert not forced.cached and calls.grids > 0 and forced.key == first.key


@pytest.mark.parametrize("garbage", ["\x00not json", "{}", "[1, 2]", "corrupt-best"])
def test_corrupt_cache_file_means_a_new_search(cache_dir, garbage):
    space = [dict(T=256), dict(T=512)]
    first = search(space, Calls())
    path = cache_dir / "tune" / f"{first.key}.json"
    if garbage == "corrupt-best":
        entry = json.loads(path.read_text())
        entry["best"] = 7
        garbage = json.dumps(entry)
    path.write_text(garbage)
    ct.tune.clear_cache()
    calls = Calls()
    res = search(space, calls)
    assert not res.cached and calls.grids > 0
    assert json.loads(path.read_text())["best"] in (0, 1)  # rewritten


def test_key_covers_shapes_search_space_and_user_key():
    space = [dict(T=256), dict(T=512)]
    base = search(space, Calls())
    small = Calls(A[:1024].copy(), B[:1024].copy())
    assert search(space, small).key != base.key                 # other shapes: another entry
    assert search(space[:1], Calls()).key != base.key           # other search space
    assert search(space, Calls(A.astype(np.float64), B.astype(np.float64))).key != base.key
    by_key = search(space, Calls(), key="gemm-big")
    assert not by_key.cached
    assert search(space, small, key="gemm-big").cached          # a user key replaces the shapes


def test_cache_off_and_disabled_write_nothing(cache_dir, monkeypatch):
    space = [dict(T=256), dict(T=512)]
    assert not search(space, Calls(), cache=False).cached
    assert not search(space, Calls(), cache=False).cached
    assert not cache_dir.exists()
    monkeypatch.setenv("SAFETILE_CACHE_DIR", "off")
    assert not search(space, Calls()).cached
    assert search(space, Calls()).cached  # in memory only
    assert not cache_dir.exists()


# ----------------------------------------------------------------------------- input errors

@pytest.mark.parametrize("space, kw, exc, match", [
    ([], {}, ValueError, "search_space is empty"),
    ({"T": 256}, {}, TypeError, "wrap a single configuration in a list"),
    (None, {}, TypeError, "search_space must be an iterable"),
    ([dict(T=256), dict(T=512, num_warps="8")], {}, ValueError, r"search_space\[1\]: hint num_warps='8' is invalid"),
    ([dict(T=256, num_warps=3)], {}, ValueError, "must be a power of two"),
    ([dict(T=256, num_warp=4)], {}, ValueError, "'num_warp' is not a kernel hint; did you mean 'num_warps'"),
    ([dict(T=256)], {"hints_fn": lambda cfg: {"warps": 4}}, TypeError, "unknown kernel hint 'warps'"),
    ([dict(T=256)], {"hints_fn": lambda cfg: 4}, TypeError, "must return a dict of hints"),
    ([dict(T=256)], {"hints_fn": 4}, TypeError, "hints_fn must be None or a callable"),
    ([dict(T=256)], {"reps": 0}, ValueError, "reps must be an integer >= 1"),
    ([dict(T=256)], {"warmup": -1}, ValueError, "warmup must be an integer >= 0"),
])
def test_bad_input_is_rejected_before_anything_runs(space, kw, exc, match):
    calls = Calls()
    with pytest.raises(exc, match=match):
        search(space, calls, **kw)
    assert calls.grids == 0


def test_bad_callables_and_kernel():
    calls = Calls()
    with pytest.raises(TypeError, match="grid_fn must be a callable"):
        ct.tune.exhaustive_search([dict(T=256)], None, (4,), add, calls.args)
    with pytest.raises(TypeError, match="args_fn must be a callable"):
        ct.tune.exhaustive_search([dict(T=256)], None, calls.grid, add, (A, B, A, 256))
    with pytest.raises(TypeError, match="kernel must be a @ct.kernel"):
        ct.tune.exhaustive_search([dict(T=256)], None, calls.grid, add.fn, calls.args)
    with pytest.raises(TuningError, match=r"args_fn failed for every configuration:\n.*tuple of 4 kernel argument"):
        ct.tune.exhaustive_search([dict(T=256)], None, calls.grid, add, lambda cfg: (A, B), **FAST)


# ----------------------------------------------------------------------------- Triton backend

def test_search_in_the_triton_interpreter():
    torch = pytest.importorskip("torch")
    a, b = torch.from_numpy(A[:256].copy()), torch.from_numpy(B[:256].copy())
    c = torch.zeros_like(a)
    space = [dict(T=64, num_warps=4), dict(T=128, num_stages=2), dict(T=100)]
    with triton_interpreter():
        res = ct.tune.exhaustive_search(space, None, lambda cfg: (ct.cdiv(256, cfg["T"]),), add,
                                        lambda cfg: (a, b, c, cfg["T"]), **FAST)
        assert res.device == "triton-interpreter" and res.config in space[:2]
        assert "powers of two" in res.trials[2].error
        c.zero_()
        ct.launch(None, (ct.cdiv(256, res.config["T"]),), res.kernel, (a, b, c, res.config["T"]))
    np.testing.assert_array_equal(c.numpy(), A[:256] + B[:256])


def test_bench_tune_gemm_runs_in_the_interpreter(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("with a GPU the bench tunes 4096³ on CUDA: run it directly")
    spec = importlib.util.spec_from_file_location("tune_gemm", Path(__file__).parents[1] / "bench" / "tune_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(SystemExit):
        mod.parse_args(["--configs", "32x32"])
    out = tmp_path / "tune_gemm.json"
    with triton_interpreter():
        res = mod.main(["--size", "32", "--configs", "32x32x16x4x1,16x16x16x4x2", "--tma", "0",
                        "--reps", "1", "--warmup", "0", "--out", str(out)])
    assert res["correct"] and res["device"] == "triton-interpreter" and len(res["trials"]) == 2
    assert json.loads(out.read_text())["best"] == res["best"]


@pytest.mark.gpu
def test_search_on_cuda():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    n = 1 << 22
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    space = [dict(T=t, num_warps=w) for t in (256, 1024, 4096) for w in (4, 8)] + [dict(T=3, num_warps=4)]
    stream = torch.cuda.Stream()
    res = ct.tune.exhaustive_search(space, stream, lambda cfg: (ct.cdiv(n, cfg["T"]),), add,
                                    lambda cfg: (a, b, c, cfg["T"]), reps=5, warmup=1, progress=False)
    assert res.device == torch.cuda.get_device_name() and res.config in space
    assert [t.ok for t in res.trials] == [True] * (len(space) - 1) + [False]
    assert 0 < res.time_ms == min(t.time_ms for t in res.trials if t.ok) < 10
    c.zero_()
    ct.launch(stream, (ct.cdiv(n, res.config["T"]),), res.kernel, (a, b, c, res.config["T"]))
    stream.synchronize()
    torch.testing.assert_close(c, a + b)
    assert ct.tune.exhaustive_search(space, stream, lambda cfg: (ct.cdiv(n, cfg["T"]),), add,
                                     lambda cfg: (a, b, c, cfg["T"]), progress=False).cached
    t = ct.tune.time_ms(lambda: torch.add(a, b, out=c), cuda=True, stream=stream, reps=5)
    assert 0 < t < 10


def test_cutile_forms_configs_of_any_kind_a_kernel_per_config_quiet_and_measurements():
    """cuTile Python's exhaustive_search: configurations of any type, ``kernel`` as a function of
    the configuration, ``quiet``, and ``best``/``successes``/``failures``/``summary()``."""
    from types import SimpleNamespace
    calls = Calls()
    space = [128, 256, 100]  # plain numbers: they reach the callbacks only (100 is not a power of two)
    res = ct.tune.exhaustive_search(space, None, lambda t: calls.grid({"T": t}), lambda t: add,
                                    lambda t: calls.args({"T": t}), quiet=True, reps=2, warmup=0)
    assert res.config in (128, 256) and res.best.config == res.config
    assert {m.config for m in res.successes} == {128, 256}
    assert [(c, e.__name__) for c, e, _ in res.failures] == [(100, "TileTypeError")]
    assert res.best.mean_us > 0 and res.best.num_samples == 2
    assert "2 succeeded, 1 failed" in res.summary()
    assert ct.tune.TuningResult[SimpleNamespace] is not None  # generic over the configuration type
