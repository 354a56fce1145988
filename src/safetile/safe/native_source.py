"""The C source of the safe launch's common case (built and loaded by native.py, which says what
it does and why). ``build`` is ``LaunchOp(kernel, args)`` and ``run`` is ``LaunchOp._run(ctx)`` for
the case each accepts, each answering ``None`` (before changing anything) for every other case,
which the Python path then handles in full. Slotted classes are read at their slot offsets, found
once from their member descriptors (``setup``), on objects checked to be of exactly those classes.
"""

from ..runtime.torch_facts import C_DECLARATIONS

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <frameobject.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#define MAX_ARGS 64
""" + C_DECLARATIONS + r"""
/* runtime/torch_facts.py's C++ reader, once it is built (use_facts); NULL: torch's Python methods */
static safetile_read_facts read_facts;
static PyObject *facts_capsule;
static PyObject *mode_enabled;  /* torch._C._is_torch_function_mode_enabled, found once torch is imported */

/* 1: a TorchFunctionMode is active, so torch's Python methods may answer for a tensor (the Python path
   reads with torch functions off: memory.untraced); 0: none (or no torch); -1: error */
static int mode_active(void) {
  if (mode_enabled == NULL) {
    PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
    if (torch == NULL) return 0;
    PyObject *c = PyObject_GetAttrString(torch, "_C");
    mode_enabled = c == NULL ? NULL : PyObject_GetAttrString(c, "_is_torch_function_mode_enabled");
    Py_XDECREF(c);
    if (mode_enabled == NULL) return -1;
  }
  PyObject *r = PyObject_CallNoArgs(mode_enabled);
  if (r == NULL) return -1;
  int on = r == Py_True;
  Py_DECREF(r);
  return on;
}

typedef struct {
  int ready;
  PyTypeObject *Partition, *Shared, *Tensor, *LaunchOp, *KernelCaches, *ExecContext, *InFlight, *torch_Tensor, *Bound,
      *Plan, *TypeCheck, *Registry;
  PyObject *OpRef, *op_ids, *acquire, *release, *local, *internal, *unchanged, *env_data, *env_key,
      *registry, *waiters, *notify_all, *caller_location, *function_state, *absent, *s_new, *s_built,
      *s_running, *s_detach, *s_dtype, *s_shape, *s_stride, *s_get_device, *s_is_neg,
      *s_acquire, *s_release, *one, *s_done, *s_ctx, *s_data_ptr, *s_ptr,
      *s_caches, *s_config_key, *s_callables, *s_bound, *s_checked, *s_device, *s_device_index,
      *s_handle, *s_pins, *s_execute, *s_fail, *empty;
  /* slot offsets */
  Py_ssize_t o_moved, o_holder, o_lent;                   /* Owned */
  Py_ssize_t p_tensor, p_facts, p_released;               /* Partition */
  Py_ssize_t s_tensor, s_facts, s_holders, s_unwrapped;   /* Shared */
  Py_ssize_t t_data, t_torch, t_facts, t_borrow;          /* Tensor */
  Py_ssize_t f_extent;                                    /* ArgFacts */
  Py_ssize_t c_last, c_captured;                          /* KernelCaches */
  Py_ssize_t cs_check, cs_entries;                        /* CaptureSet */
  Py_ssize_t b_call, b_grid, b_tail, b_device;            /* launcher.Bound */
  Py_ssize_t pl_bound, pl_checked, pl_pins;               /* Plan */
  Py_ssize_t tc_device;                                   /* checks.TypeCheck */
  Py_ssize_t r_entries, r_lock;                           /* memory.Registry */
  Py_ssize_t l_state, l_kernel, l_args, l_arity, l_id, l_site, l_plan, l_runtime, l_inflight, l_ref, l_into;
  Py_ssize_t x_stream, x_recorder, x_entry, x_lent, x_keep, x_aliases, x_sfacts; /* ExecContext */
  Py_ssize_t i_enqueued, i_event, i_added;                /* InFlight */
} State;

static State S;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static inline void slot_set(PyObject *o, Py_ssize_t off, PyObject *v) {
  PyObject **p = (PyObject **)((char *)o + off);
  PyObject *old = *p;
  Py_XINCREF(v);
  *p = v;
  Py_XDECREF(old);
}

static int offset_of(PyObject *cls, const char *name, Py_ssize_t *out) {
  PyObject *d = PyObject_GetAttrString(cls, name);
  if (d == NULL) return -1;
  if (!Py_IS_TYPE(d, &PyMemberDescr_Type) || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
    PyErr_Format(PyExc_TypeError, "%R.%s is not an object slot", cls, name);
    Py_DECREF(d);
    return -1;
  }
  *out = ((PyMemberDescrObject *)d)->d_member->offset;
  Py_DECREF(d);
  return 0;
}

