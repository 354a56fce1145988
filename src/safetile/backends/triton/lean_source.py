"""The C source of safetile's lean launcher module (built and loaded by lean.py): ``launch``
and ``Spec`` (one call per kernel launch, arguments converted by per-parameter type codes) and
``Reader`` (ct.launch's one-pass path, fastpath.py, in C)."""

from ...runtime.torch_facts import C_DECLARATIONS

SOURCE = r"""
#include "cuda.h"
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#define PY_SSIZE_T_CLEAN
#include <Python.h>

""" + C_DECLARATIONS + r"""

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


/* ---------------------------------------------------------------- the one-pass reader
   ct.launch's fast path for one tuple of argument kinds (fastpath.py: the same keys, the same
   table, the same decisions as its Python reader; any other argument goes to ``generic``). */

enum { K_TENSOR, K_INT, K_FLOAT, K_BOOL, K_CONST, K_COUNT };
#define MAX_ARGS 64
#define MAX_FLAT 512

static PyObject *s_data_ptr, *s_shape, *s_stride, *s_dtype, *s_get_device, *s_is_neg, *py_one;

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *table, *tensor_type, *const_types, *generic, *current_device, *get_stream, *stream_handle;
  PyObject *last; /* (key, entry) of the latest launch, replaced whole; NULL before the first */
  PyObject *facts_capsule; /* keeps ``facts`` loaded; NULL: tensors read through torch's Python methods */
  safetile_read_facts facts;
  Py_ssize_t n;
  unsigned char kinds[MAX_ARGS];
} Reader;

static PyObject *method0(PyObject *obj, PyObject *name) {
  PyObject *stack[2] = {NULL, obj};
  return PyObject_VectorcallMethod(name, stack + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *reader_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  Reader *r = (Reader *)self;
  if (PyVectorcall_NARGS(nargsf) != 3 || kwnames) {
    PyErr_SetString(PyExc_TypeError, "reader(stream, grid, args)");
    return NULL;
  }
  PyObject *stream = args[0], *grid = args[1], *kargs = args[2];
  if (!PyTuple_CheckExact(kargs) || PyTuple_GET_SIZE(kargs) != r->n)
    return PyObject_Vectorcall(r->generic, args, 3, NULL);
  Py_ssize_t n = r->n, i, j, m = 0;
  PyObject *ptr[MAX_ARGS] = {NULL}, *shape[MAX_ARGS] = {NULL}, *stride[MAX_ARGS] = {NULL};
  PyObject *key = NULL, *last = NULL, *entry = NULL, *cur = NULL, *raw = NULL, *res = NULL, *result = NULL;
  PyObject *stack[MAX_FLAT];
  safetile_facts f;
  int go_generic = 0;
  key = PyTuple_New(n);
  if (!key)
    return NULL;
  for (i = 0; i < n; i++) {
    PyObject *a = PyTuple_GET_ITEM(kargs, i), *part = NULL;
    switch (r->kinds[i]) {
    case K_TENSOR:
      if (Py_TYPE(a) != (PyTypeObject *)r->tensor_type) {
        go_generic = 1;
        goto out;
      }
      for (j = 0; j < i; j++)
        if (r->kinds[j] == K_TENSOR && PyTuple_GET_ITEM(kargs, j) == a) /* passed again: read once */
          break;
      if (j < i) {
        ptr[i] = Py_NewRef(ptr[j]);
        shape[i] = Py_NewRef(shape[j]);
        stride[i] = Py_NewRef(stride[j]);
        part = Py_NewRef(PyTuple_GET_ITEM(key, j));
      } else if (r->facts != NULL) { /* the same facts, read in C++ (torch_facts.py) */
        PyObject *device = NULL, *align = NULL;
        if (!r->facts(a, &f) || f.neg) { /* not plain memory holding its values: the checked path decides */
          go_generic = 1;
          goto out;
        }
        if (!(ptr[i] = PyLong_FromUnsignedLongLong(f.ptr)) || !(shape[i] = safetile_int_tuple(f.sizes, f.ndim)) ||
            !(stride[i] = safetile_int_tuple(f.strides, f.ndim)) || !(device = PyLong_FromLong(f.device)) ||
            !(align = PyLong_FromUnsignedLongLong(f.ptr & 15))) {
          Py_XDECREF(device);
          goto out;
        }
        part = PyTuple_Pack(5, f.dtype, device, align, shape[i], stride[i]);
        Py_DECREF(device);
        Py_DECREF(align);
      } else {
        PyObject *dtype = NULL, *device = NULL, *align = NULL;
        PyObject *neg = NULL;
        if (!(ptr[i] = method0(a, s_data_ptr)) || !(shape[i] = PyObject_GetAttr(a, s_shape)) ||
            !(stride[i] = method0(a, s_stride)) || !(dtype = PyObject_GetAttr(a, s_dtype)) ||
            !(device = method0(a, s_get_device)) || !(neg = method0(a, s_is_neg))) {
          Py_XDECREF(dtype);
          Py_XDECREF(device);
          goto out;
        }
        Py_DECREF(neg);
        if (neg != Py_False) { /* a lazy negative view: its memory does not hold its values */
          Py_DECREF(dtype);
          Py_DECREF(device);
          go_generic = 1;
          goto out;
        }
        if (!PyLong_Check(ptr[i]) || !PyTuple_Check(shape[i]) || !PyTuple_Check(stride[i])) {
          Py_DECREF(dtype);
          Py_DECREF(device);
          go_generic = 1;
          goto out;
        }
        align = PyLong_FromUnsignedLongLong(PyLong_AsUnsignedLongLongMask(ptr[i]) & 15);
        if (align)
          part = PyTuple_Pack(5, dtype, device, align, shape[i], stride[i]);
        Py_DECREF(dtype);
        Py_DECREF(device);
        Py_XDECREF(align);
      }
      break;
    case K_INT: {
      int overflow = 0;
      long long v;
      if (!PyLong_CheckExact(a)) {
        go_generic = 1;
        goto out;
      }
      v = PyLong_AsLongLongAndOverflow(a, &overflow);
      if (overflow) { /* beyond int64: the checked path refuses it */
        go_generic = 1;
        goto out;
      }
      part = Py_NewRef(v >= INT32_MIN && v <= INT32_MAX ? Py_True : Py_False);
      break;
    }
    case K_FLOAT:
    case K_BOOL: {
      PyTypeObject *want = r->kinds[i] == K_FLOAT ? &PyFloat_Type : &PyBool_Type;
      if (Py_TYPE(a) != want) {
        go_generic = 1;
        goto out;
      }
      part = Py_NewRef((PyObject *)want);
      break;
    }
    default: { /* a Constant: its type and value */
      int known = PySet_Contains(r->const_types, (PyObject *)Py_TYPE(a));
      if (known <= 0) {
        go_generic = known == 0;
        goto out;
      }
      if (PyFloat_CheckExact(a) && PyFloat_AS_DOUBLE(a) == 0.0) {  /* a zero keys its sign: 0.0 == -0.0 */
        PyObject *sign = PyFloat_FromDouble(copysign(1.0, PyFloat_AS_DOUBLE(a)));
        part = sign ? PyTuple_Pack(3, (PyObject *)Py_TYPE(a), a, sign) : NULL;
        Py_XDECREF(sign);
      } else {
        part = PyTuple_Pack(2, (PyObject *)Py_TYPE(a), a);
      }
    }
    }
    if (!part)
      goto out;
    PyTuple_SET_ITEM(key, i, part);
  }
  last = r->last ? Py_NewRef(r->last) : NULL;
  if (last) {
    int same = PyObject_RichCompareBool(key, PyTuple_GET_ITEM(last, 0), Py_EQ);
    if (same < 0)
      goto out;
    if (same)
      entry = Py_NewRef(PyTuple_GET_ITEM(last, 1));
  }
  if (!entry) {
    PyObject *found = PyDict_GetItemWithError(r->table, key);
    if (!found) {
      if (!PyErr_Occurred())
        result = Py_NewRef(Py_False);
      goto out;
    }
    entry = Py_NewRef(found);
    PyObject *pair = PyTuple_Pack(2, key, entry);
    if (!pair)
      goto out;
    Py_XSETREF(r->last, pair);
  }
  if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(entry, 1))) {
    PyErr_SetString(PyExc_TypeError, "reader: a table entry is not (call, prefix, device)");
    goto out;
  }
  { /* the grid: 1 to 3 Python ints, x up to 2**24 - 1, y and z up to 65535; else the checked path */
    PyObject *g[3] = {py_one, py_one, py_one};
    static const long limit[3] = {16777215, 65535, 65535};
    if (PyTuple_CheckExact(grid)) {
      Py_ssize_t ng = PyTuple_GET_SIZE(grid);
      if (ng < 1 || ng > 3) {
        result = Py_NewRef(Py_False);
        goto out;
      }
      for (j = 0; j < ng; j++)
        g[j] = PyTuple_GET_ITEM(grid, j);
    } else if (PyLong_CheckExact(grid)) {
      g[0] = grid;
    } else {
      result = Py_NewRef(Py_False);
      goto out;
    }
    for (j = 0; j < 3; j++) {
      int overflow = 0;
      long v = PyLong_CheckExact(g[j]) ? PyLong_AsLongAndOverflow(g[j], &overflow) : 0;
      if (overflow || v < 1 || v > limit[j]) {
        result = Py_NewRef(Py_False);
        goto out;
      }
      stack[m++] = g[j];
    }
  }
  {
    PyObject *call = PyTuple_GET_ITEM(entry, 0), *prefix = PyTuple_GET_ITEM(entry, 1);
    PyObject *device = PyTuple_GET_ITEM(entry, 2);
    int same;
    if (!(cur = PyObject_CallNoArgs(r->current_device)))
      goto out;
    if ((same = PyObject_RichCompareBool(device, cur, Py_EQ)) <= 0) {
      if (same == 0)
        result = Py_NewRef(Py_False);
      goto out;
    }
    if (stream == Py_None) {
      raw = PyObject_CallOneArg(r->get_stream, device);
    } else if (PyLong_CheckExact(stream)) {
      raw = Py_NewRef(stream);
    } else {
      PyObject *sargs[2] = {stream, device};
      raw = PyObject_Vectorcall(r->stream_handle, sargs, 2, NULL);
    }
    if (!raw)
      goto out;
    stack[m++] = raw;
    for (j = 0; j < PyTuple_GET_SIZE(prefix) && m < MAX_FLAT; j++)
      stack[m++] = PyTuple_GET_ITEM(prefix, j);
    for (i = 0; i < n; i++) {
      PyObject *a = PyTuple_GET_ITEM(kargs, i);
      if (r->kinds[i] == K_TENSOR) {
        Py_ssize_t ns = PyTuple_GET_SIZE(shape[i]), nt = PyTuple_GET_SIZE(stride[i]);
        if (m + 1 + ns + nt > MAX_FLAT) {
          go_generic = 1;
          goto out;
        }
        stack[m++] = ptr[i];
        for (j = 0; j < ns; j++)
          stack[m++] = PyTuple_GET_ITEM(shape[i], j);
        for (j = 0; j < nt; j++)
          stack[m++] = PyTuple_GET_ITEM(stride[i], j);
      } else if (r->kinds[i] != K_CONST) {
        if (m + 1 > MAX_FLAT) {
          go_generic = 1;
          goto out;
        }
        stack[m++] = a;
      }
    }
    if (m >= MAX_FLAT) {
      go_generic = 1;
      goto out;
    }
    if ((res = PyObject_Vectorcall(call, stack, m, NULL)))
      result = Py_NewRef(Py_True);
  }
out:
  for (i = 0; i < n; i++) {
    Py_XDECREF(ptr[i]);
    Py_XDECREF(shape[i]);
    Py_XDECREF(stride[i]);
  }
  Py_XDECREF(key);
  Py_XDECREF(last);
  Py_XDECREF(entry);
  Py_XDECREF(cur);
  Py_XDECREF(raw);
  Py_XDECREF(res);
  if (go_generic && !PyErr_Occurred())
    return PyObject_Vectorcall(r->generic, args, 3, NULL);
  return result;
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  PyObject *table, *tensor_type, *const_types, *generic, *current_device, *get_stream, *stream_handle;
  PyObject *facts = Py_None;
  safetile_read_facts read = NULL;
  const char *kinds;
  Py_ssize_t n;
  static char *names[] = {"table", "kinds", "tensor_type", "const_types", "generic", "current_device",
                          "get_stream", "stream_handle", "facts", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!y#O!O!OOOO|O", names, &PyDict_Type, &table, &kinds, &n,
                                   &PyType_Type, &tensor_type, &PyFrozenSet_Type, &const_types, &generic,
                                   &current_device, &get_stream, &stream_handle, &facts))
    return NULL;
  if (facts != Py_None && !(read = (safetile_read_facts)PyCapsule_GetPointer(facts, "safetile_torch_facts.read")))
    return NULL;
  if (n > MAX_ARGS) {
    PyErr_SetString(PyExc_ValueError, "Reader: too many kernel arguments");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if ((unsigned char)kinds[i] >= K_COUNT) {
      PyErr_SetString(PyExc_ValueError, "Reader: unknown argument kind");
      return NULL;
    }
  Reader *self = (Reader *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->vectorcall = reader_call;
  self->table = Py_NewRef(table);
  self->tensor_type = Py_NewRef(tensor_type);
  self->const_types = Py_NewRef(const_types);
  self->generic = Py_NewRef(generic);
  self->current_device = Py_NewRef(current_device);
  self->get_stream = Py_NewRef(get_stream);
  self->stream_handle = Py_NewRef(stream_handle);
  self->last = NULL;
  self->facts_capsule = read ? Py_NewRef(facts) : NULL;
  self->facts = read;
  self->n = n;
  memcpy(self->kinds, kinds, n);
  return (PyObject *)self;
}

static int reader_traverse(Reader *self, visitproc visit, void *arg) {
  Py_VISIT(self->table);
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->const_types);
  Py_VISIT(self->generic);
  Py_VISIT(self->current_device);
  Py_VISIT(self->get_stream);
  Py_VISIT(self->stream_handle);
  Py_VISIT(self->last);
  Py_VISIT(self->facts_capsule);
  return 0;
}

static int reader_clear(Reader *self) {
  Py_CLEAR(self->table);
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->const_types);
  Py_CLEAR(self->generic);
  Py_CLEAR(self->current_device);
  Py_CLEAR(self->get_stream);
  Py_CLEAR(self->stream_handle);
  Py_CLEAR(self->last);
  Py_CLEAR(self->facts_capsule);
  self->facts = NULL;
  return 0;
}

static void reader_dealloc(Reader *self) {
  PyObject_GC_UnTrack(self);
  reader_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *reader_slow_call(PyObject *self, PyObject *args, PyObject *kwds) {
  return PyVectorcall_Call(self, args, kwds);
}

#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL
#endif

static PyTypeObject ReaderType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "safetile_lean_launch.Reader",
  .tp_basicsize = sizeof(Reader),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
  .tp_doc = "Reader(table, kinds, tensor_type, const_types, generic, current_device, get_stream, stream_handle,"
            " facts=None)"
            ": ct.launch's one-pass path for one tuple of argument kinds; call(stream, grid, args) -> launched",
  .tp_new = reader_new,
  .tp_traverse = (traverseproc)reader_traverse,
  .tp_clear = (inquiry)reader_clear,
  .tp_dealloc = (destructor)reader_dealloc,
  .tp_vectorcall_offset = offsetof(Reader, vectorcall),
  .tp_call = reader_slow_call,
};

static PyMethodDef methods[] = {
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
   "launch(gx, gy, gz, stream, spec, *kernel_args): launch one compiled kernel"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "safetile_lean_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_safetile_lean_launch(void) {
  if (PyType_Ready(&SpecType) < 0 || PyType_Ready(&ReaderType) < 0)
    return NULL;
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_shape = PyUnicode_InternFromString("shape");
  s_stride = PyUnicode_InternFromString("stride");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_get_device = PyUnicode_InternFromString("get_device");
  s_is_neg = PyUnicode_InternFromString("is_neg");
  py_one = PyLong_FromLong(1);
  if (!s_data_ptr || !s_shape || !s_stride || !s_dtype || !s_get_device || !s_is_neg || !py_one)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  Py_INCREF(&SpecType);
  Py_INCREF(&ReaderType);
  if (PyModule_AddObject(m, "Spec", (PyObject *)&SpecType) < 0 ||
      PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
"""
