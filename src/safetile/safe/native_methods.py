"""The C source of the safe style's hot methods (appended to native_source.py's by native.py).

A chained safe launch (``op.then(lambda v: kernel(*v))``) runs four methods of ours per launch
besides the user's closure: ``DeviceOp.then``, ``EntryKernel.__call__``, ``LaunchOp._run`` and
``LaunchOp.__del__``. As Python functions each is a frame whose only work is to call the C
twin or to return (bench/NOTES.md, issue 9 "host cost"). While the C twin is loaded, each is
replaced on its class by a method descriptor of the same name (``install``) that does the common
case in C and otherwise calls the Python definition it replaced, which stays the whole behaviour:

* ``__call__``: ``FAST.build(kernel, args)`` (whatever ``FAST.build`` holds, so a wrapper
  installed there sees every call), else the Python ``__call__`` (keywords, a first launch, every
  refusal);
* ``_run``: ``FAST.run(op, ctx)``, else the Python ``_run``;
* ``__del__``: nothing unless the op is still ``built`` (dropped unrun), else the Python one;
* ``then``: ``Then(op, f)`` as ``Then.__init__`` makes it, for a callable ``f`` (else the
  Python one words the error).

``install(False)`` puts the Python definitions back (``FastPath.off``).
"""

METHODS = r"""
typedef struct {
  int ready;
  PyTypeObject *EntryKernel, *DeviceOp, *Then, *FastPath;
  PyObject *fast, *c_build, *c_run;          /* native.FAST, this module's build and run */
  Py_ssize_t fp_build, fp_run;               /* FastPath's slots */
  PyObject *py_call, *py_run, *py_del, *py_then;  /* the Python definitions */
  PyObject *d_call, *d_run, *d_del, *d_then;      /* their C replacements */
  PyObject *s_op, *s_f;
} Methods;

static Methods M;

/* FAST.<slot>(a0, a1): this module's own function called directly, a wrapper through Python;
   None when the slot is None (turned off). */
static PyObject *through_fast(Py_ssize_t off, PyObject *own, PyObject *(*direct)(PyObject *, PyObject *const *,
                              Py_ssize_t), PyObject *a0, PyObject *a1) {
  PyObject *f = SLOT(M.fast, off);
  PyObject *a[2] = {a0, a1};
  if (f == NULL || f == Py_None) Py_RETURN_NONE;
  if (f == own) return direct(NULL, a, 2);
  Py_INCREF(f);
  PyObject *r = PyObject_Vectorcall(f, a, 2, NULL);
  Py_DECREF(f);
  return r;
}

/* fn(self, *args, **kw) for a vectorcall's arguments */
static PyObject *call_python(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
  Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
  PyObject *small[17], **stack = small;
  if (total + 1 > 17) {
    stack = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
    if (stack == NULL) return PyErr_NoMemory();
  }
  stack[0] = self;
  for (Py_ssize_t i = 0; i < total; i++) stack[i + 1] = args[i];
  PyObject *r = PyObject_Vectorcall(fn, stack, nargs + 1, kwnames);
  if (stack != small) PyMem_Free(stack);
  return r;
}

static PyObject *entry_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) {
    PyObject *argt = PyTuple_New(nargs);
    if (argt == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
      Py_INCREF(args[i]);
      PyTuple_SET_ITEM(argt, i, args[i]);
    }
    PyObject *op = through_fast(M.fp_build, M.c_build, build, self, argt);
    Py_DECREF(argt);
    if (op != Py_None) return op;  /* the launch, or NULL (an error) */
    Py_DECREF(op);
  }
  return call_python(M.py_call, self, args, nargs, kwnames);
}

/* Each method takes any arguments: a call of another shape than the common case's (keywords, a
   wrong count) is the Python definition's to answer. */
#define POSITIONAL(n) (nargs == (n) && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0))

static PyObject *op_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (POSITIONAL(1)) {
    PyObject *r = through_fast(M.fp_run, M.c_run, run, self, args[0]);
    if (r != Py_None) return r;
    Py_DECREF(r);
  }
  return call_python(M.py_run, self, args, nargs, kwnames);
}

static PyObject *op_del(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (POSITIONAL(0) && Py_TYPE(self) == S.LaunchOp) {  /* final outside safetile: its slot read directly */
    PyObject *state = SLOT(self, S.l_state);
    if (state != NULL && state != S.s_built &&
        !(PyUnicode_CheckExact(state) && PyUnicode_Compare(state, S.s_built) == 0))
      Py_RETURN_NONE;  /* run, failed or given back: nothing to give back */
  }
  return call_python(M.py_del, self, args, nargs, kwnames);
}

static PyObject *op_then(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  if (!POSITIONAL(1) || !PyCallable_Check(args[0])) return call_python(M.py_then, self, args, nargs, kwnames);
  PyObject *f = args[0];
  PyObject *t = M.Then->tp_new(M.Then, S.empty, NULL);
  if (t == NULL) return NULL;
  if (PyObject_SetAttr(t, M.s_op, self) < 0 || PyObject_SetAttr(t, M.s_f, f) < 0) {
    Py_DECREF(t);
    return NULL;
  }
  return t;
}

#define FASTKW METH_FASTCALL | METH_KEYWORDS
static PyMethodDef def_call = {"__call__", (PyCFunction)(void (*)(void))entry_call, FASTKW,
                               "Launch: the C twin's common case, else the Python definition."};
static PyMethodDef def_run = {"_run", (PyCFunction)(void (*)(void))op_run, FASTKW,
                              "Run: the C twin's common case, else Python's."};
static PyMethodDef def_del = {"__del__", (PyCFunction)(void (*)(void))op_del, FASTKW,
                              "Give a dropped unrun launch back."};
static PyMethodDef def_then = {"then", (PyCFunction)(void (*)(void))op_then, FASTKW,
                               "Run f(value) after this op; if it returns a DeviceOp, run that on the same stream."};

/* the Python definition ``name`` in ``cls``'s own dict (a function: never a replacement installed) */
static PyObject *python_def(PyTypeObject *cls, const char *name) {
  PyObject *f = PyDict_GetItemString(cls->tp_dict, name);
  if (f == NULL || !PyFunction_Check(f)) {
    PyErr_Format(PyExc_TypeError, "%s.%s is not a Python function", cls->tp_name, name);
    return NULL;
  }
  Py_INCREF(f);
  return f;
}

/* methods_setup(classes, objects): after setup(); the classes and the Python definitions, once. */
static PyObject *methods_setup(PyObject *self, PyObject *args) {
  PyObject *c, *o;
  if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &c, &PyDict_Type, &o)) return NULL;
  if (M.ready) Py_RETURN_NONE;
  if (!S.ready) {
    PyErr_SetString(PyExc_RuntimeError, "methods_setup before setup");
    return NULL;
  }
#define MCLS(field, key) do { PyObject *v = PyDict_GetItemString(c, key); \
    if (v == NULL || take_type(v, &M.field) < 0) { \
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, key); \
      return NULL; \
    } } while (0)
#define MOBJ(field, key) do { PyObject *v = PyDict_GetItemString(o, key); \
    if (v == NULL) { PyErr_SetString(PyExc_KeyError, key); return NULL; } Py_INCREF(v); M.field = v; } while (0)
  MCLS(EntryKernel, "EntryKernel"); MCLS(DeviceOp, "DeviceOp"); MCLS(Then, "Then"); MCLS(FastPath, "FastPath");
  MOBJ(fast, "fast"); MOBJ(c_build, "build"); MOBJ(c_run, "run");
  if (Py_TYPE(M.fast) != M.FastPath) {
    PyErr_SetString(PyExc_TypeError, "methods_setup: fast is not a FastPath");
    return NULL;
  }
  if (offset_of((PyObject *)M.FastPath, "build", &M.fp_build) < 0) return NULL;
  if (offset_of((PyObject *)M.FastPath, "run", &M.fp_run) < 0) return NULL;
  if (!(M.py_call = python_def(M.EntryKernel, "__call__")) || !(M.py_run = python_def(S.LaunchOp, "_run")) ||
      !(M.py_del = python_def(S.LaunchOp, "__del__")) || !(M.py_then = python_def(M.DeviceOp, "then")))
    return NULL;
  if (!(M.d_call = PyDescr_NewMethod(M.EntryKernel, &def_call)) ||
      !(M.d_run = PyDescr_NewMethod(S.LaunchOp, &def_run)) || !(M.d_del = PyDescr_NewMethod(S.LaunchOp, &def_del)) ||
      !(M.d_then = PyDescr_NewMethod(M.DeviceOp, &def_then)))
    return NULL;
  if (!(M.s_op = PyUnicode_InternFromString("op")) || !(M.s_f = PyUnicode_InternFromString("f"))) return NULL;
  M.ready = 1;
  Py_RETURN_NONE;
}

/* install(on): the C methods on their classes (True), or the Python definitions back (False) */
static PyObject *install(PyObject *self, PyObject *on) {
  if (!M.ready) {
    PyErr_SetString(PyExc_RuntimeError, "install before methods_setup");
    return NULL;
  }
  int yes = PyObject_IsTrue(on);
  if (yes < 0) return NULL;
  struct { PyTypeObject *cls; const char *name; PyObject *c, *py; } t[4] = {
      {M.EntryKernel, "__call__", M.d_call, M.py_call}, {S.LaunchOp, "_run", M.d_run, M.py_run},
      {S.LaunchOp, "__del__", M.d_del, M.py_del}, {M.DeviceOp, "then", M.d_then, M.py_then}};
  for (int i = 0; i < 4; i++)
    if (PyObject_SetAttrString((PyObject *)t[i].cls, t[i].name, yes ? t[i].c : t[i].py) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "Find the classes' slots and the runtime's objects (once)."},
    {"methods_setup", methods_setup, METH_VARARGS, "Find the hot methods' classes and Python definitions (once)."},
    {"install", install, METH_O, "Install the C methods (True) or put the Python definitions back (False)."},
    {"use_facts", use_facts, METH_O, "Read torch facts through this C++ reader capsule (None: torch's methods)."},
    {"build", (PyCFunction)(void (*)(void))build, METH_FASTCALL, "LaunchOp(kernel, args)'s common case, or None."},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL, "LaunchOp._run(ctx)'s common case, or None."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "safetile_safe_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit_safetile_safe_native(void) {
  PyObject *m = PyModule_Create(&module);
  if (m != NULL && add_lock_type(m) < 0) Py_CLEAR(m);
  return m;
}
"""