static int take_type(PyObject *o, PyTypeObject **out) {
  if (!PyType_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "setup: expected a class");
    return -1;
  }
  Py_INCREF(o);
  *out = (PyTypeObject *)o;
  return 0;
}

/* setup(classes: dict, objects: dict): the classes, the runtime's objects, found once. */
static PyObject *setup(PyObject *self, PyObject *args) {
  PyObject *c, *o;
  if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &c, &PyDict_Type, &o)) return NULL;
  if (S.ready) Py_RETURN_NONE;
#define CLS(field, key) do { PyObject *v = PyDict_GetItemString(c, key); \
    if (v == NULL || take_type(v, &S.field) < 0) { \
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, key); \
      return NULL; \
    } } while (0)
#define OBJ(field, key) do { PyObject *v = PyDict_GetItemString(o, key); \
    if (v == NULL) { PyErr_SetString(PyExc_KeyError, key); return NULL; } Py_INCREF(v); S.field = v; } while (0)
#define OFF(cls, name, field) do { if (offset_of((PyObject *)S.cls, name, &S.field) < 0) return NULL; } while (0)
#define STR(field, text) do { S.field = PyUnicode_InternFromString(text); if (S.field == NULL) return NULL; } while (0)
  CLS(Partition, "Partition"); CLS(Shared, "Shared"); CLS(Tensor, "Tensor"); CLS(LaunchOp, "LaunchOp");
  CLS(KernelCaches, "KernelCaches"); CLS(ExecContext, "ExecContext"); CLS(InFlight, "InFlight");
  CLS(torch_Tensor, "torch_Tensor"); CLS(Bound, "Bound"); CLS(Plan, "Plan");
  CLS(TypeCheck, "TypeCheck"); CLS(Registry, "Registry");
  PyTypeObject *argfacts, *captureset;
  {
    PyObject *v = PyDict_GetItemString(c, "ArgFacts");
    PyObject *w = PyDict_GetItemString(c, "CaptureSet");
    if (v == NULL || w == NULL || !PyType_Check(v) || !PyType_Check(w)) {
      PyErr_SetString(PyExc_KeyError, "ArgFacts/CaptureSet");
      return NULL;
    }
    argfacts = (PyTypeObject *)v;
    captureset = (PyTypeObject *)w;
  }
  OBJ(OpRef, "OpRef"); OBJ(op_ids, "op_ids"); OBJ(acquire, "acquire"); OBJ(release, "release");
  OBJ(local, "local"); OBJ(internal, "internal"); OBJ(unchanged, "unchanged"); OBJ(env_data, "env_data");
  OBJ(env_key, "env_key"); OBJ(registry, "registry"); OBJ(waiters, "waiters"); OBJ(notify_all, "notify_all");
  OBJ(caller_location, "caller_location");
  OBJ(function_state, "function_state"); OBJ(absent, "absent");
  if (!PyList_Check(S.waiters) || !PyDict_Check(S.internal)) {
    PyErr_SetString(PyExc_TypeError, "setup: waiters is a list, internal a dict");
    return NULL;
  }
  OFF(Partition, "_moved", o_moved); OFF(Partition, "_holder", o_holder); OFF(Partition, "_lent", o_lent);
  OFF(Partition, "_tensor", p_tensor); OFF(Partition, "_facts", p_facts); OFF(Partition, "_released", p_released);
  OFF(Shared, "_tensor", s_tensor); OFF(Shared, "_facts", s_facts); OFF(Shared, "_holders", s_holders);
  OFF(Shared, "_unwrapped", s_unwrapped);
  OFF(Tensor, "_data", t_data); OFF(Tensor, "_torch", t_torch); OFF(Tensor, "_facts", t_facts);
  OFF(Tensor, "_borrow", t_borrow);
  {
    Py_ssize_t a, b, c2;  /* Owned's slots are at one offset in every subclass: check Tensor's */
    OFF(Tensor, "_moved", i_enqueued); a = S.i_enqueued;
    OFF(Tensor, "_holder", i_enqueued); b = S.i_enqueued;
    OFF(Tensor, "_lent", i_enqueued); c2 = S.i_enqueued;
    if (a != S.o_moved || b != S.o_holder || c2 != S.o_lent) {
      PyErr_SetString(PyExc_TypeError, "setup: Owned slots differ between Partition and Tensor");
      return NULL;
    }
  }
  if (offset_of((PyObject *)argfacts, "extent", &S.f_extent) < 0) return NULL;
  OFF(KernelCaches, "last", c_last); OFF(KernelCaches, "captured", c_captured);
  if (offset_of((PyObject *)captureset, "check", &S.cs_check) < 0) return NULL;
  if (offset_of((PyObject *)captureset, "entries", &S.cs_entries) < 0) return NULL;
  OFF(Bound, "call", b_call); OFF(Bound, "grid", b_grid); OFF(Bound, "tail", b_tail); OFF(Bound, "device", b_device);
  OFF(Plan, "bound", pl_bound); OFF(Plan, "checked", pl_checked); OFF(Plan, "pins", pl_pins);
  OFF(TypeCheck, "device", tc_device); OFF(Registry, "_entries", r_entries); OFF(Registry, "_lock", r_lock);
  OFF(LaunchOp, "_state", l_state); OFF(LaunchOp, "kernel", l_kernel); OFF(LaunchOp, "args", l_args);
  OFF(LaunchOp, "arity", l_arity); OFF(LaunchOp, "id", l_id); OFF(LaunchOp, "_site", l_site);
  OFF(LaunchOp, "_plan", l_plan); OFF(LaunchOp, "_runtime", l_runtime); OFF(LaunchOp, "_inflight", l_inflight);
  OFF(LaunchOp, "_ref", l_ref); OFF(LaunchOp, "_into", l_into);
  OFF(ExecContext, "stream", x_stream); OFF(ExecContext, "recorder", x_recorder);
  OFF(ExecContext, "entry", x_entry); OFF(ExecContext, "lent", x_lent); OFF(ExecContext, "keep", x_keep);
  OFF(ExecContext, "aliases", x_aliases); OFF(ExecContext, "stream_facts", x_sfacts);
  OFF(InFlight, "enqueued", i_enqueued); OFF(InFlight, "_event", i_event); OFF(InFlight, "_added", i_added);
  STR(s_new, "new"); STR(s_built, "built"); STR(s_acquire, "acquire"); STR(s_release, "release");
  STR(s_running, "running"); STR(s_done, "done"); STR(s_ctx, "ctx"); STR(s_detach, "detach");
  STR(s_dtype, "dtype"); STR(s_shape, "shape"); STR(s_stride, "stride"); STR(s_get_device, "get_device");
  STR(s_is_neg, "is_neg");
  STR(s_data_ptr, "data_ptr"); STR(s_ptr, "ptr"); STR(s_caches, "caches"); STR(s_config_key, "config_key");
  STR(s_callables, "callable_preconditions"); STR(s_bound, "bound"); STR(s_checked, "checked");
  STR(s_device, "device"); STR(s_device_index, "device_index"); STR(s_handle, "handle"); STR(s_pins, "pins");
  STR(s_execute, "_execute"); STR(s_fail, "_fail");
  S.empty = PyTuple_New(0);
  S.one = PyLong_FromLong(1);
  if (S.empty == NULL || S.one == NULL) return NULL;
  if (Py_TYPE(S.registry) != S.Registry) {
    PyErr_SetString(PyExc_TypeError, "setup: registry is not a memory.Registry");
    return NULL;
  }
  S.ready = 1;
  Py_RETURN_NONE;
}

