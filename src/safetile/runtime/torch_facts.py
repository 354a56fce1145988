"""A torch tensor's launch facts read in C++, without a Python call per fact.

Every launch of a kernel on torch tensors reads, per tensor, its data pointer, dtype, shape,
strides and device (and the safe path its negative bit). From C, each read is a Python method
call into torch (``data_ptr()``, ``shape``, ``stride()``...): argument parsing, a warning
handler, the torch-function check and a new object per call, about 0.3 µs a tensor on a GPU
host, the largest share of ``ct.launch``'s own time. This module reads the same facts from the
tensor's C++ object, as every torch C++ extension does (``THPVariable_Unpack``), and hands the
reader to the other C modules (the lean launcher's ``Reader``, the safe launch) as a capsule.

It is a C++ extension built against the installed torch's headers, once per torch version, into
safetile's cache (``runtime/native.py``), by a detached process started beside a kernel's first
compile (it finishes even when the script that started it has ended); later launches load it.
Where it cannot be built (no C++ compiler, no torch headers) or is turned off
(``SAFETILE_TORCH_FACTS=0``), the callers read through Python calls as before: the facts are the
same either way (tests compare the two on every kind of tensor).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from typing import Any

from . import env
from .native import NativeModule, cache_dir
from ..locks import FORK_LOCKS

_NAME = "safetile_torch_facts"

# The facts, the reader's type and a helper, as every C module using the reader declares them (this
# module's own C++ source, lean_source.py, safe/native_source.py).
C_DECLARATIONS = r"""
#define SAFETILE_FACTS_MAX_DIMS 16
typedef struct {
  uintptr_t ptr;      /* data_ptr() */
  PyObject *dtype;    /* the torch.dtype object (borrowed: dtypes live as long as torch) */
  int device;         /* get_device(): -1 on the CPU */
  int neg;            /* is_neg() or is_conj(): the memory does not hold the values shown */
  int ndim;
  int64_t sizes[SAFETILE_FACTS_MAX_DIMS], strides[SAFETILE_FACTS_MAX_DIMS];
} safetile_facts;
typedef int (*safetile_read_facts)(PyObject *, safetile_facts *);

/* a tuple of ints, as torch's ``shape`` and ``stride()`` answer */
static inline PyObject *safetile_int_tuple(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  if (t == NULL) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (x == NULL) { Py_DECREF(t); return NULL; }
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}
"""


SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/DynamicTypes.h>

extern "C" {
""" + C_DECLARATIONS + r"""
}

/* Whether every element the view reaches lies inside its storage's bytes. A storage shrunk in place
   (``untyped_storage().resize_``) or a tensor caught half-way through another thread's ``set_``
   (torch runs it without the GIL) can show a view longer than its memory; torch itself does not
   check when it reads. */
static bool within_storage(const at::Tensor &t) {
  int64_t n = t.numel();
  if (n == 0) return true;
  const c10::Storage &st = t.storage();
  __int128 lo = 0, hi = 0;
  auto sizes = t.sizes();
  auto strides = t.strides();
  for (int64_t i = 0; i < t.dim(); i++) {
    __int128 reach = (__int128)(sizes[i] - 1) * strides[i];
    if (reach < 0) lo += reach; else hi += reach;
  }
  __int128 item = t.element_size(), offset = t.storage_offset();
  __int128 start = (offset + lo) * item, end = (offset + hi + 1) * item;
  return start >= 0 && end <= (__int128)st.nbytes();
}

/* 1: the facts of ``obj`` (the caller checked it is exactly a torch.Tensor); 0: not readable here
   (no plain strided memory, a view reaching past its storage, too many dimensions, any C++
   exception), no Python error set: the caller takes the Python path, which refuses in words (or,
   for an unchecked launch, reads through torch). Never calls back into Python: a TorchFunctionMode
   cannot answer for the tensor. */
static int read_facts(PyObject *obj, safetile_facts *f) noexcept {
  try {
    const at::Tensor &t = THPVariable_Unpack(obj);
    int64_t nd = t.dim();
    if (nd > SAFETILE_FACTS_MAX_DIMS || t.is_sparse() || t.is_nested() || t.layout() != at::kStrided ||
        t.is_meta() || t.is_quantized() || !t.has_storage() || !within_storage(t))
      return 0;
    f->ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
    f->dtype = reinterpret_cast<PyObject *>(torch::getTHPDtype(t.scalar_type()));
    if (f->dtype == nullptr) return 0;
    f->device = t.get_device();
    f->neg = (t.is_neg() || t.is_conj()) ? 1 : 0;
    f->ndim = static_cast<int>(nd);
    auto sizes = t.sizes();
    auto strides = t.strides();
    for (int64_t i = 0; i < nd; i++) {
      f->sizes[i] = sizes[i];
      f->strides[i] = strides[i];
    }
    return 1;
  } catch (...) {
    return 0;
  }
}

/* facts(t) -> (data_ptr, dtype, shape, stride, device, is_neg or is_conj), or None where not readable (tests
   compare it with torch's own answers) */
static PyObject *facts(PyObject *, PyObject *obj) {
  if (!THPVariable_CheckExact(obj)) {
    PyErr_SetString(PyExc_TypeError, "facts() takes a torch.Tensor");
    return NULL;
  }
  safetile_facts f;
  if (!read_facts(obj, &f)) Py_RETURN_NONE;
  PyObject *shape = safetile_int_tuple(f.sizes, f.ndim);
  PyObject *stride = shape ? safetile_int_tuple(f.strides, f.ndim) : NULL;
  PyObject *r = stride ? Py_BuildValue("(KONNiO)", (unsigned long long)f.ptr, f.dtype, shape, stride, f.device,
                                       f.neg ? Py_True : Py_False) : NULL;
  if (r == NULL) { Py_XDECREF(shape); Py_XDECREF(stride); }
  return r;
}

static PyMethodDef methods[] = {
  {"facts", (PyCFunction)facts, METH_O,
   "facts(t): (data_ptr, dtype, shape, stride, device, is_neg or is_conj) or None"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "safetile_torch_facts", NULL, -1, methods};

extern "C" PyMODINIT_FUNC PyInit_safetile_torch_facts(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  PyObject *cap = PyCapsule_New((void *)&read_facts, "safetile_torch_facts.read", NULL);
  if (cap == NULL || PyModule_AddObject(m, "read", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
"""


