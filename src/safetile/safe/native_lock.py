"""The C source of ``Lock``, the safe style's re-entrant lock when the C module is built (native.py).

Why not ``threading.RLock``: the C twin takes ``OWNERSHIP`` and the registry's lock four times a
chained launch, and each ``RLock.acquire`` call parses its keyword arguments and reads the
monotonic clock (CPython 3.11/3.12 compute a deadline even for a lock that is free): ~15% of a
safe chained launch's host time on the dev box (bench/NOTES.md, session 10). This lock's state
(holder, depth, waiters) is only read and written with the GIL held, so taking a free lock is two
stores; a thread that must wait releases the GIL and blocks on ``wake``, which a release lets one
waiter through when someone waits. It is a real lock: code holding it may release the GIL (torch
calls do) and other threads still wait. Built only where the GIL exists (``Py_GIL_DISABLED``: the
module has no ``Lock`` and ``threading.RLock`` is used). ``acquire(timeout=...)`` is honoured (a fork waits
with a timeout: forking.py); a signal handler that raises (Ctrl-C) interrupts a wait, as it does
``RLock.acquire``'s.
"""

LOCK = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

#ifndef Py_GIL_DISABLED
typedef struct {
  PyObject_HEAD
  unsigned long owner;      /* the holder's thread ident, while depth > 0 */
  unsigned long depth;      /* the holder's nested acquisitions; 0: free */
  unsigned long waiters;    /* threads blocked in own_wait */
  PyThread_type_lock wake;  /* taken while nobody is let through: waiters block on it */
} OwnLock;

static PyTypeObject OwnLockType;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait for the lock to be free and take it: 1 taken, 0 timed out (timeout < 0: no limit), -1 with
   the exception a signal handler raised (as RLock's acquire: a Ctrl-C interrupts the wait). */
static int own_wait(OwnLock *l, unsigned long me, double timeout) {
  double end = timeout < 0 ? 0.0 : now_s() + timeout;
  int taken = 0;
  l->waiters++;
  for (;;) {
    if (l->depth == 0) {
      taken = 1;
      break;
    }
    long long us = -1;
    if (timeout >= 0) {
      double left = end - now_s();
      if (left <= 0) break;
      us = (long long)(left * 1e6) + 1;
    }
    PyLockStatus r;
    Py_BEGIN_ALLOW_THREADS
    r = PyThread_acquire_lock_timed(l->wake, (PY_TIMEOUT_T)us, 1);
    Py_END_ALLOW_THREADS
    if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0) {
      taken = -1;
      break;
    }
  }
  l->waiters--;
  if (taken == 1) {
    l->owner = me;
    l->depth = 1;
  }
  return taken;
}

/* Take the lock (timeout in seconds, < 0 no limit, 0 only if free): 1 taken, 0 not, -1 interrupted. */
static int own_acquire(OwnLock *l, double timeout) {
  unsigned long me = PyThread_get_thread_ident();
  if (l->depth == 0) {
    l->owner = me;
    l->depth = 1;
    return 1;
  }
  if (l->owner == me) {
    l->depth++;
    return 1;
  }
  if (timeout == 0) return 0;
  return own_wait(l, me, timeout);
}

/* Release one level: 0, or -1 with a RuntimeError when this thread does not hold it. */
static int own_release(OwnLock *l) {
  if (l->depth == 0 || l->owner != PyThread_get_thread_ident()) {
    PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
    return -1;
  }
  if (--l->depth == 0 && l->waiters > 0) PyThread_release_lock(l->wake);
  return 0;
}

/* the lock behind a bound ``acquire``/``release`` method of a Lock, else NULL */
static OwnLock *own_of(PyObject *method) {
  if (!PyCFunction_Check(method)) return NULL;
  PyObject *self = PyCFunction_GET_SELF(method);
  return self != NULL && Py_TYPE(self) == &OwnLockType ? (OwnLock *)self : NULL;
}

static PyThread_type_lock new_wake(void) {
  PyThread_type_lock w = PyThread_allocate_lock();
  if (w == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  PyThread_acquire_lock(w, WAIT_LOCK);
  return w;
}

static PyObject *own_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) != 0 || (kw != NULL && PyDict_GET_SIZE(kw) != 0)) {
    PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
    return NULL;
  }
  OwnLock *l = (OwnLock *)type->tp_alloc(type, 0);
  if (l == NULL) return NULL;
  l->wake = new_wake();
  if (l->wake == NULL) {
    Py_DECREF(l);
    return NULL;
  }
  return (PyObject *)l;
}

static void own_dealloc(OwnLock *l) {
  if (l->wake != NULL) PyThread_free_lock(l->wake);
  Py_TYPE(l)->tp_free((PyObject *)l);
}