/* use_facts(capsule or None): read torch tensors' facts through the C++ reader from now on (or not) */
static PyObject *use_facts(PyObject *self, PyObject *cap) {
  safetile_read_facts fn = NULL;
  if (cap != Py_None && (fn = (safetile_read_facts)PyCapsule_GetPointer(cap, "safetile_torch_facts.read")) == NULL)
    return NULL;
  PyObject *old = facts_capsule;
  facts_capsule = fn ? Py_NewRef(cap) : NULL;  /* keeps the reader's module loaded */
  read_facts = fn;
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

/* ``o`` is exactly an int equal to ``v`` (1), or not (0, no error) */
static int int_is(PyObject *o, long long v) {
  if (!PyLong_CheckExact(o)) return 0;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
  return !overflow && x == v;
}

static int ptr_is(PyObject *o, uintptr_t p) {
  if (!PyLong_CheckExact(o)) return 0;
  unsigned long long x = PyLong_AsUnsignedLongLong(o);
  if (x == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
  return x == (unsigned long long)p;
}

/* ``o`` is a tuple (torch.Size too) of exactly the ints ``v`` */
static int ints_are(PyObject *o, const int64_t *v, int n) {
  if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != n) return 0;
  for (int i = 0; i < n; i++)
    if (!int_is(PyTuple_GET_ITEM(o, i), v[i])) return 0;
  return 1;
}

/* Whether the torch tensor ``t``'s data_ptr() equals the int ``was``: 1 yes, 0 no, -1 error */
static int data_ptr_is(PyObject *t, PyObject *was) {
  safetile_facts f;
  if (read_facts != NULL && Py_TYPE(t) == S.torch_Tensor && read_facts(t, &f)) return ptr_is(was, f.ptr);
  PyObject *now = PyObject_CallMethodNoArgs(t, S.s_data_ptr);
  if (now == NULL) return -1;
  int eq = PyObject_RichCompareBool(now, was, Py_EQ);
  Py_DECREF(now);
  return eq;
}

/* 1: equal, 0: not, -1: error */
static int ptr_unmoved(PyObject *data, PyObject *facts) {
  if (Py_TYPE(data) != S.torch_Tensor) return 0;
  PyObject *ext = SLOT(facts, S.f_extent);
  if (ext == NULL) return 0;
  if (read_facts == NULL) {  /* data_ptr() through torch: not while a mode may answer for it */
    int m = mode_active();
    if (m != 0) return m < 0 ? -1 : 0;
  }
  PyObject *was = PyObject_GetAttr(ext, S.s_ptr);
  if (was == NULL) return -1;
  int eq = data_ptr_is(data, was);
  Py_DECREF(was);
  return eq;
}

/* The facts of a Partition/Shared/Tensor as prepare_runtime reads them when they are cached and
   unmoved, and its data; 1: found, 0: not the common case, -1: error. Borrowed references. */
static int cached_facts(PyObject *a, PyObject **facts, PyObject **data) {
  PyTypeObject *t = Py_TYPE(a);
  PyObject *f, *tensor;
  if (t == S.Tensor) {
    tensor = a;
    f = SLOT(a, S.t_facts);
  } else if (t == S.Partition) {
    tensor = SLOT(a, S.p_tensor);
    f = SLOT(a, S.p_facts);
  } else {
    tensor = SLOT(a, S.s_tensor);
    f = SLOT(a, S.s_facts);
  }
  if (f == NULL || f == Py_None || tensor == NULL || Py_TYPE(tensor) != S.Tensor) return 0;
  PyObject *d = SLOT(tensor, S.t_data), *torch = SLOT(tensor, S.t_torch);
  if (d == NULL || torch == NULL) return 0;
  if (torch == Py_True) {
    int ok = ptr_unmoved(d, f);
    if (ok <= 0) return ok;
  } else if (torch != Py_False) {
    return 0;
  }
  *facts = f;
  *data = d;
  return 1;
}

static PyObject *call0(PyObject *f) { return PyObject_Vectorcall(f, NULL, 0, NULL); }

/* Whether ``t``'s facts (data_ptr, dtype, shape, stride(), get_device(): prepare_runtime's key part of a
   raw torch tensor) equal ``part``, compared as tuples compare, and its memory holds the values it shows
   (no lazy negative bit: the facts of a negative view are its base's): 1 yes, 0 no. A tensor whose facts
   cannot be read (sparse, nested: no data pointer) is not the common case: 0, the error cleared, and the
   Python path refuses it in words. */
static int facts_equal(PyObject *t, PyObject *part) {
  if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 5) return 0;
  safetile_facts f;
  if (read_facts != NULL && Py_TYPE(t) == S.torch_Tensor)  /* declined (e.g. past its storage): not equal */
    return read_facts(t, &f) && ptr_is(PyTuple_GET_ITEM(part, 0), f.ptr) && PyTuple_GET_ITEM(part, 1) == f.dtype &&
           ints_are(PyTuple_GET_ITEM(part, 2), f.sizes, f.ndim) &&
           ints_are(PyTuple_GET_ITEM(part, 3), f.strides, f.ndim) &&
           int_is(PyTuple_GET_ITEM(part, 4), f.device) && !f.neg;
  for (int k = 0; k < 6; k++) {
    PyObject *now;
    switch (k) {
      case 0: now = PyObject_CallMethodNoArgs(t, S.s_data_ptr); break;
      case 1: now = PyObject_GetAttr(t, S.s_dtype); break;
      case 2: now = PyObject_GetAttr(t, S.s_shape); break;
      case 3: now = PyObject_CallMethodNoArgs(t, S.s_stride); break;
      case 4: now = PyObject_CallMethodNoArgs(t, S.s_get_device); break;
      default: now = PyObject_CallMethodNoArgs(t, S.s_is_neg); break;
    }
    if (now == NULL) {
      PyErr_Clear();
      return 0;
    }
    int eq = k < 5 ? PyObject_RichCompareBool(PyTuple_GET_ITEM(part, k), now, Py_EQ) : now == Py_False;
    Py_DECREF(now);
    if (eq != 1) {
      PyErr_Clear();
      return 0;
    }
  }
  return 1;
}