def _build(name: str, source_file: str, folder: str) -> str:
    """g++ (or ``CXX``) against the installed torch's headers and libraries, with its C++ ABI."""
    import torch
    from torch.utils import cpp_extension as ext
    cxx = shlex.split(env.cxx_compiler() or sysconfig.get_config_var("CXX") or "c++")
    out = os.path.join(folder, name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    libs = ext.library_paths()
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    cmd = [*cxx, "-x", "c++", "-std=c++17", "-O2", "-shared", "-fPIC", "-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
           source_file, "-o", out, f"-I{sysconfig.get_paths()['include']}",
           *(f"-I{d}" for d in ext.include_paths()), *(f"-L{d}" for d in libs),
           *(f"-Wl,-rpath,{d}" for d in libs), "-lc10", "-ltorch_cpu", "-ltorch_python"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return out


def _torch_tag() -> str:
    try:
        import torch
        return f"torch-{torch.__version__}"
    except ImportError:
        return "no-torch"


# The build as a process of its own: a C++ build against torch's headers takes ~10 s, longer than many
# scripts live, and a build thread would die with its process before writing the cache.
_BUILD_SCRIPT = ("import sys; sys.path.insert(0, {root!r}); import torch; "
                 "from safetile.runtime import torch_facts; torch_facts.build_or_mark()")


def build_or_mark() -> None:
    """The background build: the module into the cache, or a marker beside where it would be when it
    cannot be built here (no C++ compiler, no headers), so later processes do not try again."""
    native = _loader.native()
    if native.get(build=True) is None:
        marker = _failed_marker(native)
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:  # no writable cache: the next process tries again
            pass


def _failed_marker(native: NativeModule) -> Any:
    path = native.path()
    return path.with_name(path.name + ".failed")


class _Loader:
    """The module's loader, made on first use (its tag names the torch it is built against), and the
    background build this process started, if any."""

    def __init__(self) -> None:
        self._lock = FORK_LOCKS.new()
        self._native: NativeModule | None = None
        self._builder: subprocess.Popen | None = None

    def native(self) -> NativeModule:
        with self._lock:
            if self._native is None:
                self._native = NativeModule(_NAME, SOURCE, _build, tag=_torch_tag())
            return self._native

    def start_build(self) -> subprocess.Popen | None:
        """A detached process that builds the module into the cache (it outlives this one), once per
        process, unless the module is loaded or already built."""
        native = self.native()
        if cache_dir() is None:  # no cache to build into that a later process would find
            return None
        with self._lock:
            if (self._builder is not None or native.loaded() is not None or native.path().exists()
                    or _failed_marker(native).exists()):
                return self._builder
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            try:
                self._builder = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT.format(root=root)],
                                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:  # no process to spare: callers read through torch's methods
                return None
            return self._builder


_loader = _Loader()


def prebuild() -> subprocess.Popen | None:
    """Build the module in the background (beside a kernel's first compile) when it is missing and
    torch is in use (it reads nothing else); ``wait()`` on the answer to use it once built."""
    if not env.torch_facts() or "torch" not in sys.modules:
        return None
    return _loader.start_build()


def module(build: bool = False) -> Any:
    """The loaded module (built first when ``build``), or None: not built yet, unbuildable, off,
    or torch not in use."""
    if not env.torch_facts() or "torch" not in sys.modules:
        return None
    return _loader.native().get(build)


def capsule() -> Any:
    """The C reader for other C modules (a capsule named ``safetile_torch_facts.read``), or None."""
    m = module()
    return None if m is None else m.read
