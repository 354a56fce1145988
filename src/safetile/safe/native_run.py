"""The C source of the safe launch's ``run`` (``LaunchOp._run``'s common case: a bound GPU plan
submitted inside a terminal whose in-flight entry already holds it), appended to native_source.py's
by native.py, which says what it does and why."""

RUN = r"""
/* Bound.__call__(handle): call(gx, gy, gz, handle, *tail) */
static PyObject *call_bound(PyObject *bound, PyObject *handle) {
  PyObject *call = SLOT(bound, S.b_call), *grid = SLOT(bound, S.b_grid), *tail = SLOT(bound, S.b_tail);
  if (call == NULL || grid == NULL || tail == NULL || !PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) != 3 ||
      !PyTuple_CheckExact(tail) || PyTuple_GET_SIZE(tail) > 1020) {
    PyErr_SetString(PyExc_TypeError, "a bound launch with an unexpected layout");
    return NULL;
  }
  PyObject *stack[1024];
  Py_ssize_t n = 4 + PyTuple_GET_SIZE(tail);
  stack[0] = PyTuple_GET_ITEM(grid, 0);
  stack[1] = PyTuple_GET_ITEM(grid, 1);
  stack[2] = PyTuple_GET_ITEM(grid, 2);
  stack[3] = handle;
  for (Py_ssize_t i = 4; i < n; i++) stack[i] = PyTuple_GET_ITEM(tail, i - 4);
  Py_INCREF(call);
  Py_INCREF(tail);  /* the stack borrows from it */
  PyObject *r = PyObject_Vectorcall(call, stack, n, NULL);
  Py_DECREF(tail);
  Py_DECREF(call);
  return r;
}

/* The plan's torch memory where it was checked (run_plan's pins check): 1 yes, 0 moved, -1 error. */
static int pins_hold(PyObject *plan, PyObject *runtime) {
  PyObject *pins = SLOT(plan, S.pl_pins);
  if (pins == NULL) return 0;
  Py_INCREF(pins);
  if (!PyTuple_CheckExact(pins)) { Py_DECREF(pins); return 0; }
  int ok = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pins) && ok == 1; i++) {
    PyObject *pin = PyTuple_GET_ITEM(pins, i);
    if (!PyTuple_CheckExact(pin) || PyTuple_GET_SIZE(pin) != 3) { ok = 0; break; }
    Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(pin, 0));
    if (k < 0 || k >= PyTuple_GET_SIZE(runtime)) { PyErr_Clear(); ok = 0; break; }
    ok = data_ptr_is(PyTuple_GET_ITEM(runtime, k), PyTuple_GET_ITEM(pin, 2));
  }
  Py_DECREF(pins);
  return ok;
}

/* ExecContext.keep_runtime: append ``runtime`` unless the last kept tuple holds the same objects */
static int keep_runtime(PyObject *keep, PyObject *runtime) {
  Py_ssize_t n = PyList_GET_SIZE(keep), k = PyTuple_GET_SIZE(runtime);
  if (n > 0) {
    PyObject *last = PyList_GET_ITEM(keep, n - 1);
    if (last == runtime) return 0;
    if (PyTuple_CheckExact(last) && PyTuple_GET_SIZE(last) == k) {
      Py_ssize_t i = 0;
      while (i < k && PyTuple_GET_ITEM(last, i) == PyTuple_GET_ITEM(runtime, i)) i++;
      if (i == k) return 0;
    }
  }
  return PyList_Append(keep, runtime);
}

static int notify(void) {
  if (PyList_GET_SIZE(S.waiters) == 0) return 0;
  PyObject *r = call0(S.notify_all);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

/* LaunchOp._give_back(args, ctx) (OWNERSHIP taken here) */
static int give_back(PyObject *argt, PyObject *ref, PyObject *ctx) {
  if (lock(S.acquire) < 0) return -1;
  int rc = 0;
  PyObject *lent = SLOT(ctx, S.x_lent);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argt) && rc == 0; i++) {
    PyObject *a = PyTuple_GET_ITEM(argt, i);
    PyTypeObject *t = Py_TYPE(a);
    if (t == S.Shared) {
      PyObject *m = PyNumber_Subtract(SLOT(a, S.s_holders), S.one);
      if (m == NULL) { rc = -1; break; }
      slot_set(a, S.s_holders, m);
      Py_DECREF(m);
    } else if ((t == S.Partition || t == S.Tensor) && SLOT(a, S.o_holder) == ref) {
      slot_set(a, S.o_moved, Py_None);
      slot_set(a, S.o_holder, Py_None);
      if (SLOT(a, S.o_lent) != ctx) {
        slot_set(a, S.o_lent, ctx);
        if (lent == NULL || !PyList_Check(lent) || PyList_Append(lent, a) < 0) {
          if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "ExecContext.lent is not a list");
          rc = -1;
        }
      }
    }
  }
  unlock(S.release);
  return rc;
}

static PyObject *fail(PyObject *op, PyObject *ctx) {
  /* the launch failed after it started: LaunchOp._fail gives the arguments back and re-raises */
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  PyErr_NormalizeException(&et, &ev, &tb);
  if (tb != NULL) PyException_SetTraceback(ev, tb);
  PyObject *r = PyObject_CallMethodObjArgs(op, S.s_fail, ctx, ev, NULL);
  Py_XDECREF(et);
  Py_XDECREF(ev);
  Py_XDECREF(tb);
  Py_XDECREF(r);
  if (r != NULL) PyErr_SetString(PyExc_SystemError, "LaunchOp._fail returned");
  return NULL;
}

/* What ``run`` reads of its terminal's stream (device, device_index, handle: set when the stream is
   made), kept in the terminal's context for the stream it was read from (``ExecContext.stream_facts``):
   a chain asks for them launch after launch. New references; -1 on an error. */
static int stream_facts(PyObject *ctx, PyObject *stream, PyObject **sdev, PyObject **sidx, PyObject **handle) {
  PyObject *kept = SLOT(ctx, S.x_sfacts);
  if (kept == NULL || !PyTuple_CheckExact(kept) || PyTuple_GET_SIZE(kept) != 4 || PyTuple_GET_ITEM(kept, 0) != stream) {
    PyObject *d = PyObject_GetAttr(stream, S.s_device), *i = d ? PyObject_GetAttr(stream, S.s_device_index) : NULL,
             *h = i ? PyObject_GetAttr(stream, S.s_handle) : NULL;
    kept = h ? PyTuple_Pack(4, stream, d, i, h) : NULL;
    Py_XDECREF(d);
    Py_XDECREF(i);
    Py_XDECREF(h);
    if (kept == NULL) return -1;
    slot_set(ctx, S.x_sfacts, kept);
    Py_DECREF(kept);
    kept = SLOT(ctx, S.x_sfacts);
  }
  *sdev = Py_NewRef(PyTuple_GET_ITEM(kept, 1));
  *sidx = Py_NewRef(PyTuple_GET_ITEM(kept, 2));
  *handle = Py_NewRef(PyTuple_GET_ITEM(kept, 3));
  return 0;
}

/* The registry's lock's two methods, found again only when the lock object changes (it is made once,
   re-initialised in place after a fork). */
static struct { PyObject *lock, *acq, *rel; } R;

static int registry_lock(void) {
  PyObject *l = SLOT(S.registry, S.r_lock);
  if (l == NULL) {
    PyErr_SetString(PyExc_AttributeError, "the registry has no lock");
    return -1;
  }
  Py_INCREF(l);
  if (l != R.lock) {
    PyObject *acq = PyObject_GetAttr(l, S.s_acquire), *rel = acq ? PyObject_GetAttr(l, S.s_release) : NULL;
    if (rel == NULL) {
      Py_XDECREF(acq);
      Py_DECREF(l);
      return -1;
    }
    PyObject *old[3] = {R.lock, R.acq, R.rel};
    R.lock = Py_NewRef(l), R.acq = acq, R.rel = rel;
    for (int k = 0; k < 3; k++) Py_XDECREF(old[k]);
  }
  Py_DECREF(l);
  return 0;
}

static PyObject *run(PyObject *self, PyObject *const *a, Py_ssize_t na) {
  if (!S.ready || na != 2) Py_RETURN_NONE;
  PyObject *op = a[0], *ctx = a[1];
  if (Py_TYPE(op) != S.LaunchOp || Py_TYPE(ctx) != S.ExecContext) Py_RETURN_NONE;
  PyObject *plan = SLOT(op, S.l_plan), *argt = SLOT(op, S.l_args), *runtime = SLOT(op, S.l_runtime),
           *ref = SLOT(op, S.l_ref);
  PyObject *recorder = SLOT(ctx, S.x_recorder), *entry = SLOT(ctx, S.x_entry), *stream = SLOT(ctx, S.x_stream);
  if (plan == NULL || plan == Py_None || argt == NULL || !PyTuple_CheckExact(argt) || runtime == NULL ||
      !PyTuple_CheckExact(runtime) || ref == NULL || recorder != Py_None || entry == NULL ||
      Py_TYPE(entry) != S.InFlight || stream == NULL)
    Py_RETURN_NONE;
  PyObject *result = NULL, *bound = NULL, *checked = NULL, *pdev = NULL, *sdev = NULL, *bdev = NULL,
           *sidx = NULL, *handle = NULL, *entries = NULL;
  Py_INCREF(op);
  Py_INCREF(ctx);
  Py_INCREF(entry);
  Py_INCREF(stream);
  Py_INCREF(plan);
  if (Py_TYPE(plan) != S.Plan) goto none;
  if (read_facts == NULL) {  /* the pins are read through torch's data_ptr(): not while a mode may answer */
    int m = mode_active();
    if (m < 0) goto error;
    if (m) goto none;
  }
  bound = SLOT(plan, S.pl_bound);
  checked = SLOT(plan, S.pl_checked);
  if (bound == NULL || checked == NULL || Py_TYPE(bound) != S.Bound) {
    bound = checked = NULL;
    goto none;
  }
  Py_INCREF(bound);
  Py_INCREF(checked);
  if (Py_TYPE(checked) != S.TypeCheck || (pdev = SLOT(checked, S.tc_device)) == NULL) goto none;
  Py_INCREF(pdev);
  if (stream_facts(ctx, stream, &sdev, &sidx, &handle) < 0) goto error;
  int same = PyObject_RichCompareBool(pdev, sdev, Py_EQ);
  if (same < 0) goto error;
  if (!same) goto none;
  bdev = SLOT(bound, S.b_device);
  if (bdev == NULL) goto none;
  Py_INCREF(bdev);
  same = PyObject_RichCompareBool(bdev, sidx, Py_EQ);
  if (same < 0) goto error;
  if (!same) goto none;
  /* Registry.reclaim's test: this entry alone is registered and already holds this plan's extents */
  entries = SLOT(S.registry, S.r_entries);  /* copy-on-write: read without the lock */
  if (entries == NULL) goto none;
  Py_INCREF(entries);
  if (!PyTuple_CheckExact(entries) || PyTuple_GET_SIZE(entries) != 1 || PyTuple_GET_ITEM(entries, 0) != entry)
    goto none;
  {
    PyObject *added = SLOT(entry, S.i_added);
    if (added == NULL || !PyDict_CheckExact(added)) goto none;
    PyObject *k = PyLong_FromVoidPtr(plan);
    if (k == NULL) goto error;
    int has = PyDict_Contains(added, k);
    Py_DECREF(k);
    if (has < 0) goto error;
    if (!has) goto none;
  }
  if (registry_lock() < 0) goto error;
  /* built -> running, under OWNERSHIP (from here on, never None) */
  if (lock(S.acquire) < 0) goto error;
  PyObject *state = SLOT(op, S.l_state);
  int built = state != NULL && PyUnicode_CheckExact(state) && PyUnicode_Compare(state, S.s_built) == 0;
  if (built) slot_set(op, S.l_state, S.s_running);
  unlock(S.release);
  if (!built) goto none;  /* the Python path raises the worded error */
  {
    int ok = 0;
    PyObject *acq = Py_NewRef(R.acq), *rel = Py_NewRef(R.rel);  /* held: another thread may find a new lock */
    if (lock(acq) == 0) {
      ok = SLOT(S.registry, S.r_entries) == entries;
      if (ok) {
        slot_set(entry, S.i_enqueued, Py_False);
        slot_set(entry, S.i_event, Py_None);
      }
      unlock(rel);
    }
    Py_DECREF(acq);
    Py_DECREF(rel);
    if (PyErr_Occurred()) { result = fail(op, ctx); goto out; }
    if (!ok) {  /* someone registered meanwhile: the rest the Python way (a claim that may wait) */
      result = PyObject_CallMethodOneArg(op, S.s_execute, ctx);
      goto out;
    }
  }
  slot_set(op, S.l_inflight, entry);
  {  /* the arguments' memory outlives this op until the terminal's work is over (ExecContext.keep) */
    PyObject *keep = SLOT(ctx, S.x_keep);
    if (keep == NULL || !PyList_Check(keep) || keep_runtime(keep, runtime) < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "ExecContext.keep is not a list");
      slot_set(entry, S.i_enqueued, Py_True);
      result = fail(op, ctx);
      goto out;
    }
  }
  {
    int held = pins_hold(plan, runtime);
    PyObject *r = NULL;
    if (held == 1) r = call_bound(bound, handle);
    slot_set(entry, S.i_enqueued, Py_True);  /* InFlight.set_enqueued */
    if (r == NULL) {
      if (held == 0) {  /* moved since checked: the Python path words the refusal */
        PyObject *rr = PyObject_CallMethodOneArg(op, S.s_fail, ctx);
        Py_XDECREF(rr);
        if (rr != NULL) PyErr_SetString(PyExc_SystemError, "LaunchOp._fail returned");
        notify();
        goto out;
      }
      notify();
      result = fail(op, ctx);
      goto out;
    }
    Py_DECREF(r);
    if (notify() < 0) { result = fail(op, ctx); goto out; }
  }
  if (give_back(argt, ref, ctx) < 0) { result = fail(op, ctx); goto out; }
  slot_set(op, S.l_state, S.s_done);
  if (notify() < 0) goto out;
  Py_INCREF(argt);
  result = argt;
  goto out;
none:
  result = Py_None;
  Py_INCREF(result);
  goto out;
error:
out:
  Py_DECREF(op);
  Py_DECREF(ctx);
  Py_DECREF(entry);
  Py_DECREF(stream);
  Py_DECREF(plan);
  Py_XDECREF(bound);
  Py_XDECREF(checked);
  Py_XDECREF(pdev);
  Py_XDECREF(sdev);
  Py_XDECREF(bdev);
  Py_XDECREF(sidx);
  Py_XDECREF(handle);
  Py_XDECREF(entries);
  return result;
}
"""