/* Whether safetile's own alias still shows ``part``'s facts: nobody re-points it, so only its storage
   reallocated or freed in place changes them, and that moves its data pointer (all that torch's
   methods are asked for; the C++ reader reads every fact at no cost). */
static int alias_unmoved(PyObject *al, PyObject *part) {
  if (read_facts != NULL) return facts_equal(al, part);
  if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 5) return 0;
  int eq = data_ptr_is(al, PyTuple_GET_ITEM(part, 0));
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

/* ``x.detach()`` when its facts equal ``part``; NULL with no error when they differ or a TorchFunctionMode
   is active (the Python path then aliases with torch functions off). */
static PyObject *raw_alias(PyObject *x, PyObject *part) {
  if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 5) return NULL;
  int m = mode_active();  /* detach() is a torch method an active TorchFunctionMode could answer */
  if (m != 0) return NULL;  /* -1: the error stays set */
  PyObject *al = PyObject_CallMethodNoArgs(x, S.s_detach);
  if (al == NULL) return NULL;
  if (Py_TYPE(al) != S.torch_Tensor || !facts_equal(al, part)) {
    Py_DECREF(al);
    return NULL;
  }
  return al;
}

/* A raw torch tensor's alias, made once per terminal (``ExecContext.aliases``: id -> (x, part, alias)):
   reused while ``x`` and the alias both still show the facts it was made from (the same key part).
   Then they are the same memory: the alias keeps the storage it was made on alive, so that address
   cannot have been handed to other memory unless the storage itself was reallocated or freed in place
   (``untyped_storage().resize_``), which moves the alias's pointer too, and ``x`` showing the old facts
   again on new memory at the recycled address gets a fresh alias, as the Python path makes (red team
   round 8, attack 805). Outside a terminal (no context), a fresh alias. NULL with no error: the facts
   differ (the Python path). */
