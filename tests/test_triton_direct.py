"""The warm start without Triton (backends/triton/direct.py), with the CUDA driver and Triton's
launcher module replaced by stand-ins (tests/test_gpu.py runs the real thing in a second process)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("triton")
from safetile.backends.triton import cache, direct  # noqa: E402


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "tr"))
    return tmp_path


def _compiled(tmp_path, scratch=0, descriptors=None):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF-cubin")
    md = SimpleNamespace(num_warps=4, num_ctas=1, shared=65536, launch_pdl=True, launch_cooperative_grid=False,
                         global_scratch_size=scratch, profile_scratch_size=0, tensordesc_meta=descriptors)
    return SimpleNamespace(metadata=md, name="st_k", metadata_group={"st_k.cubin": str(cubin)})


def _fake_launcher(tmp_path, monkeypatch, signature):
    """Put a launcher module file where Triton's cache keeps the one for ``signature``."""
    import hashlib
    import sysconfig
    from triton.backends.nvidia import driver as nv
    from triton.runtime.build import platform_key
    from triton.runtime.cache import get_cache_manager
    src = nv.make_launcher({}, dict(signature), None)
    mgr = get_cache_manager(hashlib.sha256((src + platform_key()).encode()).hexdigest())
    return mgr.put(b"not really a shared object", "__triton_launcher" + sysconfig.get_config_var("EXT_SUFFIX"),
                   binary=True)


def test_record_then_load_without_triton_objects(tmp_cache, monkeypatch):
    sig = {"x_ptr": "*fp32", "x_n0": "i32"}
    opts = {"num_warps": 4, "launch_pdl": True}
    so = _fake_launcher(tmp_cache, monkeypatch, sig)
    direct.remember("ab" * 32, opts, 90, _compiled(tmp_cache), sig)
    record = json.loads(next((tmp_cache / "st").rglob("direct_*.json")).read_text())
    assert record["launcher"] == so and record["shared"] == 65536 and record["name"] == "st_k"
    loads, calls = [], []
    monkeypatch.setattr(direct, "_load_function", lambda cubin, name, shared, device: loads.append(
        (cubin, name, shared, device)) or 0xF00)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=lambda *a: calls.append(a)))
    call, prefix = direct.load("ab" * 32, opts, 90, device=0)
    assert loads == [(b"\x7fELF-cubin", "st_k", 65536, 0)]
    call(2, 1, 1, 7, *prefix, 123, 8)
    assert calls == [(2, 1, 1, 7, 0xF00, False, True, None, None, (4, 1, 65536), None, None, None, 123, 8)]
    # anything that differs is a miss: other options, another target, a changed Triton environment
    assert direct.load("ab" * 32, {**opts, "num_warps": 8}, 90, 0) is None
    assert direct.load("ab" * 32, opts, 80, 0) is None
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert direct.load("ab" * 32, opts, 90, 0) is None


def test_stale_or_unusable_records_fall_back(tmp_cache, monkeypatch):
    sig = {"x_ptr": "*fp32"}
    _fake_launcher(tmp_cache, monkeypatch, sig)
    monkeypatch.setattr(direct, "_load_function", lambda *a: 1)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=print))
    c = _compiled(tmp_cache)
    direct.remember("cd" * 32, {}, 90, c, sig)
    assert direct.load("cd" * 32, {}, 90, 0) is not None
    (tmp_cache / "k.cubin").write_bytes(b"another binary of another size")
    assert direct.load("cd" * 32, {}, 90, 0) is None  # the cubin changed: through Triton
    direct.remember("ef" * 32, {}, 90, _compiled(tmp_cache, descriptors=[{"swizzle": 1}]), sig)
    assert not list((tmp_cache / "st").rglob("ef*/direct_*.json")) and direct.load("ef" * 32, {}, 90, 0) is None

    def broken(*a):
        raise OSError("CUDA driver error 200")
    direct.remember("12" * 32, {}, 90, _compiled(tmp_cache), sig)
    monkeypatch.setattr(direct, "_load_function", broken)
    assert direct.load("12" * 32, {}, 90, 0) is None


def test_scratch_memory_per_launch(tmp_cache, monkeypatch):
    torch = pytest.importorskip("torch")
    sig = {"x_ptr": "*fp32"}
    _fake_launcher(tmp_cache, monkeypatch, sig)
    calls = []
    monkeypatch.setattr(direct, "_load_function", lambda *a: 9)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=lambda *a: calls.append(a)))
    direct.remember("34" * 32, {}, 90, _compiled(tmp_cache, scratch=128), sig)
    call, prefix = direct.load("34" * 32, {}, 90, 0)
    sizes = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda n, dtype, device: sizes.append(n) or real_empty(n, dtype=dtype))
    call(3, 2, 1, 0, *prefix, 5)
    assert sizes == [3 * 2 * 128] and isinstance(calls[0][7], int) and calls[0][4] == 9


def test_version_without_importing_triton():
    import importlib.metadata
    assert cache.triton_version() == importlib.metadata.version("triton")


def test_launcher_module_loads_without_importing_triton(tmp_path):
    """Triton's launcher module looks up one name in Triton's driver module when it loads (as the C
    code does: an import of the dotted name found in sys.modules); the stand-in answers it and
    is gone afterwards, and Triton is not imported."""
    import subprocess
    import sys
    fake = tmp_path / "launcher.py"
    fake.write_text("import builtins\n"
                    "driver = builtins.__import__('triton.backends.nvidia.driver', fromlist=['__doc__'])\n"
                    "TENSOR_MAP = driver.PyCUtensorMap\n"
                    "def launch(*args):\n    return args\n")
    code = ("import sys\n"
            "from safetile.backends.triton import direct\n"
            f"m = direct._launcher_module({str(fake)!r})\n"
            "assert m.launch(1, 2) == (1, 2) and m.TENSOR_MAP.__name__ == 'PyCUtensorMapUnused'\n"
            "assert 'triton' not in sys.modules and direct._DRIVER_MODULE not in sys.modules\n"
            "import triton.backends.nvidia.driver as real\n"
            "assert real.__file__.endswith('driver.py')\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={**__import__("os").environ,
                   "PYTHONPATH": __import__("os").pathsep.join(sys.path)})