/* acquire(blocking=True, timeout=-1), as threading.RLock's */
static PyObject *own_acquire_py(OwnLock *l, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *blocking = NULL, *timeout = NULL;
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  if (nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "acquire() takes at most 2 arguments");
    return NULL;
  }
  if (nargs > 0) blocking = args[0];
  if (nargs > 1) timeout = args[1];
  for (Py_ssize_t i = 0; i < nkw; i++) {
    PyObject *k = PyTuple_GET_ITEM(kwnames, i);
    PyObject **slot = PyUnicode_CompareWithASCIIString(k, "blocking") == 0  ? &blocking
                      : PyUnicode_CompareWithASCIIString(k, "timeout") == 0 ? &timeout
                                                                             : NULL;
    if (slot == NULL || *slot != NULL) {
      PyErr_Format(PyExc_TypeError, "acquire() got an unexpected or repeated argument %R", k);
      return NULL;
    }
    *slot = args[nargs + i];
  }
  int block = 1;
  if (blocking != NULL && (block = PyObject_IsTrue(blocking)) < 0) return NULL;
  double t = -1.0;
  if (timeout != NULL) {
    t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    if (!block && t != -1.0) {
      PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
      return NULL;
    }
    if (t < 0 && t != -1.0) {
      PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
      return NULL;
    }
  }
  if (!block) t = 0.0;
  int taken = own_acquire(l, t);
  return taken < 0 ? NULL : PyBool_FromLong(taken);
}

static PyObject *own_enter(OwnLock *l, PyObject *unused) {
  if (own_acquire(l, -1.0) < 0) return NULL;
  Py_RETURN_TRUE;
}

static PyObject *own_release_py(OwnLock *l, PyObject *unused) {
  if (own_release(l) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *own_exit(OwnLock *l, PyObject *const *args, Py_ssize_t nargs) {
  if (own_release(l) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *own_locked(OwnLock *l, PyObject *unused) { return PyBool_FromLong(l->depth > 0); }

static PyObject *own_is_owned(OwnLock *l, PyObject *unused) {
  return PyBool_FromLong(l->depth > 0 && l->owner == PyThread_get_thread_ident());
}

/* after os.fork() in the child: free, nobody waiting (those threads do not exist here). The old wake
   lock is left as it is, not freed: it may be in a state only a thread of the parent could undo. */
static PyObject *own_at_fork_reinit(OwnLock *l, PyObject *unused) {
  PyThread_type_lock w = new_wake();
  if (w == NULL) return NULL;
  l->wake = w;
  l->owner = 0;
  l->depth = 0;
  l->waiters = 0;
  Py_RETURN_NONE;
}

static PyObject *own_repr(OwnLock *l) {
  return PyUnicode_FromFormat("<safetile Lock %s, depth %lu>", l->depth ? "locked" : "unlocked", l->depth);
}

static PyMethodDef own_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))own_acquire_py, METH_FASTCALL | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): take the lock (again, by its holder); True when taken."},
    {"release", (PyCFunction)own_release_py, METH_NOARGS, "Release one level."},
    {"__enter__", (PyCFunction)own_enter, METH_NOARGS, "acquire()"},
    {"__exit__", (PyCFunction)(void (*)(void))own_exit, METH_FASTCALL, "release()"},
    {"locked", (PyCFunction)own_locked, METH_NOARGS, "Whether some thread holds it."},
    {"_is_owned", (PyCFunction)own_is_owned, METH_NOARGS, "Whether this thread holds it."},
    {"_at_fork_reinit", (PyCFunction)own_at_fork_reinit, METH_NOARGS, "Fresh and free (a fork's child)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject OwnLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "safetile_safe_native.Lock",
    .tp_basicsize = sizeof(OwnLock),
    .tp_dealloc = (destructor)own_dealloc,
    .tp_repr = (reprfunc)own_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A re-entrant lock whose state the GIL guards (safe/native_lock.py).",
    .tp_methods = own_methods,
    .tp_new = own_new,
};

/* Add ``Lock`` to the module (none where the GIL is disabled). */
static int add_lock_type(PyObject *m) {
  if (PyType_Ready(&OwnLockType) < 0) return -1;
  Py_INCREF(&OwnLockType);
  if (PyModule_AddObject(m, "Lock", (PyObject *)&OwnLockType) < 0) {
    Py_DECREF(&OwnLockType);
    return -1;
  }
  return 0;
}
#else
typedef struct OwnLock OwnLock;
static OwnLock *own_of(PyObject *method) { return NULL; }
static int own_acquire(OwnLock *l, double timeout) { return 0; }
static int own_release(OwnLock *l) { return 0; }
static int add_lock_type(PyObject *m) { return 0; }
#endif
"""