static PyObject *cached_alias(PyObject *x, PyObject *part, PyObject *ctx) {
  PyObject *cache = (ctx != NULL && Py_TYPE(ctx) == S.ExecContext) ? SLOT(ctx, S.x_aliases) : NULL;
  if (cache == NULL || !PyDict_CheckExact(cache)) return raw_alias(x, part);
  PyObject *key = PyLong_FromVoidPtr(x);
  if (key == NULL) return NULL;
  PyObject *entry = PyDict_GetItemWithError(cache, key);
  if (entry == NULL && PyErr_Occurred()) {
    Py_DECREF(key);
    return NULL;
  }
  if (entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 3 && PyTuple_GET_ITEM(entry, 0) == x &&
      PyTuple_GET_ITEM(entry, 1) == part && facts_equal(x, part) && alias_unmoved(PyTuple_GET_ITEM(entry, 2), part)) {
    PyObject *al = PyTuple_GET_ITEM(entry, 2);
    Py_INCREF(al);
    Py_DECREF(key);
    return al;
  }
  PyObject *al = raw_alias(x, part);
  if (al != NULL) {
    PyObject *e = PyTuple_Pack(3, x, part, al);
    if (e == NULL || PyDict_SetItem(cache, key, e) < 0) {
      Py_XDECREF(e);
      Py_DECREF(al);
      al = NULL;
    } else {
      Py_DECREF(e);
    }
  }
  Py_DECREF(key);
  return al;
}

/* Every read the compiled code recorded (CaptureSet.entries: (holder, key, value)) still gives the
   very object recorded, for the holders read here (functions, cells, dicts). 0 answers nothing: the
   caller runs CaptureSet.check, which also accepts an equal constant re-assigned. */
