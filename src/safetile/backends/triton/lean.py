"""A lean C launcher: one small extension module launches every compiled kernel.

Triton's generated launcher (one C module per signature) parses its arguments with
``PyArg_ParseTuple`` (13 fixed fields, launch metadata, enter/exit hooks, then the kernel's
arguments), parses the metadata tuple again and looks up each pointer argument's
``data_ptr``. safetile's launch paths hand it plain ints only, so most of that is wasted on
every launch. This module's ``launch(gx, gy, gz, stream, spec, *kernel_args)`` takes the
per-kernel constants from a ``Spec`` made once per compiled variant (the ``CUfunction``, warps,
CTAs, shared memory, PDL, and one type code per kernel parameter), converts each argument by
its code with the same range checks (an int that does not fit its parameter raises
``OverflowError`` before anything runs), and calls ``cuLaunchKernelEx`` with the GIL released,
as Triton's launcher does (including its two scratch pointers, 0 here: variants that need
scratch memory keep Triton's launcher).

The module is built once per installation with Triton's own build helper (the C compiler
Triton builds its launchers with) into safetile's cache, beside the kernel's first compile;
a warm process loads it without Triton. Anything unexpected (no compiler, a parameter type it
does not know, 16-CTA clusters) leaves the variant on Triton's launcher; ``SAFETILE_LEAN_LAUNCH=0``
turns it off.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import sysconfig
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from ...runtime import env
from . import cache

SOURCE = r"""
#include "cuda.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_PARAMS 512 /* kernel parameters, with the two scratch pointers Triton's kernels take last */

enum { T_PTR, T_I1, T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64, T_F16, T_BF16, T_F32, T_F64, T_COUNT };

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*ctx_get_t)(CUcontext *);
typedef CUresult (*ctx_set_t)(CUcontext);
typedef CUresult (*device_get_t)(CUdevice *, int);
typedef CUresult (*retain_t)(CUcontext *, CUdevice);
typedef CUresult (*error_string_t)(CUresult, const char **);

static launch_ex_t cu_launch_ex;
static ctx_get_t cu_ctx_get;
static ctx_set_t cu_ctx_set;
static device_get_t cu_device_get;
static retain_t cu_retain;
static error_string_t cu_error_string;
static int driver_state; /* 0: not loaded yet, 1: loaded, -1: unavailable (changed only with the GIL held) */

static int load_driver(void) {
  if (driver_state == 0) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
      cu_launch_ex = (launch_ex_t)dlsym(h, "cuLaunchKernelEx");
      cu_ctx_get = (ctx_get_t)dlsym(h, "cuCtxGetCurrent");
      cu_ctx_set = (ctx_set_t)dlsym(h, "cuCtxSetCurrent");
      cu_device_get = (device_get_t)dlsym(h, "cuDeviceGet");
      cu_retain = (retain_t)dlsym(h, "cuDevicePrimaryCtxRetain");
      cu_error_string = (error_string_t)dlsym(h, "cuGetErrorString");
    }
    driver_state = (h && cu_launch_ex && cu_ctx_get && cu_ctx_set && cu_device_get && cu_retain &&
                    cu_error_string) ? 1 : -1;
  }
  if (driver_state < 0) {
    PyErr_SetString(PyExc_RuntimeError, "cannot load the CUDA driver (libcuda.so.1)");
    return 0;
  }
  return 1;
}

static int cuda_error(CUresult r) {
  const char *text = NULL;
  cu_error_string(r, &text);
  PyErr_Format(PyExc_RuntimeError, "Triton Error [CUDA]: %s", text ? text : "unknown error");
  return 0;
}

typedef struct {
  PyObject_HEAD
  CUfunction function;
  unsigned int warps, ctas, shared;
  int pdl, cooperative;
  Py_ssize_t n;
  unsigned char codes[MAX_PARAMS];
} Spec;

