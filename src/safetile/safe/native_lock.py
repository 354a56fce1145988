"""The C source of ``Lock``, the safe style's re-entrant lock when the C module is built (native.py).

Why not ``threading.RLock``: the C twin takes ``OWNERSHIP`` and the registry's lock four times a
chained launch, and each ``RLock.acquire`` call parses its keyword arguments and reads the
monotonic clock (CPython 3.11/3.12 compute a deadline even for a lock that is free): ~15% of a
safe chained launch's host time on the dev box (bench/NOTES.md, session 10). This lock's state
(holder, depth, queue of waiters) is only read and written with the GIL held, so taking a free lock
is two stores. A thread that must wait queues a node on its own stack and blocks on the node's own
lock with the GIL released; the last release hands the lock to the first waiter directly (it is the
holder before it even wakes), so a thread that keeps taking the lock cannot starve one that waits
(red team round 9, case 911: without the hand-over the releasing thread, still holding the GIL,
took it again before the woken waiter could run). It is a real lock: code holding it may release
the GIL (torch calls do) and other threads still wait. Built only where the GIL exists
(``Py_GIL_DISABLED``: the module has no ``Lock`` and ``threading.RLock`` is used).
``acquire(timeout=...)`` is honoured (a fork waits with a timeout: forking.py); a signal handler
that raises (Ctrl-C) interrupts a wait, as it does ``RLock.acquire``'s. After a fork the child keeps
the lock only if the forking thread held it before (``_at_fork_reinit(keep)``, forking.py).
"""

LOCK = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

#ifndef Py_GIL_DISABLED
/* A thread waiting for the lock: a node on its own stack, queued while it waits. */
typedef struct Waiter {
  struct Waiter *next;
  unsigned long ident;
  PyThread_type_lock lock;  /* taken by its waiter; released by the release that hands it the lock */
  int granted;              /* the lock was handed to it: it is the holder */
} Waiter;

typedef struct {
  PyObject_HEAD
  unsigned long owner;   /* the holder's thread ident, while depth > 0 */
  unsigned long depth;   /* the holder's nested acquisitions; 0: free (never while threads wait) */
  Waiter *head, *tail;   /* the waiting threads, first come first served */
} OwnLock;

static PyTypeObject OwnLockType;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The last release: hand the lock to the first waiter, who owns it from here on (no thread that
   did not wait can take it first, so none starves), or leave it free. */
static void own_hand_on(OwnLock *l) {
  Waiter *w = l->head;
  if (w == NULL) return;
  l->head = w->next;
  if (l->head == NULL) l->tail = NULL;
  l->owner = w->ident;
  l->depth = 1;
  w->granted = 1;
  PyThread_release_lock(w->lock);
}

static void own_unlink(OwnLock *l, Waiter *w) {
  Waiter **p = &l->head, *prev = NULL;
  while (*p != NULL && *p != w) {
    prev = *p;
    p = &(*p)->next;
  }
  if (*p == NULL) return;
  *p = w->next;
  if (l->tail == w) l->tail = prev;
}

/* Queue up and wait until the lock is handed over: 1 taken, 0 timed out (timeout < 0: no limit),
   -1 with the exception a signal handler raised (as RLock's acquire: a Ctrl-C interrupts the wait). */
static int own_wait(OwnLock *l, unsigned long me, double timeout) {
  Waiter w = {NULL, me, PyThread_allocate_lock(), 0};
  if (w.lock == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  PyThread_acquire_lock(w.lock, WAIT_LOCK);
  if (l->tail != NULL) l->tail->next = &w; else l->head = &w;
  l->tail = &w;
  double end = timeout < 0 ? 0.0 : now_s() + timeout;
  int result = 0;
  for (;;) {
    long long us = -1;
    if (timeout >= 0) {
      double left = end - now_s();
      if (left <= 0) break;
      us = (long long)(left * 1e6) + 1;
    }
    PyLockStatus r;
    Py_BEGIN_ALLOW_THREADS
    r = PyThread_acquire_lock_timed(w.lock, (PY_TIMEOUT_T)us, 1);
    Py_END_ALLOW_THREADS
    if (w.granted) break;
    if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0) {
      result = -1;
      break;
    }
  }
  if (w.granted) {
    if (result == 0) {
      result = 1;
    } else {  /* handed over while a signal handler raised: passed on, the error reported */
      l->depth = 0;
      own_hand_on(l);
    }
  } else {
    own_unlink(l, &w);
  }
  PyThread_free_lock(w.lock);
  return result;
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
  if (--l->depth == 0) own_hand_on(l);
  return 0;
}

/* the lock behind a bound ``acquire``/``release`` method of a Lock, else NULL */
static OwnLock *own_of(PyObject *method) {
  if (!PyCFunction_Check(method)) return NULL;
  PyObject *self = PyCFunction_GET_SELF(method);
  return self != NULL && Py_TYPE(self) == &OwnLockType ? (OwnLock *)self : NULL;
}

static PyObject *own_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) != 0 || (kw != NULL && PyDict_GET_SIZE(kw) != 0)) {
    PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
    return NULL;
  }
  return type->tp_alloc(type, 0);
}

static void own_dealloc(OwnLock *l) { Py_TYPE(l)->tp_free((PyObject *)l); }

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

/* _at_fork_reinit(keep=False), after os.fork() in the child: nobody waits (those threads do not
   exist here, nor their queue nodes); free, or with ``keep`` (the forking thread held it before the
   fork: safe/forking.py) still held by it at its depth. */
static PyObject *own_at_fork_reinit(OwnLock *l, PyObject *const *args, Py_ssize_t nargs) {
  int keep = 0;
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "_at_fork_reinit() takes at most 1 argument");
    return NULL;
  }
  if (nargs == 1 && (keep = PyObject_IsTrue(args[0])) < 0) return NULL;
  l->head = l->tail = NULL;
  if (!keep || l->owner != PyThread_get_thread_ident()) l->depth = 0;
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
    {"_at_fork_reinit", (PyCFunction)(void (*)(void))own_at_fork_reinit, METH_FASTCALL,
     "Fresh after a fork: free, or (keep=True) still held by the forking thread at its depth."},
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
