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


def _fake_launcher(tmp_path, monkeypatch, signature=None):
    """safetile's launcher build replaced: a file standing for the module."""
    so = tmp_path / "launcher.so"
    so.write_bytes(b"not really a shared object")
    monkeypatch.setattr(direct, "_own_launcher", lambda sig: str(so))
    return str(so)


def _remember(*args):
    t = direct.remember(*args)
    if t is not None:
        t.join()


def test_record_then_load_without_triton_objects(tmp_cache, monkeypatch):
    sig = {"x_ptr": "*fp32", "x_n0": "i32"}
    opts = {"num_warps": 4, "launch_pdl": True}
    so = _fake_launcher(tmp_cache, monkeypatch, sig)
    _remember("ab" * 32, opts, 90, _compiled(tmp_cache), sig)
    record = json.loads(next((tmp_cache / "st").rglob("direct_*.json")).read_text())
    assert record["launcher"] == so and record["shared"] == 65536 and record["name"] == "st_k"
    loads, calls = [], []
    monkeypatch.setattr(direct, "_load_function", lambda cubin, name, shared, device: loads.append(
        (cubin, name, shared, device)) or 0xF00)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=lambda *a: calls.append(a)))
    call, prefix = direct.load("ab" * 32, opts, 90, 0, len(sig))
    assert loads == [(b"\x7fELF-cubin", "st_k", 65536, 0)]
    call(2, 1, 1, 7, *prefix, 123, 8)
    assert calls == [(2, 1, 1, 7, 0xF00, False, True, None, None, (4, 1, 65536), None, None, None, 123, 8)]
    # anything that differs is a miss: other options, another target, a changed Triton environment
    assert direct.load("ab" * 32, {**opts, "num_warps": 8}, 90, 0, len(sig)) is None
    assert direct.load("ab" * 32, opts, 80, 0, len(sig)) is None
    assert direct.load("ab" * 32, opts, 90, 0, len(sig) + 1) is None  # another parameter count
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert direct.load("ab" * 32, opts, 90, 0, len(sig)) is None


def test_stale_or_unusable_records_fall_back(tmp_cache, monkeypatch):
    sig = {"x_ptr": "*fp32"}
    _fake_launcher(tmp_cache, monkeypatch, sig)
    monkeypatch.setattr(direct, "_load_function", lambda *a: 1)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=print))
    c = _compiled(tmp_cache)
    _remember("cd" * 32, {}, 90, c, sig)
    assert direct.load("cd" * 32, {}, 90, 0, 1) is not None
    (tmp_cache / "k.cubin").write_bytes(b"another binary of another size")
    assert direct.load("cd" * 32, {}, 90, 0, 1) is None  # the cubin changed: through Triton
    _remember("ef" * 32, {}, 90, _compiled(tmp_cache, descriptors=[{"swizzle": 1}]), sig)
    assert not list((tmp_cache / "st").rglob("ef*/direct_*.json")) and direct.load("ef" * 32, {}, 90, 0, 1) is None

    def broken(*a):
        raise OSError("CUDA driver error 200")
    _remember("12" * 32, {}, 90, _compiled(tmp_cache), sig)
    monkeypatch.setattr(direct, "_load_function", broken)
    assert direct.load("12" * 32, {}, 90, 0, 1) is None


def test_scratch_memory_per_launch(tmp_cache, monkeypatch):
    torch = pytest.importorskip("torch")
    sig = {"x_ptr": "*fp32"}
    _fake_launcher(tmp_cache, monkeypatch, sig)
    calls = []
    monkeypatch.setattr(direct, "_load_function", lambda *a: 9)
    monkeypatch.setattr(direct, "_launcher_module", lambda path: SimpleNamespace(launch=lambda *a: calls.append(a)))
    _remember("34" * 32, {}, 90, _compiled(tmp_cache, scratch=128), sig)
    call, prefix = direct.load("34" * 32, {}, 90, 0, 1)
    sizes = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda n, dtype, device: sizes.append(n) or real_empty(n, dtype=dtype))
    call(3, 2, 1, 0, *prefix, 5)
    assert sizes == [3 * 2 * 128] and isinstance(calls[0][7], int) and calls[0][4] == 9


def test_version_without_importing_triton():
    import importlib.metadata
    assert cache.triton_version() == importlib.metadata.version("triton")


def test_own_launcher_source_does_not_import_triton():
    """safetile's launcher is Triton's source minus the driver-module lookup in its initialisation."""
    from triton.backends.nvidia import driver as nv
    sig = {"x_ptr": "*fp16", "x_n0": "i32", "scale": "fp32"}
    theirs = nv.make_launcher({}, dict(sig), None)
    ours = direct._launcher_source(sig)
    assert "PyImport_ImportModule" in theirs and "PyImport_ImportModule" not in ours
    removed = {ln.strip() for ln in theirs.splitlines()} - {ln.strip() for ln in ours.splitlines()}
    assert removed == {'PyObject* driver_mod = PyImport_ImportModule("triton.backends.nvidia.driver");',
                       "if (driver_mod == NULL) {", 'py_tensor_map_type = PyObject_GetAttrString(driver_mod, "PyCUtensorMap");',
                       "if (py_tensor_map_type == NULL) {"}
    assert set(ours.splitlines()) <= set(theirs.splitlines())  # nothing added


def test_launcher_modules_of_one_name_load_apart(tmp_path):
    """Two extension modules both called __triton_launcher (different signatures) load as two
    modules: under one name CPython hands back the first."""
    import shutil
    if not (shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")):
        pytest.skip("no C compiler")
    from triton.runtime.build import _build
    paths = []
    for n in (15, 18):
        d = tmp_path / str(n)
        d.mkdir()
        src = d / "m.c"
        src.write_text("#include <Python.h>\n"
                       f"static PyObject* launch(PyObject* s, PyObject* a) {{ return PyLong_FromLong({n}); }}\n"
                       "static PyMethodDef M[] = {{\"launch\", launch, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};\n"
                       "static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, \"__triton_launcher\", NULL, -1, M};\n"
                       "PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&D); }\n")
        paths.append(_build("__triton_launcher", str(src), str(d), [], [], [], []))
    assert [direct._launcher_module(p).launch() for p in paths] == [15, 18]