static PyObject *spec_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  unsigned long long function;
  int warps, ctas, shared, pdl, cooperative;
  const char *codes;
  Py_ssize_t n;
  static char *names[] = {"function", "warps", "ctas", "shared", "pdl", "cooperative", "codes", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Kiiippy#", names, &function, &warps, &ctas, &shared, &pdl,
                                   &cooperative, &codes, &n))
    return NULL;
  if (!function || warps < 1 || warps > 32 || ctas < 1 || ctas > 8 || shared < 0 || n > MAX_PARAMS - 2) {
    PyErr_SetString(PyExc_ValueError, "Spec: a kernel this launcher does not take");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if ((unsigned char)codes[i] >= T_COUNT) {
      PyErr_SetString(PyExc_ValueError, "Spec: unknown parameter type code");
      return NULL;
    }
  Spec *self = (Spec *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->function = (CUfunction)(uintptr_t)function;
  self->warps = warps;
  self->ctas = ctas;
  self->shared = shared;
  self->pdl = pdl;
  self->cooperative = cooperative;
  self->n = n;
  memcpy(self->codes, codes, n);
  return (PyObject *)self;
}

static PyObject *spec_params(PyObject *self, void *closure) {
  return PyLong_FromSsize_t(((Spec *)self)->n);
}

static PyGetSetDef spec_getset[] = {
  {"params", spec_params, NULL, "number of kernel arguments a launch takes", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SpecType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "safetile_lean_launch.Spec",
  .tp_basicsize = sizeof(Spec),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Spec(function, warps, ctas, shared, pdl, cooperative, codes): one compiled kernel's launch constants",
  .tp_new = spec_new,
  .tp_getset = spec_getset,
};

static int bad_arg(Py_ssize_t i, const char *what) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_Format(type && PyErr_GivenExceptionMatches(type, PyExc_OverflowError) ? PyExc_OverflowError
                                                                               : PyExc_TypeError,
               "kernel argument %zd: expected %s", i, what);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return 0;
}

static int in_range(Py_ssize_t i, long long v, long long lo, long long hi, const char *what) {
  if (v < lo || v > hi) {
    PyErr_Format(PyExc_OverflowError, "kernel argument %zd: %lld does not fit %s", i, v, what);
    return 0;
  }
  return 1;
}

static int convert(Py_ssize_t i, int code, PyObject *a, uint64_t *slot) {
  if (code == T_PTR) {
    if (!PyLong_Check(a))
      return bad_arg(i, "a pointer (int)");
    unsigned long long p = PyLong_AsUnsignedLongLong(a);
    if (p == (unsigned long long)-1 && PyErr_Occurred())
      return bad_arg(i, "a pointer (int)");
    *slot = p;
    return 1;
  }
  if (code >= T_F16) {
    double d = PyFloat_AsDouble(a);
    if (d == -1.0 && PyErr_Occurred())
      return bad_arg(i, "a float");
    if (code == T_F64) {
      memcpy(slot, &d, 8);
    } else if (code == T_F32) {
      float f = (float)d;
      memcpy(slot, &f, 4);
    } else if (code == T_BF16) { /* the upper half of the float32, as Triton's launcher packs it */
      float f = (float)d;
      uint32_t u;
      memcpy(&u, &f, 4);
      *(uint16_t *)slot = (uint16_t)(u >> 16);
    } else {
#if PY_VERSION_HEX < 0x030B00A7
      if (_PyFloat_Pack2(d, (unsigned char *)slot, 1) < 0)
#else
      if (PyFloat_Pack2(d, (char *)slot, 1) < 0)
#endif
        return bad_arg(i, "a float16 value");
    }
    return 1;
  }
  if (code == T_U64) {
    PyObject *index = PyNumber_Index(a);
    if (!index)
      return bad_arg(i, "an integer");
    unsigned long long u = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
    if (u == (unsigned long long)-1 && PyErr_Occurred())
      return bad_arg(i, "a uint64");
    *slot = u;
    return 1;
  }
  long long v = PyLong_AsLongLong(a);
  if (v == -1 && PyErr_Occurred())
    return bad_arg(i, "an integer");
  switch (code) {
  case T_I1: *(int8_t *)slot = v != 0; return 1;
  case T_I8: if (!in_range(i, v, INT8_MIN, INT8_MAX, "int8")) return 0; *(int8_t *)slot = (int8_t)v; return 1;
  case T_I16: if (!in_range(i, v, INT16_MIN, INT16_MAX, "int16")) return 0; *(int16_t *)slot = (int16_t)v; return 1;
  case T_I32: if (!in_range(i, v, INT32_MIN, INT32_MAX, "int32")) return 0; *(int32_t *)slot = (int32_t)v; return 1;
  case T_I64: *(int64_t *)slot = v; return 1;
  case T_U8: if (!in_range(i, v, 0, UINT8_MAX, "uint8")) return 0; *(uint8_t *)slot = (uint8_t)v; return 1;
  case T_U16: if (!in_range(i, v, 0, UINT16_MAX, "uint16")) return 0; *(uint16_t *)slot = (uint16_t)v; return 1;
  default: if (!in_range(i, v, 0, UINT32_MAX, "uint32")) return 0; *(uint32_t *)slot = (uint32_t)v; return 1;
  }
}

static PyObject *launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 5 || !PyObject_TypeCheck(args[4], &SpecType)) {
    PyErr_SetString(PyExc_TypeError, "launch(gx, gy, gz, stream, spec, *kernel_args)");
    return NULL;
  }
  Spec *k = (Spec *)args[4];
  Py_ssize_t n = nargs - 5;
  if (n != k->n) {
    PyErr_Format(PyExc_TypeError, "the kernel takes %zd arguments, got %zd", k->n, n);
    return NULL;
  }
  unsigned int grid[3];
  for (int d = 0; d < 3; d++) {
    long g = PyLong_AsLong(args[d]);
    if (g == -1 && PyErr_Occurred())
      return NULL;
    if (g < 1 || g > INT_MAX || (d == 0 && (unsigned long long)g * k->ctas > INT_MAX)) {
      PyErr_Format(PyExc_ValueError, "grid dimension %d is %ld", d, g);
      return NULL;
    }
    grid[d] = (unsigned int)g;
  }
  unsigned long long stream = PyLong_AsUnsignedLongLong(args[3]);
  if (stream == (unsigned long long)-1 && PyErr_Occurred())
    return NULL;
  uint64_t slots[MAX_PARAMS];
  void *params[MAX_PARAMS];
  for (Py_ssize_t i = 0; i < n; i++) {
    slots[i] = 0;
    if (!convert(i, k->codes[i], args[5 + i], &slots[i]))
      return NULL;
    params[i] = &slots[i];
  }
  slots[n] = slots[n + 1] = 0; /* global and profile scratch: none */
  params[n] = &slots[n];
  params[n + 1] = &slots[n + 1];
  if (!load_driver())
    return NULL;
  CUcontext ctx = NULL;
  CUresult r = cu_ctx_get(&ctx);
  if (r == CUDA_SUCCESS && !ctx) { /* a thread without a current context: device 0's, as Triton's launcher does */
    CUdevice dev;
    r = cu_device_get(&dev, 0);
    if (r == CUDA_SUCCESS)
      r = cu_retain(&ctx, dev);
    if (r == CUDA_SUCCESS)
      r = cu_ctx_set(ctx);
  }
  if (r != CUDA_SUCCESS)
    return cuda_error(r), NULL;
  CUlaunchAttribute attrs[4];
  unsigned int num_attrs = 0;
  if (k->pdl) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[num_attrs].value.programmaticStreamSerializationAllowed = 1;
    num_attrs++;
  }
  if (k->cooperative) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[num_attrs].value.cooperative = 1;
    num_attrs++;
  }
  if (k->ctas != 1) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[num_attrs].value.clusterDim.x = k->ctas;
    attrs[num_attrs].value.clusterDim.y = 1;
    attrs[num_attrs].value.clusterDim.z = 1;
    num_attrs++;
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attrs[num_attrs].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    num_attrs++;
  }
  CUlaunchConfig config;
  config.gridDimX = grid[0] * k->ctas;
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = 32 * k->warps;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = k->shared;
  config.hStream = (CUstream)(uintptr_t)stream;
  config.attrs = attrs;
  config.numAttrs = num_attrs;
  CUfunction function = k->function;
  Py_BEGIN_ALLOW_THREADS;
  r = cu_launch_ex(&config, function, params, NULL);
  Py_END_ALLOW_THREADS;
  if (r != CUDA_SUCCESS)
    return cuda_error(r), NULL;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
   "launch(gx, gy, gz, stream, spec, *kernel_args): launch one compiled kernel"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "safetile_lean_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_safetile_lean_launch(void) {
  if (PyType_Ready(&SpecType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  Py_INCREF(&SpecType);
  if (PyModule_AddObject(m, "Spec", (PyObject *)&SpecType) < 0) {
    Py_DECREF(&SpecType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
"""

_NAME = "safetile_lean_launch"
_CODES = {"i1": 1, "i8": 2, "i16": 3, "i32": 4, "i64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9,
          "fp16": 10, "bf16": 11, "fp32": 12, "fp64": 13}


def type_codes(signature: dict[str, str]) -> bytes | None:
    """One code per kernel parameter (pointers 0), or None for a type the launcher does not know."""
    out = bytearray()
    for ty in signature.values():
        code = 0 if ty.startswith("*") else _CODES.get(ty)
        if code is None:
            return None
        out.append(code)
    return bytes(out)


def _path() -> Path:
    """Where this source's build lives for this Python and Triton: safetile's cache, or this
    process's scratch folder when the cache is off."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    h = hashlib.sha256("\0".join((SOURCE, suffix, platform.machine(), cache.triton_version())).encode())
    root = cache.cache_dir() or cache._scratch_dir()
    return root / "launchers" / f"lean_{h.hexdigest()[:32]}{suffix}"


class _Loader:
    """The built module, loaded once per process (guarded: threads may ask at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._module: ModuleType | None = None
        self._failed = False

    def get(self, build: bool) -> ModuleType | None:
        """The module, built first when missing and ``build`` (Triton imported); None when it
        cannot be had (no C compiler, a failed build, a load error)."""
        m = self._module
        if m is not None or self._failed:
            return m
        with self._lock:
            if self._module is None and not self._failed:
                path = _path()
                try:
                    if not path.exists():
                        if not build:
                            return None
                        _build(path)
                    self._module = _load(path)
                except Exception:  # noqa: BLE001 - Triton's launcher keeps working without it
                    self._failed = True
            return self._module


def _build(path: Path) -> None:
    import tempfile

    from triton.backends.nvidia import driver as nv
    from triton.runtime.build import _build as triton_build
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, _NAME + ".c")
        with open(src, "w") as f:
            f.write(SOURCE)
        so = triton_build(_NAME, src, tmp, [], nv.include_dirs, ["dl"], [])  # libcuda: opened at run time
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
        with open(so, "rb") as src_f, open(part, "wb") as dst:
            dst.write(src_f.read())
        os.replace(part, path)


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_NAME, path)
    assert spec is not None and spec.loader is not None  # an extension module's file has its loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_loader = _Loader()


def prebuild() -> threading.Thread | None:
    """Build the module in the background (beside a kernel's first compile) when it is missing."""
    if not env.lean_launch() or _loader._module is not None or _path().exists():
        return None
    t = threading.Thread(target=_loader.get, args=(True,), name="safetile-lean-launcher-build", daemon=True)
    t.start()
    return t


def launcher(function: int, warps: int, ctas: int, shared: int, pdl: bool, cooperative: bool,
             signature: dict[str, str], build: bool) -> tuple[Any, tuple] | None:
    """``(call, prefix)`` launching this compiled kernel through the lean launcher (as ``Variant``
    keeps them: ``call(gx, gy, gz, stream, *prefix, *kernel_args)``), or None: Triton's."""
    if not env.lean_launch():
        return None
    codes = type_codes(signature)
    if codes is None:
        return None
    m = _loader.get(build)
    if m is None:
        return None
    try:
        spec = m.Spec(function, warps, ctas, shared, pdl, cooperative, codes)
    except ValueError:  # e.g. 16-CTA clusters (Triton's launcher sets a non-portable attribute for them)
        return None
    return m.launch, (spec,)