static int captures_identical(PyObject *entries) {
  if (entries == NULL || !PyTuple_CheckExact(entries)) return 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entries); i++) {
    PyObject *e = PyTuple_GET_ITEM(entries, i);
    if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 3) return 0;
    PyObject *h = PyTuple_GET_ITEM(e, 0), *k = PyTuple_GET_ITEM(e, 1), *v = PyTuple_GET_ITEM(e, 2);
    if (k == S.function_state) {  /* (code, defaults, kwdefaults, closure), as _function_state reads them */
      if (!PyFunction_Check(h) || !PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != 4) return 0;
      PyObject *now[4] = {PyFunction_GET_CODE(h), PyFunction_GET_DEFAULTS(h), PyFunction_GET_KW_DEFAULTS(h),
                          PyFunction_GET_CLOSURE(h)};
      for (int j = 0; j < 4; j++)
        if ((now[j] == NULL ? Py_None : now[j]) != PyTuple_GET_ITEM(v, j)) return 0;
    } else if (k == Py_None) {
      if (!PyCell_Check(h)) return 0;
      PyObject *now = PyCell_GET(h);
      if ((now == NULL ? S.absent : now) != v) return 0;
    } else if (PyDict_CheckExact(h)) {
      PyObject *now = PyDict_GetItemWithError(h, k);
      if (now == NULL) {
        if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
        now = S.absent;
      }
      if (now != v) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

/* caller_location(): the first frame outside safetile, from the innermost Python frame; NULL with
   no error when a file is not in the cache yet (the caller asks the Python function). */
static PyObject *site(int *unknown) {
  *unknown = 0;
  PyFrameObject *f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f != NULL) {
    PyCodeObject *code = PyFrame_GetCode(f);
    PyObject *skip = PyDict_GetItemWithError(S.internal, code->co_filename);
    if (skip == NULL) {
      Py_DECREF(code);
      Py_DECREF(f);
      if (!PyErr_Occurred()) *unknown = 1;
      return NULL;
    }
    if (skip == Py_False) {
      PyObject *line = PyLong_FromLong(PyFrame_GetLineNumber(f));
      PyObject *r = line == NULL ? NULL : PyTuple_Pack(2, code->co_filename, line);
      Py_XDECREF(line);
      Py_DECREF(code);
      Py_DECREF(f);
      return r;
    }
    Py_DECREF(code);
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_RETURN_NONE;
}

/* ``acq``/``rel``: a lock's bound methods; a native_lock.py Lock is taken directly */
static int lock(PyObject *acq) {
  OwnLock *own = own_of(acq);
  if (own != NULL) return own_acquire(own, -1.0) < 0 ? -1 : 0;
  PyObject *r = call0(acq);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

static void unlock(PyObject *rel) {
  PyObject *et, *ev, *tb;  /* an error pending (the caller's) stays pending */
  PyErr_Fetch(&et, &ev, &tb);
  OwnLock *own = own_of(rel);
  if (own != NULL) {
    if (own_release(own) < 0) PyErr_Clear();  /* only a release of an unheld lock fails: never ours */
  } else {
    PyObject *r = call0(rel);
    Py_XDECREF(r);
    if (r == NULL) PyErr_Clear();
  }
  PyErr_Restore(et, ev, tb);
}

/* undo the first n moves of ``args`` made by ``take`` (OWNERSHIP held) */
static int undo(PyObject *const *args, Py_ssize_t n, PyObject *ref) {
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *a = args[i];
    PyTypeObject *t = Py_TYPE(a);
    if (t == S.Shared) {
      PyObject *h = SLOT(a, S.s_holders);
      PyObject *m = PyNumber_Subtract(h, S.one);
      if (m == NULL) return -1;
      slot_set(a, S.s_holders, m);
      Py_DECREF(m);
    } else if ((t == S.Partition || t == S.Tensor) && SLOT(a, S.o_holder) == ref) {
      slot_set(a, S.o_moved, Py_None);
      slot_set(a, S.o_holder, Py_None);
    }
  }
  return 0;
}

/* LaunchOp._take's common case (OWNERSHIP held): 1 moved, 0 refused (nothing moved), -1 error. */
static int take(PyObject *const *args, Py_ssize_t n, PyObject *ref, PyObject *ctx) {
  Py_ssize_t i;
  for (i = 0; i < n; i++) {
    PyObject *a = args[i];
    PyTypeObject *t = Py_TYPE(a);
    if (t == S.Shared) {
      PyObject *u = SLOT(a, S.s_unwrapped), *h = SLOT(a, S.s_holders);
      if (u != Py_None || h == NULL || !PyLong_CheckExact(h)) break;
      PyObject *m = PyNumber_Add(h, S.one);
      if (m == NULL) { undo(args, i, ref); return -1; }
      slot_set(a, S.s_holders, m);
      Py_DECREF(m);
    } else if (t == S.Partition || t == S.Tensor) {
      if (SLOT(a, S.o_moved) != Py_None) break;
      if (t == S.Partition) {
        if (SLOT(a, S.p_released) != Py_False) break;
      } else if (SLOT(a, S.t_borrow) != Py_None) {
        break;
      }
      PyObject *lent = SLOT(a, S.o_lent);
      if (lent == NULL || (lent != Py_None && lent != ctx)) break;
      slot_set(a, S.o_moved, ref);
      slot_set(a, S.o_holder, ref);
    }
  }
  if (i == n) return 1;
  if (undo(args, i, ref) < 0) return -1;
  return 0;
}

static PyObject *build(PyObject *self, PyObject *const *a, Py_ssize_t na) {
  if (!S.ready || na != 2 || !PyTuple_CheckExact(a[1])) Py_RETURN_NONE;
  PyObject *kernel = a[0], *argt = a[1];
  Py_ssize_t n = PyTuple_GET_SIZE(argt);
  if (n > MAX_ARGS) Py_RETURN_NONE;
  PyObject *const *args = &PyTuple_GET_ITEM(argt, 0);
  /* SAFETILE_BACKEND (os.environ's own mapping, as backend_override reads it): part of the key */
  PyObject *override = PyDict_GetItemWithError(S.env_data, S.env_key);
  if (override == NULL && PyErr_Occurred()) return NULL;
  PyObject *result = NULL, *caches = NULL, *config = NULL, *callables = NULL, *op = NULL, *ref = NULL,
           *runtime = NULL, *id = NULL, *loc = NULL, *ctx = NULL;
  caches = PyObject_GetAttr(kernel, S.s_caches);
  if (caches == NULL) goto error;
  config = PyObject_GetAttr(kernel, S.s_config_key);
  if (config == NULL) goto error;
  callables = PyObject_GetAttr(kernel, S.s_callables);
  if (callables == NULL) goto error;
  if (Py_TYPE(caches) != S.KernelCaches || !PyTuple_CheckExact(callables) || PyTuple_GET_SIZE(callables) != 0)
    goto none;
  PyObject *last = SLOT(caches, S.c_last);
  if (last == NULL || !PyTuple_CheckExact(last) || PyTuple_GET_SIZE(last) != 2) goto none;
  PyObject *seen = PyTuple_GET_ITEM(last, 0), *plan = PyTuple_GET_ITEM(last, 1);
  if (plan == Py_None || !PyTuple_CheckExact(seen) || PyTuple_GET_SIZE(seen) != 3 ||
      PyTuple_GET_ITEM(seen, 0) != config)
    goto none;
  if (override == NULL) {
    if (PyTuple_GET_ITEM(seen, 1) != Py_None) goto none;
  } else {  /* the key holds the decoded value: compare it encoded as os.environ encodes */
    PyObject *was = PyTuple_GET_ITEM(seen, 1);
    if (!PyUnicode_CheckExact(was) || !PyBytes_CheckExact(override)) goto none;
    PyObject *enc = PyUnicode_EncodeFSDefault(was);
    if (enc == NULL) goto error;
    int eq = PyBytes_GET_SIZE(enc) == PyBytes_GET_SIZE(override) &&
             memcmp(PyBytes_AS_STRING(enc), PyBytes_AS_STRING(override), PyBytes_GET_SIZE(enc)) == 0;
    Py_DECREF(enc);
    if (!eq) goto none;
  }
  PyObject *parts = PyTuple_GET_ITEM(seen, 2);
  if (!PyTuple_CheckExact(parts) || PyTuple_GET_SIZE(parts) != n) goto none;
  Py_INCREF(plan);  /* held: ``last`` may be replaced by another thread while the checks call out */
  Py_INCREF(parts);
  ctx = PyObject_GetAttr(S.local, S.s_ctx);  /* the terminal running this thread's work, if any */
  if (ctx == NULL) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) goto error_plan;
    PyErr_Clear();
    ctx = Py_None;
    Py_INCREF(ctx);
  }
  runtime = PyTuple_New(n);
  if (runtime == NULL) goto error_plan;
  int mode = -2;  /* whether a TorchFunctionMode is active: asked at the first raw torch tensor */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = args[i], *part = PyTuple_GET_ITEM(parts, i);
    PyTypeObject *t = Py_TYPE(x);
    if (t == S.Partition || t == S.Shared || t == S.Tensor) {
      PyObject *f, *d;
      int ok = cached_facts(x, &f, &d);
      if (ok < 0) goto error_plan;
      if (ok == 0 || f != part) goto none_plan;
      Py_INCREF(d);
      PyTuple_SET_ITEM(runtime, i, d);
    } else if (t == S.torch_Tensor) {
      /* a raw torch tensor (a Ref): its own alias, whose facts are the key part (prepare_runtime); its
         detach() is a torch method an active TorchFunctionMode could answer: the Python path then */
      if (read_facts == NULL) {  /* its facts read through torch's methods: not while a mode may answer */
        if (mode == -2) mode = mode_active();
        if (mode < 0) goto error_plan;
        if (mode) goto none_plan;
      }
      PyObject *al = cached_alias(x, part, ctx);
      if (al == NULL) {
        if (PyErr_Occurred()) goto error_plan;
        goto none_plan;
      }
      PyTuple_SET_ITEM(runtime, i, al);
    } else if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type) {
      /* the key part is (type, value), and a zero float's sign third (0.0 == -0.0), compared as tuples
         compare: identity, then equality */
      int zero = t == &PyFloat_Type && PyFloat_AS_DOUBLE(x) == 0.0;
      if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 2 + zero ||
          PyTuple_GET_ITEM(part, 0) != (PyObject *)t)
        goto none_plan;
      int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(part, 1), x, Py_EQ);
      if (eq < 0) goto error_plan;
      if (!eq) goto none_plan;
      if (zero) {
        PyObject *sign = PyTuple_GET_ITEM(part, 2);
        if (!PyFloat_CheckExact(sign) || PyFloat_AS_DOUBLE(sign) != copysign(1.0, PyFloat_AS_DOUBLE(x)))
          goto none_plan;
      }
      Py_INCREF(x);
      PyTuple_SET_ITEM(runtime, i, x);
    } else {
      goto none_plan;
    }
  }
  {  /* the Python state the compiled code folded in: unchanged? (else the Python path refreshes) */
    PyObject *captured = SLOT(caches, S.c_captured);
    if (captured == NULL) goto none_plan;
    PyObject *check = SLOT(captured, S.cs_check);
    if (check == NULL) goto none_plan;
    if (check != S.unchanged && !captures_identical(SLOT(captured, S.cs_entries))) {
      Py_INCREF(check);
      PyObject *r = call0(check);
      Py_DECREF(check);
      if (r == NULL) goto error_plan;
      int same = r == Py_True;
      Py_DECREF(r);
      if (!same) goto none_plan;
    }
  }
  {
    int unknown;
    loc = site(&unknown);
    if (loc == NULL) {
      if (!unknown) goto error_plan;
      /* a file met for the first time: the Python function decides (and remembers), from the same frame */
      PyObject *depth = PyLong_FromLong(1);
      if (depth == NULL) goto error_plan;
      PyObject *one[1] = {depth};
      loc = PyObject_Vectorcall(S.caller_location, one, 1, NULL);
      Py_DECREF(depth);
      if (loc == NULL) goto error_plan;
    }
  }
  op = S.LaunchOp->tp_new(S.LaunchOp, S.empty, NULL);
  if (op == NULL) goto error_plan;
  if (Py_TYPE(op) != S.LaunchOp) goto none_plan;
  slot_set(op, S.l_state, S.s_new);  /* "built" once the arguments are moved in */
  {
    PyObject *one[1] = {op};
    ref = PyObject_Vectorcall(S.OpRef, one, 1, NULL);
    if (ref == NULL) goto error_plan;
  }
  {
    PyObject *arity = PyLong_FromSsize_t(n);
    if (arity == NULL) goto error_plan;
    slot_set(op, S.l_arity, arity);
    Py_DECREF(arity);
  }
  slot_set(op, S.l_kernel, kernel);
  slot_set(op, S.l_args, argt);
  slot_set(op, S.l_site, loc);
  slot_set(op, S.l_plan, plan);
  slot_set(op, S.l_runtime, runtime);
  slot_set(op, S.l_inflight, Py_None);
  slot_set(op, S.l_ref, ref);
  slot_set(op, S.l_into, ref);
  /* moved in and built in one step under OWNERSHIP: a borrow's exit (which marks its partitions
     released, then cancels their holder if built) never finds it half made */
  if (lock(S.acquire) < 0) goto error_plan;
  int took = take(args, n, ref, ctx);
  if (took == 1) {
    id = PyIter_Next(S.op_ids);  /* numbered once accepted, as the Python path numbers what it builds */
    if (id == NULL) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "launch ids ran out");
      undo(args, n, ref);
      took = -1;
    } else {
      slot_set(op, S.l_id, id);
      slot_set(op, S.l_state, S.s_built);
    }
  }
  unlock(S.release);
  if (took < 0) goto error_plan;
  if (took == 0) goto none_plan;  /* refused: nothing moved; the Python path words the error */
  result = op;
  op = NULL;
  goto done_plan;
none_plan:
  result = Py_None;
  Py_INCREF(result);
done_plan:
error_plan:
  Py_DECREF(plan);
  Py_DECREF(parts);
  goto out;
none:
  result = Py_None;
  Py_INCREF(result);
  goto out;
error:
out:
  Py_XDECREF(caches);
  Py_XDECREF(config);
  Py_XDECREF(callables);
  Py_XDECREF(op);
  Py_XDECREF(ref);
  Py_XDECREF(runtime);
  Py_XDECREF(id);
  Py_XDECREF(loc);
  Py_XDECREF(ctx);
  return result;
}
"""
