/*
 * dk._dk — the CPython extension module over libdk (project issue #6).
 *
 * Implements the Python types Table, Snapshot, Schema and Scan over include/dk/snapshot.h and
 * (when the library has them) include/dk/scan.h + include/dk/expr.h. Arrow data leaves through
 * the Arrow PyCapsule Interface (arrow.apache.org/docs/format/CDataInterface/
 * PyCapsuleInterface.html): `__arrow_c_schema__` returns a capsule named "arrow_schema",
 * `__arrow_c_stream__` one named "arrow_array_stream"; each capsule's destructor releases the
 * struct if the consumer did not move it out. dk errors become instances of the exception
 * classes created here (re-exported by dk/__init__.py) carrying dk's message.
 *
 * The GIL is released around every call into dk that may do I/O or decoding (table open,
 * snapshot load, history, scan planning, and each get_schema/get_next of a scan stream: the
 * stream handed to consumers is a thin wrapper that drops the GIL when its caller holds it).
 * Calls on one Table are serialised by a per-table lock taken with the GIL released.
 *
 * All memory dk allocates for objects of this module goes through a counting allocator whose
 * live-block count `_dk._live_allocations()` exposes (a leak check that needs no sanitizer).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dk/arrow.h"
#include "dk/changes.h"
#include "dk/common.h"
#include "dk/dml.h"
#include "dk/expr.h"
#include "dk/history.h"
#include "dk/parquet.h"
#include "dk/maintenance.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "dk/sys/storage_s3.h"
#include "dk/txn.h"

PyMODINIT_FUNC PyInit__dk(void);

/* keyword lists: CPython takes char *[] while -Wwrite-strings makes literals const */
#define K(s) ((char *)(s))

/* ---- counting allocator ------------------------------------------------------------------ */

static atomic_llong g_live_blocks;

static void *count_malloc(void *ctx, size_t size) {
  (void)ctx;
  void *p = malloc(size ? size : 1);
  if (p) atomic_fetch_add(&g_live_blocks, 1);
  return p;
}

static void *count_realloc(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  void *p = realloc(ptr, size ? size : 1);
  if (p && !ptr) atomic_fetch_add(&g_live_blocks, 1);
  return p;
}

static void count_free(void *ctx, void *ptr) {
  (void)ctx;
  if (ptr) {
    atomic_fetch_sub(&g_live_blocks, 1);
    free(ptr);
  }
}

static const dk_allocator g_alloc = {NULL, count_malloc, count_realloc, count_free};

/* ---- exceptions -------------------------------------------------------------------------- */

static PyObject *DkError, *TableNotFound, *VersionNotFound, *ColumnNotFound, *UnsupportedFeature,
    *CorruptTable, *DkIOError, *InvalidArgument, *DkMemoryError, *Cancelled, *InternalError,
    *Conflict, *ConcurrentModification, *ConflictKinds[8];

/* Raises `type` (NULL: chosen from err->code) with dk's message; attributes .status (the
 * status name) and .code (its number). Returns NULL for `return raise_dk(...)`. */
static PyObject *raise_dk(PyObject *type, const dk_error *err) {
  dk_status code = err->code;
  if (!type) {
    switch (code) {
      case DK_NOMEM: type = DkMemoryError; break;
      case DK_INVALID: type = InvalidArgument; break;
      case DK_IO: type = DkIOError; break;
      case DK_NOT_FOUND: type = TableNotFound; break;
      case DK_CORRUPT: type = CorruptTable; break;
      case DK_UNSUPPORTED: type = UnsupportedFeature; break;
      case DK_CONFLICT: {
        /* the subclass named after delta-spark's exception: the message's first word */
        type = ConcurrentModification;
        for (int k = 1; k < 8; k++) {
          const char *nm = dk_conflict_kind_name((dk_conflict_kind)k);
          size_t n = strlen(nm);
          if (ConflictKinds[k] && !strncmp(err->message, nm, n) && err->message[n] == ':')
            type = ConflictKinds[k];
        }
        break;
      }
      case DK_CANCELLED: type = Cancelled; break;
      case DK_OUT_OF_RANGE: type = VersionNotFound; break;
      default: type = InternalError; break;
    }
  }
  const char *msg = err->message[0] ? err->message : dk_status_str(code);
  PyObject *inst = PyObject_CallFunction(type, "s", msg);
  if (!inst) return NULL;
  PyObject *status = PyUnicode_FromString(dk_status_str(code));
  PyObject *num = PyLong_FromLong((long)code);
  if (!status || !num || PyObject_SetAttrString(inst, "status", status) < 0 ||
      PyObject_SetAttrString(inst, "code", num) < 0) {
    Py_XDECREF(status);
    Py_XDECREF(num);
    Py_DECREF(inst);
    return NULL;
  }
  Py_DECREF(status);
  Py_DECREF(num);
  PyErr_SetObject(type, inst);
  Py_DECREF(inst);
  return NULL;
}

static PyObject *raise_msg(PyObject *type, dk_status code, const char *msg) {
  dk_error err;
  dk_error_init(&err);
  err.code = code;
  snprintf(err.message, sizeof err.message, "%s", msg);
  return raise_dk(type, &err);
}

/* ---- small helpers ----------------------------------------------------------------------- */

static PyObject *str_or_none(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

static PyObject *g_json_loads; /* json.loads, imported at module init */

static PyObject *json_or_none(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyObject_CallFunction(g_json_loads, "s", s);
}

/* Sets d[key] = v and drops the reference to v; -1 on error (also when v is NULL). */
static int dict_steal(PyObject *d, const char *key, PyObject *v) {
  if (!v) return -1;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc;
}

static PyObject *str_list(const char *const *items, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *s = str_or_none(items[i]);
    if (!s) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, s);
  }
  return l;
}

/* ---- Table ------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  dk_table *t;
  PyObject *path;
  PyThread_type_lock lock;
  dk_snapshot *latest; /* cached latest snapshot, refreshed incrementally (under lock) */
  dk_storage *sto; /* the S3 backend of an s3:// table (owned; freed after the table) */
} TableObject;

typedef struct {
  PyObject_HEAD
  TableObject *table;
  dk_snapshot *s;
} SnapshotObject;

typedef struct {
  PyObject_HEAD
  SnapshotObject *snap;
} SchemaObject;

static PyTypeObject TableType, SnapshotType, SchemaType;

#define LOCKED_CALL(tbl, stmt)                                    \
  do {                                                            \
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock((tbl)->lock, WAIT_LOCK); \
    stmt;                                                         \
    PyThread_release_lock((tbl)->lock);                           \
    Py_END_ALLOW_THREADS                                          \
  } while (0)

/* s3:// and s3a:// tables: an S3 backend for the URI's bucket, configured by storage_options
 * (delta-rs's names: aws_access_key_id, aws_endpoint_url, aws_allow_http, ...; see
 * dk_s3_options_set) over the AWS_* environment and profiles; *out = NULL for a local path
 * (the table's built-in backend). Options on a local path are UnsupportedFeature. Returns 0,
 * or -1 with an exception set. */
static int storage_for(dk_storage **out, const char *uri, PyObject *storage) {
  *out = NULL;
  Py_ssize_t nopt = storage != Py_None ? PyDict_Size(storage) : 0;
  if (!dk_storage_s3_is_uri(uri)) {
    if (nopt == 0) return 0;
    raise_msg(UnsupportedFeature, DK_UNSUPPORTED,
              "storage_options apply to object-store tables (s3://bucket/prefix); this table "
              "is a local path");
    return -1;
  }
  dk_error err;
  dk_error_init(&err);
  /* the option strings stay alive (in keep) until the backend has copied them */
  PyObject *keep = PyList_New(0);
  const char **kv = PyMem_Calloc((size_t)nopt * 2 + 1, sizeof *kv);
  if (!keep || !kv) {
    Py_XDECREF(keep);
    PyMem_Free(kv);
    PyErr_NoMemory();
    return -1;
  }
  PyObject *key, *val;
  Py_ssize_t pos = 0, n = 0;
  int rc = 0;
  while (rc == 0 && nopt && PyDict_Next(storage, &pos, &key, &val)) {
    PyObject *ks = PyObject_Str(key), *vs = PyObject_Str(val);
    const char *k = ks ? PyUnicode_AsUTF8(ks) : NULL, *v = vs ? PyUnicode_AsUTF8(vs) : NULL;
    if (!k || !v || PyList_Append(keep, ks) || PyList_Append(keep, vs)) rc = -1;
    else kv[n] = k, kv[nopt + n] = v, n++;
    Py_XDECREF(ks);
    Py_XDECREF(vs);
  }
  if (rc == 0) {
    dk_status st;
    Py_BEGIN_ALLOW_THREADS st = dk_storage_s3_for_uri(out, uri, (size_t)n, kv, kv + nopt,
                                                     &g_alloc, &err);
    Py_END_ALLOW_THREADS
    if (st != DK_OK) {
      raise_dk(NULL, &err);
      rc = -1;
    }
  }
  PyMem_Free(kv);
  Py_DECREF(keep);
  return rc;
}

static int table_init(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("path"), K("storage_options"), K("confine_paths"), NULL};
  PyObject *path_obj = NULL, *storage = Py_None;
  int confine = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:Table", kwlist, &path_obj, &storage, &confine))
    return -1;
  if (self->t) {
    PyErr_SetString(PyExc_RuntimeError, "dk.Table is already initialised");
    return -1;
  }
  if (storage != Py_None && !PyDict_Check(storage)) {
    PyErr_SetString(PyExc_TypeError, "storage_options must be a dict or None");
    return -1;
  }
  PyObject *fs = NULL;
  if (!PyUnicode_FSConverter(path_obj, &fs)) return -1;
  self->lock = PyThread_allocate_lock();
  if (!self->lock) {
    Py_DECREF(fs);
    PyErr_NoMemory();
    return -1;
  }
  const char *path = PyBytes_AS_STRING(fs);
  dk_table_options opts;
  memset(&opts, 0, sizeof opts);
  opts.version = DK_TABLE_OPTIONS_VERSION;
  opts.alloc = &g_alloc;
  opts.confine_paths = confine;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  dk_table *t = NULL;
  if (storage_for(&self->sto, path, storage) != 0) {
    Py_DECREF(fs);
    return -1;
  }
  opts.storage = self->sto;
  Py_BEGIN_ALLOW_THREADS st = dk_table_open(&t, path, &opts, &err);
  Py_END_ALLOW_THREADS
  if (st != DK_OK) {
    Py_DECREF(fs);
    raise_dk(st == DK_NOT_FOUND ? TableNotFound : NULL, &err);
    return -1;
  }
  self->t = t;
  self->path = PyUnicode_DecodeFSDefault(dk_table_root(t));
  Py_DECREF(fs);
  return self->path ? 0 : -1;
}

static void table_dealloc(TableObject *self) {
  dk_snapshot_free(self->latest);
  dk_table_free(self->t);
  if (self->sto) self->sto->free(self->sto); /* every user of the table is gone: the Python
                                                 objects over it each hold this Table */
  if (self->lock) PyThread_free_lock(self->lock);
  Py_XDECREF(self->path);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *table_get_path(TableObject *self, void *closure) {
  (void)closure;
  if (!self->path) Py_RETURN_NONE;
  Py_INCREF(self->path);
  return self->path;
}

static int check_table(TableObject *self) {
  if (!self->t) {
    PyErr_SetString(PyExc_RuntimeError, "dk.Table was not initialised");
    return -1;
  }
  return 0;
}

/* timestamp argument: int (ms since the epoch, UTC), datetime (naive = UTC) or ISO-8601 str;
 * non-int values are converted exactly by dk._util.timestamp_ms. */
static int timestamp_to_ms(PyObject *ts, int64_t *out) {
  PyObject *ms;
  if (PyLong_Check(ts)) {
    Py_INCREF(ts);
    ms = ts;
  } else {
    PyObject *util = PyImport_ImportModule("dk._util");
    if (!util) return -1;
    ms = PyObject_CallMethod(util, "timestamp_ms", "O", ts);
    Py_DECREF(util);
    if (!ms) return -1;
  }
  long long v = PyLong_AsLongLong(ms);
  Py_DECREF(ms);
  if (v == -1 && PyErr_Occurred()) return -1;
  *out = (int64_t)v;
  return 0;
}

static PyObject *snapshot_wrap(TableObject *table, dk_snapshot *s) {
  SnapshotObject *so = PyObject_New(SnapshotObject, &SnapshotType);
  if (!so) {
    dk_snapshot_free(s);
    return NULL;
  }
  Py_INCREF(table);
  so->table = table;
  so->s = s;
  return (PyObject *)so;
}

/* The latest snapshot: the cached one brought up to date by listing only the commits after
 * it (dk_snapshot_update; a new checkpoint, metadata/protocol changes and a rewritten log are
 * handled there), or a full load the first time. A caller sees every commit that finished
 * before the call. Called with the table lock held and the GIL released. */
static dk_status latest_snapshot(TableObject *self, dk_snapshot **out, dk_error *err) {
  dk_snapshot *s = NULL;
  dk_status st = self->latest ? dk_snapshot_update(&s, self->latest, err)
                              : dk_snapshot_open(&s, self->t, NULL, err);
  if (st != DK_OK) return st;
  dk_snapshot_free(self->latest);
  self->latest = dk_snapshot_ref(s);
  *out = s;
  return DK_OK;
}

static PyObject *table_snapshot(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("version"), K("timestamp"), NULL};
  PyObject *version = Py_None, *timestamp = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:snapshot", kwlist, &version, &timestamp))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_snapshot_options opts;
  memset(&opts, 0, sizeof opts);
  opts.version = DK_SNAPSHOT_OPTIONS_VERSION;
  opts.at_version = -1;
  if (version != Py_None && timestamp != Py_None) {
    PyErr_SetString(PyExc_ValueError, "give version or timestamp, not both");
    return NULL;
  }
  if (version != Py_None) {
    if (!PyLong_Check(version)) {
      PyErr_SetString(PyExc_TypeError, "version must be an int");
      return NULL;
    }
    long long v = PyLong_AsLongLong(version);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v < 0) {
      PyErr_SetString(PyExc_ValueError, "version must be >= 0");
      return NULL;
    }
    opts.at_version = (int64_t)v;
  } else if (timestamp != Py_None) {
    if (timestamp_to_ms(timestamp, &opts.timestamp_ms) < 0) return NULL;
    opts.by_timestamp = 1;
  }
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  dk_snapshot *s = NULL;
  if (opts.at_version < 0 && !opts.by_timestamp)
    LOCKED_CALL(self, st = latest_snapshot(self, &s, &err));
  else
    LOCKED_CALL(self, st = dk_snapshot_open(&s, self->t, &opts, &err));
  if (st != DK_OK) {
    PyObject *type = NULL;
    if (st == DK_NOT_FOUND)
      type = (opts.at_version >= 0 || opts.by_timestamp) &&
                     !strstr(err.message, "not a Delta table")
                 ? VersionNotFound
                 : TableNotFound;
    return raise_dk(type, &err);
  }
  return snapshot_wrap(self, s);
}

static PyObject *history_list(TableObject *table, int64_t max_version, int64_t limit) {
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  dk_history *h = NULL;
  /* a snapshot's history is the table's, cut at the snapshot's version */
  int64_t want = max_version >= 0 ? 0 : limit;
  LOCKED_CALL(table, st = dk_history_open(&h, table->t, want, &err));
  if (st != DK_OK) return raise_dk(NULL, &err);
  PyObject *list = PyList_New(0);
  if (!list) goto fail;
  for (size_t i = 0, n = dk_history_count(h); i < n; i++) {
    int64_t version, ts;
    const char *json;
    dk_history_entry(&version, &ts, &json, h, i);
    if (max_version >= 0 && version > max_version) continue;
    if (limit > 0 && PyList_GET_SIZE(list) >= limit) break;
    PyObject *d = json_or_none(json);
    if (!d) goto fail;
    if (!PyDict_Check(d)) {
      Py_DECREF(d);
      d = PyDict_New();
      if (!d) goto fail;
    }
    PyObject *tsobj = PyLong_FromLongLong(ts);
    if (!tsobj || dict_steal(d, "version", PyLong_FromLongLong(version)) < 0 ||
        PyDict_SetItemString(d, "commit_timestamp", tsobj) < 0 ||
        (!PyDict_GetItemString(d, "timestamp") && PyDict_SetItemString(d, "timestamp", tsobj) < 0) ||
        PyList_Append(list, d) < 0) {
      Py_XDECREF(tsobj);
      Py_DECREF(d);
      goto fail;
    }
    Py_DECREF(tsobj);
    Py_DECREF(d);
  }
  dk_history_free(h);
  return list;
fail:
  dk_history_free(h);
  Py_XDECREF(list);
  return NULL;
}

static int parse_limit(PyObject *obj, int64_t *out) {
  *out = 0;
  if (obj == Py_None) return 0;
  long long v = PyLong_AsLongLong(obj);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < 0) {
    PyErr_SetString(PyExc_ValueError, "limit must be >= 0");
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

static PyObject *table_history(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("limit"), NULL};
  PyObject *limit_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:history", kwlist, &limit_obj)) return NULL;
  int64_t limit;
  if (check_table(self) < 0 || parse_limit(limit_obj, &limit) < 0) return NULL;
  return history_list(self, -1, limit);
}

static PyObject *table_repr(TableObject *self) {
  return PyUnicode_FromFormat("dk.Table(%R)", self->path ? self->path : Py_None);
}

static PyObject *snapshot_scan(SnapshotObject *self, PyObject *args, PyObject *kw);

static PyObject *table_scan(TableObject *self, PyObject *args, PyObject *kw) {
  PyObject *noargs = PyTuple_New(0);
  if (!noargs) return NULL;
  PyObject *snap = table_snapshot(self, noargs, NULL);
  Py_DECREF(noargs);
  if (!snap) return NULL;
  PyObject *res = snapshot_scan((SnapshotObject *)snap, args, kw);
  Py_DECREF(snap);
  return res;
}

/* ---- Transaction ------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  TableObject *table;
  dk_txn *x;
} TxnObject;

static PyTypeObject TxnType;

static int txn_live(TxnObject *self) {
  if (!self->x) {
    PyErr_SetString(PyExc_RuntimeError, "the transaction was committed or aborted");
    return -1;
  }
  return 0;
}

/* A Python sequence of str into a NULL-free C array borrowed from `keep` (a list of bytes
 * objects kept alive by the caller). */
static const char **str_array_of(PyObject *seq, Py_ssize_t *n, PyObject *keep) {
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of str");
  if (!fast) return NULL;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  const char **out = PyMem_Calloc((size_t)(len ? len : 1), sizeof *out);
  if (!out) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *it = PySequence_Fast_GET_ITEM(fast, i);
    if (it == Py_None) continue;
    PyObject *b = PyUnicode_AsUTF8String(it);
    if (!b || PyList_Append(keep, b) < 0) {
      Py_XDECREF(b);
      PyMem_Free(out);
      Py_DECREF(fast);
      return NULL;
    }
    out[i] = PyBytes_AS_STRING(b);
    Py_DECREF(b);
  }
  Py_DECREF(fast);
  *n = len;
  return out;
}

/* dict[str, str|None] -> 2n key/value array (values NULL for None). */
static const char **kv_array_of(PyObject *d, Py_ssize_t *n, PyObject *keep) {
  *n = 0;
  if (!d || d == Py_None) return PyMem_Calloc(1, sizeof(char *));
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "expected a dict of str");
    return NULL;
  }
  Py_ssize_t len = PyDict_Size(d), pos = 0, i = 0;
  const char **out = PyMem_Calloc((size_t)(2 * len + 1), sizeof *out);
  if (!out) return (const char **)PyErr_NoMemory();
  PyObject *k, *v;
  while (PyDict_Next(d, &pos, &k, &v)) {
    PyObject *kb = PyUnicode_AsUTF8String(k);
    if (!kb || PyList_Append(keep, kb) < 0) {
      Py_XDECREF(kb);
      PyMem_Free(out);
      return NULL;
    }
    out[2 * i] = PyBytes_AS_STRING(kb);
    Py_DECREF(kb);
    if (v != Py_None) {
      PyObject *vs = PyUnicode_Check(v) ? (Py_INCREF(v), v) : PyObject_Str(v);
      PyObject *vb = vs ? PyUnicode_AsUTF8String(vs) : NULL;
      Py_XDECREF(vs);
      if (!vb || PyList_Append(keep, vb) < 0) {
        Py_XDECREF(vb);
        PyMem_Free(out);
        return NULL;
      }
      out[2 * i + 1] = PyBytes_AS_STRING(vb);
      Py_DECREF(vb);
    }
    i++;
  }
  *n = len;
  return out;
}

static PyObject *table_transaction(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("version"), K("create"), K("operation"),
                           K("operation_parameters"), K("max_attempts"), K("isolation"),
                           K("engine_info"), K("user_metadata"), NULL};
  PyObject *version = Py_None, *params = Py_None;
  int create = 0, max_attempts = 0;
  const char *operation = NULL, *isolation = NULL, *engine = NULL, *umeta = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OpzOizzz:transaction", kwlist, &version, &create,
                                   &operation, &params, &max_attempts, &isolation, &engine,
                                   &umeta))
    return NULL;
  if (check_table(self) < 0) return NULL;
  PyObject *params_json = NULL;
  if (params != Py_None) {
    PyObject *json = PyImport_ImportModule("json");
    if (!json) return NULL;
    params_json = PyObject_CallMethod(json, "dumps", "O", params);
    Py_DECREF(json);
    if (!params_json) return NULL;
  }
  dk_txn_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_TXN_OPTIONS_VERSION;
  o.operation = operation;
  o.operation_parameters = params_json ? PyUnicode_AsUTF8(params_json) : NULL;
  o.max_attempts = max_attempts;
  o.engine_info = engine;
  o.user_metadata = umeta;
  if (isolation) {
    if (!strcmp(isolation, "Serializable")) o.isolation = DK_ISOLATION_SERIALIZABLE;
    else if (!strcmp(isolation, "WriteSerializable")) o.isolation = DK_ISOLATION_WRITE_SERIALIZABLE;
    else if (!strcmp(isolation, "SnapshotIsolation")) o.isolation = DK_ISOLATION_SNAPSHOT;
    else {
      Py_XDECREF(params_json);
      PyErr_Format(PyExc_ValueError, "unknown isolation level '%s'", isolation);
      return NULL;
    }
  }
  int64_t at = -1;
  if (version != Py_None) {
    at = PyLong_AsLongLong(version);
    if (at == -1 && PyErr_Occurred()) {
      Py_XDECREF(params_json);
      return NULL;
    }
  }
  dk_error err;
  dk_error_init(&err);
  dk_status st = DK_OK;
  dk_txn *x = NULL;
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION, .at_version = at};
  LOCKED_CALL(self, {
    if (create) st = dk_txn_begin_create(&x, self->t, &o, &err);
    else {
      dk_snapshot *s = NULL;
      st = dk_snapshot_open(&s, self->t, &so, &err);
      if (!st) st = dk_txn_begin(&x, s, &o, &err);
      dk_snapshot_free(s);
    }
  });
  Py_XDECREF(params_json);
  if (st) return raise_dk(NULL, &err);
  TxnObject *to = PyObject_New(TxnObject, &TxnType);
  if (!to) {
    dk_txn_abort(x);
    return NULL;
  }
  Py_INCREF(self);
  to->table = self;
  to->x = x;
  return (PyObject *)to;
}

static void txn_dealloc(TxnObject *self) {
  dk_txn_abort(self->x);
  Py_XDECREF(self->table);
  PyObject_Free(self);
}

static PyObject *index_list(const int64_t *idx, int64_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (int64_t i = 0; i < n; i++) {
    PyObject *v = PyLong_FromLongLong((long long)idx[i]);
    if (!v) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, v);
  }
  return l;
}

static PyObject *txn_read_files(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("filter"), NULL};
  const char *filter = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:read_files", kwlist, &filter)) return NULL;
  if (txn_live(self) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  dk_expr *e = NULL;
  dk_expr_parse_options po = {DK_EXPR_PARSE_OPTIONS_VERSION, &g_alloc};
  if (filter && dk_expr_parse_v2(&e, filter, strlen(filter), &po, &err) != DK_OK)
    return raise_dk(InvalidArgument, &err);
  int64_t *idx = NULL, n = 0;
  dk_status st;
  LOCKED_CALL(self->table, st = dk_txn_read_files(self->x, e, &idx, &n, &err));
  dk_expr_free(e);
  if (st) return raise_dk(NULL, &err);
  PyObject *l = index_list(idx, n);
  dk_free(idx);
  return l;
}

static PyObject *txn_read_partitions(TxnObject *self, PyObject *args) {
  PyObject *rows;
  if (!PyArg_ParseTuple(args, "O:read_partitions", &rows)) return NULL;
  if (txn_live(self) < 0) return NULL;
  PyObject *keep = PyList_New(0), *fast = PySequence_Fast(rows, "rows must be a sequence");
  if (!keep || !fast) {
    Py_XDECREF(keep);
    Py_XDECREF(fast);
    return NULL;
  }
  Py_ssize_t nr = PySequence_Fast_GET_SIZE(fast), width = -1;
  const char **vals = NULL;
  PyObject *res = NULL;
  for (Py_ssize_t r = 0; r < nr; r++) {
    Py_ssize_t n = 0;
    const char **row = str_array_of(PySequence_Fast_GET_ITEM(fast, r), &n, keep);
    if (!row) goto done;
    if (width < 0) {
      width = n;
      vals = PyMem_Calloc((size_t)(nr * (width ? width : 1) + 1), sizeof *vals);
      if (!vals) {
        PyMem_Free(row);
        PyErr_NoMemory();
        goto done;
      }
    }
    if (n != width) {
      PyMem_Free(row);
      PyErr_SetString(PyExc_ValueError, "every row needs one value per partition column");
      goto done;
    }
    memcpy(vals + r * width, row, (size_t)n * sizeof *row);
    PyMem_Free(row);
  }
  dk_error err;
  dk_error_init(&err);
  int64_t *idx = NULL, n = 0;
  dk_status st;
  LOCKED_CALL(self->table,
              st = dk_txn_read_partitions(self->x, vals, (int64_t)nr, &idx, &n, &err));
  if (st) {
    raise_dk(NULL, &err);
    goto done;
  }
  res = index_list(idx, n);
  dk_free(idx);
done:
  PyMem_Free(vals);
  Py_DECREF(fast);
  Py_DECREF(keep);
  return res;
}

static PyObject *txn_read_whole_table(TxnObject *self, PyObject *noargs) {
  if (txn_live(self) < 0) return NULL;
  dk_txn_read_whole_table(self->x);
  Py_RETURN_NONE;
}

static PyObject *txn_app_version(TxnObject *self, PyObject *args) {
  const char *app;
  if (!PyArg_ParseTuple(args, "s:app_version", &app)) return NULL;
  if (txn_live(self) < 0) return NULL;
  return PyLong_FromLongLong((long long)dk_txn_app_version(self->x, app));
}

static PyObject *txn_add_file(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("path"), K("partition_values"), K("size"), K("modification_time"),
                           K("data_change"), K("stats"), K("tags"), NULL};
  const char *path, *stats = NULL;
  PyObject *pv = Py_None, *tags = Py_None;
  long long size = 0, mtime = 0;
  int dc = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OLLpzO:add_file", kwlist, &path, &pv, &size,
                                   &mtime, &dc, &stats, &tags))
    return NULL;
  if (txn_live(self) < 0) return NULL;
  PyObject *keep = PyList_New(0);
  if (!keep) return NULL;
  Py_ssize_t n = 0;
  const char **kv = kv_array_of(pv, &n, keep);
  PyObject *tags_json = NULL;
  if (kv && tags != Py_None) {
    PyObject *json = PyImport_ImportModule("json");
    tags_json = json ? PyObject_CallMethod(json, "dumps", "O", tags) : NULL;
    Py_XDECREF(json);
  }
  PyObject *res = NULL;
  if (kv && (tags == Py_None || tags_json)) {
    dk_add_file f;
    memset(&f, 0, sizeof f);
    f.version = DK_ADD_FILE_VERSION;
    f.path = path;
    f.n_partition_values = (size_t)n;
    f.partition_kv = kv;
    f.size = size;
    f.modification_time = mtime;
    f.data_change = dc;
    f.stats = stats;
    f.tags_json = tags_json ? PyUnicode_AsUTF8(tags_json) : NULL;
    dk_error err;
    dk_error_init(&err);
    if (dk_txn_add_file(self->x, &f, &err) != DK_OK) raise_dk(NULL, &err);
    else res = (Py_INCREF(Py_None), Py_None);
  }
  PyMem_Free(kv);
  Py_XDECREF(tags_json);
  Py_DECREF(keep);
  return res;
}

static PyObject *txn_remove_file(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("index"), K("data_change"), NULL};
  long long i;
  int dc = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "L|p:remove_file", kwlist, &i, &dc)) return NULL;
  if (txn_live(self) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_txn_remove_file(self->x, i, dc, &err) != DK_OK) return raise_dk(NULL, &err);
  Py_RETURN_NONE;
}

static PyObject *txn_set_metadata(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("schema_string"), K("partition_columns"), K("configuration"),
                           K("name"), K("description"), K("id"), NULL};
  const char *schema, *name = NULL, *desc = NULL, *id = NULL;
  PyObject *parts = Py_None, *conf = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOzzz:set_metadata", kwlist, &schema, &parts,
                                   &conf, &name, &desc, &id))
    return NULL;
  if (txn_live(self) < 0) return NULL;
  PyObject *keep = PyList_New(0), *empty = PyTuple_New(0);
  if (!keep || !empty) {
    Py_XDECREF(keep);
    Py_XDECREF(empty);
    return NULL;
  }
  Py_ssize_t np = 0, nc = 0;
  const char **pc = str_array_of(parts == Py_None ? empty : parts, &np, keep);
  const char **kv = pc ? kv_array_of(conf, &nc, keep) : NULL;
  PyObject *res = NULL;
  if (pc && kv) {
    dk_metadata_spec m;
    memset(&m, 0, sizeof m);
    m.version = DK_METADATA_SPEC_VERSION;
    m.id = id;
    m.name = name;
    m.description = desc;
    m.schema_string = schema;
    m.n_partition_columns = (size_t)np;
    m.partition_columns = pc;
    m.n_configuration = (size_t)nc;
    m.configuration = kv;
    m.created_time = -1;
    dk_error err;
    dk_error_init(&err);
    if (dk_txn_set_metadata(self->x, &m, &err) != DK_OK) raise_dk(NULL, &err);
    else res = (Py_INCREF(Py_None), Py_None);
  }
  PyMem_Free(pc);
  PyMem_Free(kv);
  Py_DECREF(keep);
  Py_DECREF(empty);
  return res;
}

static PyObject *txn_set_protocol(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("min_reader_version"), K("min_writer_version"),
                           K("reader_features"), K("writer_features"), NULL};
  int r, w;
  PyObject *rf = Py_None, *wf = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ii|OO:set_protocol", kwlist, &r, &w, &rf, &wf))
    return NULL;
  if (txn_live(self) < 0) return NULL;
  PyObject *keep = PyList_New(0), *empty = PyTuple_New(0);
  if (!keep || !empty) {
    Py_XDECREF(keep);
    Py_XDECREF(empty);
    return NULL;
  }
  Py_ssize_t nr = 0, nw = 0;
  const char **ra = str_array_of(rf == Py_None ? empty : rf, &nr, keep);
  const char **wa = ra ? str_array_of(wf == Py_None ? empty : wf, &nw, keep) : NULL;
  PyObject *res = NULL;
  if (ra && wa) {
    dk_protocol p;
    memset(&p, 0, sizeof p);
    p.min_reader_version = r;
    p.min_writer_version = w;
    p.n_reader_features = (size_t)nr;
    p.reader_features = ra;
    p.has_reader_features = r >= 3;
    p.n_writer_features = (size_t)nw;
    p.writer_features = wa;
    p.has_writer_features = w >= 7;
    dk_error err;
    dk_error_init(&err);
    if (dk_txn_set_protocol(self->x, &p, &err) != DK_OK) raise_dk(NULL, &err);
    else res = (Py_INCREF(Py_None), Py_None);
  }
  PyMem_Free(ra);
  PyMem_Free(wa);
  Py_DECREF(keep);
  Py_DECREF(empty);
  return res;
}

static PyObject *txn_set_app_version(TxnObject *self, PyObject *args) {
  const char *app;
  long long v;
  if (!PyArg_ParseTuple(args, "sL:set_app_version", &app, &v)) return NULL;
  if (txn_live(self) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_txn_set_app_version(self->x, app, v, &err) != DK_OK) return raise_dk(NULL, &err);
  Py_RETURN_NONE;
}

static PyObject *txn_set_domain(TxnObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("domain"), K("configuration"), K("removed"), NULL};
  const char *d, *c = "";
  int removed = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|sp:set_domain", kwlist, &d, &c, &removed))
    return NULL;
  if (txn_live(self) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_txn_set_domain(self->x, d, c, removed, &err) != DK_OK) return raise_dk(NULL, &err);
  Py_RETURN_NONE;
}

static PyObject *txn_set_metric(TxnObject *self, PyObject *args) {
  const char *name;
  long long v;
  if (!PyArg_ParseTuple(args, "sL:set_metric", &name, &v)) return NULL;
  if (txn_live(self) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_txn_set_metric(self->x, name, v, &err) != DK_OK) return raise_dk(NULL, &err);
  Py_RETURN_NONE;
}

static PyObject *txn_commit(TxnObject *self, PyObject *noargs) {
  if (txn_live(self) < 0) return NULL;
  dk_txn *x = self->x;
  self->x = NULL;
  dk_commit_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_COMMIT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self->table, st = dk_txn_commit(x, &r, &err));
  if (st) {
    raise_dk(NULL, &err);
    /* the conflict's detail on the exception */
    if (st == DK_CONFLICT) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyErr_NormalizeException(&type, &value, &tb);
      if (value) {
        PyObject *v = PyLong_FromLongLong((long long)r.conflict_version);
        PyObject *a = PyLong_FromLong(r.attempts);
        if (v) PyObject_SetAttrString(value, "winning_version", v);
        if (a) PyObject_SetAttrString(value, "attempts", a);
        Py_XDECREF(v);
        Py_XDECREF(a);
      }
      PyErr_Restore(type, value, tb);
    }
    return NULL;
  }
  return Py_BuildValue("{s:L,s:i,s:L,s:O,s:s}", "version", (long long)r.committed_version,
                       "attempts", r.attempts, "timestamp", (long long)r.commit_timestamp,
                       "self_detected", r.self_detected ? Py_True : Py_False, "txn_id",
                       r.txn_id);
}

static PyObject *txn_abort(TxnObject *self, PyObject *noargs) {
  dk_txn_abort(self->x);
  self->x = NULL;
  Py_RETURN_NONE;
}

static PyObject *txn_read_version(TxnObject *self, void *closure) {
  (void)closure;
  if (txn_live(self) < 0) return NULL;
  return PyLong_FromLongLong((long long)dk_txn_read_version(self->x));
}

static PyMethodDef txn_methods[] = {
    {"read_files", (PyCFunction)(void (*)(void))txn_read_files, METH_VARARGS | METH_KEYWORDS,
     "read_files(filter=None) -> list[int]: records a read of the files matching filter and "
     "returns their indexes in the read snapshot's file list (Snapshot.files() order)."},
    {"read_partitions", (PyCFunction)txn_read_partitions, METH_VARARGS,
     "read_partitions(rows) -> list[int]: records a read of whole partitions (rows of "
     "partition values; dynamic partition overwrite)."},
    {"read_whole_table", (PyCFunction)txn_read_whole_table, METH_NOARGS,
     "read_whole_table(): any concurrent change conflicts."},
    {"app_version", (PyCFunction)txn_app_version, METH_VARARGS,
     "app_version(app_id) -> int: the app's txn version (-1 = none), recorded as read."},
    {"add_file", (PyCFunction)(void (*)(void))txn_add_file, METH_VARARGS | METH_KEYWORDS,
     "add_file(path, partition_values=None, size=0, modification_time=0, data_change=True, "
     "stats=None, tags=None): stages an add of a file already written."},
    {"remove_file", (PyCFunction)(void (*)(void))txn_remove_file, METH_VARARGS | METH_KEYWORDS,
     "remove_file(index, data_change=True): stages a remove of the read snapshot's file."},
    {"set_metadata", (PyCFunction)(void (*)(void))txn_set_metadata, METH_VARARGS | METH_KEYWORDS,
     "set_metadata(schema_string, partition_columns=(), configuration=None, name=None, "
     "description=None, id=None)"},
    {"set_protocol", (PyCFunction)(void (*)(void))txn_set_protocol, METH_VARARGS | METH_KEYWORDS,
     "set_protocol(min_reader_version, min_writer_version, reader_features=None, "
     "writer_features=None)"},
    {"set_app_version", (PyCFunction)txn_set_app_version, METH_VARARGS,
     "set_app_version(app_id, version): idempotent-write marker (a txn action)."},
    {"set_domain", (PyCFunction)(void (*)(void))txn_set_domain, METH_VARARGS | METH_KEYWORDS,
     "set_domain(domain, configuration='', removed=False)"},
    {"set_metric", (PyCFunction)txn_set_metric, METH_VARARGS,
     "set_metric(name, value): an operationMetrics entry."},
    {"commit", (PyCFunction)txn_commit, METH_NOARGS,
     "commit() -> dict(version, attempts, timestamp, self_detected, txn_id). Conflicts raise a "
     "dk.ConcurrentModification subclass named after delta-spark's exception, with "
     ".winning_version."},
    {"abort", (PyCFunction)txn_abort, METH_NOARGS, "abort(): discards the transaction."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef txn_getset[] = {
    {"read_version", (getter)txn_read_version, NULL, "the snapshot version read (-1 = new)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TxnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Transaction",
    .tp_basicsize = sizeof(TxnObject),
    .tp_dealloc = (destructor)txn_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A transaction (Table.transaction(...)): record reads, stage actions, commit().",
    .tp_methods = txn_methods,
    .tp_getset = txn_getset,
};

/* ---- table operations (create, vacuum, restore) ------------------------------------------ */

static PyObject *mod_schema_from_ddl(PyObject *m, PyObject *args) {
  const char *ddl;
  if (!PyArg_ParseTuple(args, "s:schema_from_ddl", &ddl)) return NULL;
  dk_error err;
  dk_error_init(&err);
  char *out = NULL;
  if (dk_schema_from_ddl(&out, ddl, &err) != DK_OK) return raise_dk(InvalidArgument, &err);
  PyObject *r = PyUnicode_FromString(out);
  dk_free(out);
  return r;
}

static PyObject *table_create_impl(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("schema_string"), K("partition_by"), K("properties"), K("mode"),
                           K("name"), K("description"), NULL};
  const char *schema, *mode = "error", *name = NULL, *desc = NULL;
  PyObject *parts = Py_None, *props = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOzzz:_create", kwlist, &schema, &parts, &props,
                                   &mode, &name, &desc))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_create_mode cm;
  if (!strcmp(mode, "error")) cm = DK_CREATE_ERROR_IF_EXISTS;
  else if (!strcmp(mode, "ignore")) cm = DK_CREATE_IGNORE;
  else if (!strcmp(mode, "overwrite") || !strcmp(mode, "replace")) cm = DK_CREATE_OR_REPLACE;
  else {
    PyErr_Format(PyExc_ValueError, "mode must be 'error', 'ignore' or 'overwrite', not '%s'", mode);
    return NULL;
  }
  PyObject *keep = PyList_New(0), *empty = PyTuple_New(0);
  if (!keep || !empty) {
    Py_XDECREF(keep);
    Py_XDECREF(empty);
    return NULL;
  }
  Py_ssize_t np = 0, nc = 0;
  const char **pc = str_array_of(parts == Py_None ? empty : parts, &np, keep);
  const char **kv = pc ? kv_array_of(props, &nc, keep) : NULL;
  PyObject *res = NULL;
  if (pc && kv) {
    dk_create_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_CREATE_OPTIONS_VERSION;
    o.schema_string = schema;
    o.n_partition_columns = (size_t)np;
    o.partition_columns = pc;
    o.n_properties = (size_t)nc;
    o.properties = kv;
    o.name = name;
    o.description = desc;
    o.mode = cm;
    dk_commit_result r;
    memset(&r, 0, sizeof r);
    r.version = DK_COMMIT_RESULT_VERSION;
    dk_error err;
    dk_error_init(&err);
    dk_status st;
    LOCKED_CALL(self, st = dk_table_create(&r, self->t, &o, &err));
    if (st) raise_dk(NULL, &err);
    else res = PyLong_FromLongLong((long long)r.committed_version);
  }
  PyMem_Free(pc);
  PyMem_Free(kv);
  Py_DECREF(keep);
  Py_DECREF(empty);
  return res;
}

static dk_status vacuum_collect(void *payload, const char *path, int64_t size) {
  (void)size;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *s = PyUnicode_FromString(path);
  int rc = s ? PyList_Append((PyObject *)payload, s) : -1;
  Py_XDECREF(s);
  if (rc < 0) PyErr_Clear();
  PyGILState_Release(g);
  return rc < 0 ? DK_NOMEM : DK_OK;
}

static PyObject *table_vacuum(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("retention_hours"), K("dry_run"), K("enforce_retention_duration"),
                           NULL};
  PyObject *hours = Py_None;
  int dry = 1, enforce = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Opp:vacuum", kwlist, &hours, &dry, &enforce))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_vacuum_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_VACUUM_OPTIONS_VERSION;
  o.retention_hours = -1;
  if (hours != Py_None) {
    o.retention_hours = PyFloat_AsDouble(hours);
    if (o.retention_hours == -1 && PyErr_Occurred()) return NULL;
    if (o.retention_hours < 0) {
      PyErr_SetString(PyExc_ValueError, "retention_hours must be >= 0");
      return NULL;
    }
  }
  o.dry_run = dry;
  o.skip_retention_check = !enforce;
  PyObject *files = PyList_New(0);
  if (!files) return NULL;
  o.on_file = vacuum_collect;
  o.payload = files;
  dk_vacuum_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_VACUUM_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_vacuum(&r, self->t, &o, &err));
  if (st) {
    Py_DECREF(files);
    return raise_dk(NULL, &err);
  }
  return files;
}

static PyObject *table_checkpoint(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("version"), NULL};
  long long v = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|L:checkpoint", kwlist, &v)) return NULL;
  if (check_table(self) < 0) return NULL;
  dk_checkpoint_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHECKPOINT_OPTIONS_VERSION;
  o.at_version = v;
  dk_checkpoint_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_CHECKPOINT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_checkpoint(&r, self->t, &o, &err));
  if (st) return raise_dk(NULL, &err);
  return Py_BuildValue("{s:L,s:s,s:L,s:L,s:L}", "version", (long long)r.checkpoint_version,
                       "file", r.file_name, "num_actions", (long long)r.num_actions,
                       "num_add_files", (long long)r.num_add_files, "size_in_bytes",
                       (long long)r.size_in_bytes);
}

static PyObject *table_cleanup_metadata(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("retention_hours"), K("dry_run"), NULL};
  double hours = -1;
  int dry = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|dp:cleanup_metadata", kwlist, &hours, &dry))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_cleanup_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CLEANUP_OPTIONS_VERSION;
  o.retention_ms = hours > 0 ? (int64_t)(hours * 3600e3) : -1;
  o.dry_run = dry;
  int64_t n = 0;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_cleanup_metadata(&n, self->t, &o, &err));
  if (st) return raise_dk(NULL, &err);
  return PyLong_FromLongLong((long long)n);
}

static PyObject *table_restore(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("version"), NULL};
  long long v;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "L:restore", kwlist, &v)) return NULL;
  if (check_table(self) < 0) return NULL;
  dk_commit_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_COMMIT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_restore(&r, self->t, v, NULL, &err));
  if (st) return raise_dk(NULL, &err);
  return Py_BuildValue("{s:L,s:i}", "version", (long long)r.committed_version, "attempts",
                       r.attempts);
}

static PyObject *table_optimize(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("predicate"), K("min_file_size"), K("max_file_size"),
                           K("max_deleted_rows_ratio"), K("threads"), K("max_attempts"), NULL};
  const char *pred = NULL;
  long long minsz = 0, maxsz = 0;
  double ratio = 0;
  int threads = 0, attempts = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zLLdii:optimize", kwlist, &pred, &minsz, &maxsz,
                                   &ratio, &threads, &attempts))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_optimize_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_OPTIMIZE_OPTIONS_VERSION;
  o.predicate = pred;
  o.min_file_size = minsz;
  o.max_file_size = maxsz;
  o.max_deleted_rows_ratio = ratio;
  o.threads = threads;
  o.max_attempts = attempts;
  dk_optimize_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_OPTIMIZE_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_optimize(&r, self->t, &o, &err));
  if (st) return raise_dk(NULL, &err);
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:i}", "version",
                       (long long)r.committed_version, "files_added", (long long)r.files_added,
                       "files_removed", (long long)r.files_removed, "bytes_added",
                       (long long)r.bytes_added, "bytes_removed", (long long)r.bytes_removed,
                       "partitions_optimized", (long long)r.partitions_optimized, "bins",
                       (long long)r.bins, "files_considered", (long long)r.files_considered,
                       "attempts", r.attempts);
}

/* ---- row-level DML ---------------------------------------------------------------------- */

static PyObject *dml_result(const dk_dml_metrics *m, const dk_commit_result *r) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  struct {
    const char *k;
    long long v;
  } kv[] = {{"version", r->committed_version},
            {"num_deleted_rows", m->num_deleted_rows},
            {"num_updated_rows", m->num_updated_rows},
            {"num_inserted_rows", m->num_inserted_rows},
            {"num_copied_rows", m->num_copied_rows},
            {"num_source_rows", m->num_source_rows},
            {"num_added_files", m->num_added_files},
            {"num_removed_files", m->num_removed_files},
            {"num_added_bytes", m->num_added_bytes},
            {"num_removed_bytes", m->num_removed_bytes},
            {"num_deletion_vectors_added", m->num_deletion_vectors_added},
            {"num_deletion_vectors_removed", m->num_deletion_vectors_removed},
            {"num_deletion_vectors_updated", m->num_deletion_vectors_updated},
            {"num_added_change_files", m->num_added_change_files},
            {"change_file_bytes", m->change_file_bytes},
            {"num_files_before_skipping", m->num_files_before_skipping},
            {"num_files_after_skipping", m->num_files_after_skipping},
            {"num_dv_files", m->num_dv_files},
            {"dv_bytes", m->dv_bytes},
            {"scan_time_ms", m->scan_time_ms},
            {"rewrite_time_ms", m->rewrite_time_ms},
            {"execution_time_ms", m->execution_time_ms}};
  for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) {
    PyObject *v = PyLong_FromLongLong(kv[i].v);
    if (!v || PyDict_SetItemString(d, kv[i].k, v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(v);
  }
  return d;
}

/* deletion_vectors: True = as the table allows (delta-spark), False = copy-on-write. */
static int dml_options(dk_dml_options *o, int dvs, long long inline_max) {
  memset(o, 0, sizeof *o);
  o->version = DK_DML_OPTIONS_VERSION;
  o->deletion_vectors = dvs ? DK_DML_DV_TABLE : DK_DML_DV_NEVER;
  if (inline_max < 0 || inline_max > 0x7fffffff) {
    PyErr_SetString(PyExc_ValueError, "dv_inline_max_bytes must be in [0, 2^31)");
    return -1;
  }
  o->dv_inline_max_bytes = (int32_t)inline_max;
  return 0;
}

/* DK_NOT_FOUND of a DML statement on an open table is an unknown column unless it says
 * otherwise (a missing data file names the file). */
static PyObject *dml_exc(dk_status st, const dk_error *err) {
  return st == DK_NOT_FOUND && strstr(err->message, "column") ? ColumnNotFound : NULL;
}

static PyObject *table_delete(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("predicate"), K("deletion_vectors"), K("dv_inline_max_bytes"), NULL};
  const char *pred = NULL;
  int dvs = 1;
  long long inline_max = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z$pL:delete", kwlist, &pred, &dvs, &inline_max))
    return NULL;
  if (check_table(self) < 0) return NULL;
  dk_dml_options o;
  if (dml_options(&o, dvs, inline_max) < 0) return NULL;
  dk_dml_metrics m = {.version = DK_DML_METRICS_VERSION};
  dk_commit_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_COMMIT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_delete(&m, &r, self->t, pred, &o, NULL, &err));
  if (st) return raise_dk(dml_exc(st, &err), &err);
  return dml_result(&m, &r);
}

static PyObject *table_update(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("updates"), K("predicate"), K("deletion_vectors"),
                           K("dv_inline_max_bytes"), NULL};
  PyObject *updates;
  const char *pred = NULL;
  int dvs = 1;
  long long inline_max = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z$pL:update", kwlist, &updates, &pred, &dvs,
                                   &inline_max))
    return NULL;
  if (check_table(self) < 0) return NULL;
  if (!PyDict_Check(updates) || PyDict_Size(updates) == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "updates must be a non-empty dict of column name -> expression text");
    return NULL;
  }
  dk_dml_options o;
  if (dml_options(&o, dvs, inline_max) < 0) return NULL;
  PyObject *keep = PyList_New(0);
  if (!keep) return NULL;
  Py_ssize_t n = 0;
  const char **kv = kv_array_of(updates, &n, keep);
  if (!kv) {
    Py_DECREF(keep);
    return NULL;
  }
  dk_dml_metrics m = {.version = DK_DML_METRICS_VERSION};
  dk_commit_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_COMMIT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self, st = dk_table_update(&m, &r, self->t, kv, (size_t)n, pred, &o, NULL, &err));
  PyMem_Free(kv);
  Py_DECREF(keep);
  if (st) return raise_dk(dml_exc(st, &err), &err);
  return dml_result(&m, &r);
}

/* Parses {column: expression text} into assignments (texts kept alive by keep). */
static int parse_assignments(dk_dml_assignment **out, size_t *n_out, PyObject *d,
                             PyObject *keep) {
  *out = NULL;
  *n_out = 0;
  if (d == Py_None) return 0;
  Py_ssize_t n = 0;
  const char **kv = kv_array_of(d, &n, keep);
  if (!kv) return -1;
  dk_dml_assignment *a = PyMem_Calloc((size_t)(n ? n : 1), sizeof *a);
  if (!a) {
    PyMem_Free(kv);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    dk_error err;
    dk_error_init(&err);
    dk_expr *e = NULL;
    a[i].column = kv[2 * i];
    if (!kv[2 * i + 1]) {
      PyErr_Format(PyExc_ValueError, "no expression for column '%s'", kv[2 * i]);
    } else if (dk_expr_parse(&e, kv[2 * i + 1], &err) != DK_OK) {
      raise_dk(NULL, &err);
    }
    if (!e) {
      for (Py_ssize_t k = 0; k < i; k++) dk_expr_free((dk_expr *)a[k].value);
      PyMem_Free(a);
      PyMem_Free(kv);
      return -1;
    }
    a[i].value = e;
  }
  PyMem_Free(kv);
  *out = a;
  *n_out = (size_t)n;
  return 0;
}

/* Table._merge(stream_capsule, on, target_alias, source_alias, clauses): clauses are tuples
 * (when, action, condition or None, {column: expression} or None, all). */
static PyObject *table_merge_impl(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("source"), K("on"), K("target_alias"), K("source_alias"),
                           K("clauses"), K("dv_inline_max_bytes"), NULL};
  PyObject *cap, *clauses;
  const char *on, *ta, *sa;
  long long inline_max = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OsssO|L:_merge", kwlist, &cap, &on, &ta, &sa,
                                   &clauses, &inline_max))
    return NULL;
  if (check_table(self) < 0) return NULL;
  struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (!stream) return NULL;
  PyObject *fast = PySequence_Fast(clauses, "clauses must be a sequence");
  if (!fast) return NULL;
  Py_ssize_t nc = PySequence_Fast_GET_SIZE(fast);
  dk_merge_clause *cl = PyMem_Calloc((size_t)(nc ? nc : 1), sizeof *cl);
  PyObject *keep = PyList_New(0);
  PyObject *res = NULL;
  dk_expr *on_e = NULL;
  dk_error err;
  dk_error_init(&err);
  Py_ssize_t done = 0;
  if (!cl || !keep) {
    PyErr_NoMemory();
    goto out;
  }
  if (dk_expr_parse(&on_e, on, &err) != DK_OK) {
    raise_dk(NULL, &err);
    goto out;
  }
  for (; done < nc; done++) {
    int when, action, all;
    PyObject *cond, *upd;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, done), "iiOOp", &when, &action, &cond,
                          &upd, &all))
      goto out;
    cl[done].when = (dk_merge_when)when;
    cl[done].action = (dk_merge_action)action;
    cl[done].all = all;
    if (cond != Py_None) {
      const char *ct = PyUnicode_AsUTF8(cond);
      dk_expr *ce = NULL;
      if (!ct) goto out;
      if (dk_expr_parse(&ce, ct, &err) != DK_OK) {
        raise_dk(NULL, &err);
        goto out;
      }
      cl[done].condition = ce;
    }
    dk_dml_assignment *a = NULL;
    size_t na = 0;
    if (parse_assignments(&a, &na, upd, keep) < 0) goto out;
    cl[done].set = a;
    cl[done].n_set = na;
  }
  {
    dk_merge_spec sp = {.version = DK_MERGE_SPEC_VERSION, .source = stream, .on = on_e,
                        .target_alias = ta, .source_alias = sa, .clauses = cl,
                        .n_clauses = (size_t)nc};
    dk_dml_options o;
    if (dml_options(&o, 1, inline_max) < 0) goto out;
    dk_dml_metrics m = {.version = DK_DML_METRICS_VERSION};
    dk_commit_result r;
    memset(&r, 0, sizeof r);
    r.version = DK_COMMIT_RESULT_VERSION;
    dk_status st;
    LOCKED_CALL(self, st = dk_table_merge(&m, &r, self->t, &sp, &o, NULL, &err));
    if (st) raise_dk(dml_exc(st, &err), &err);
    else res = dml_result(&m, &r);
  }
out:
  for (Py_ssize_t i = 0; cl && i < nc; i++) {
    dk_expr_free((dk_expr *)cl[i].condition);
    for (size_t k = 0; k < cl[i].n_set; k++) dk_expr_free((dk_expr *)cl[i].set[k].value);
    PyMem_Free((void *)cl[i].set);
  }
  PyMem_Free(cl);
  dk_expr_free(on_e);
  Py_XDECREF(keep);
  Py_DECREF(fast);
  return res;
}

/* Table.merge(source, on, source_alias="s", target_alias="t") -> dk.TableMerger */
static PyObject *table_merge(TableObject *self, PyObject *args, PyObject *kw) {
  PyObject *mod = PyImport_ImportModule("dk");
  PyObject *cls = mod ? PyObject_GetAttrString(mod, "TableMerger") : NULL;
  Py_XDECREF(mod);
  if (!cls) return NULL;
  PyObject *full = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
  if (!full) {
    Py_DECREF(cls);
    return NULL;
  }
  Py_INCREF(self);
  PyTuple_SET_ITEM(full, 0, (PyObject *)self);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
    PyObject *a = PyTuple_GET_ITEM(args, i);
    Py_INCREF(a);
    PyTuple_SET_ITEM(full, i + 1, a);
  }
  PyObject *res = PyObject_Call(cls, full, kw);
  Py_DECREF(full);
  Py_DECREF(cls);
  return res;
}

/* ---- dk.write_table ---------------------------------------------------------------------- */

static PyObject *mod_write_table(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("path"), K("stream"), K("mode"), K("partition_by"), K("predicate"),
                           K("dynamic"), K("schema_mode"), K("properties"),
                           K("target_file_size"), K("app_id"), K("app_version"),
                           K("user_metadata"), K("max_attempts"), K("threads"),
                           K("storage_options"), NULL};
  PyObject *path_obj, *cap, *parts = Py_None, *props = Py_None, *storage = Py_None;
  const char *mode = "error", *predicate = NULL, *schema_mode = NULL, *app_id = NULL,
             *umeta = NULL;
  int dynamic = 0, max_attempts = 0, threads = 0;
  long long target = 0, app_version = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sOzpzOLzLziIO:_write_table", kwlist,
                                   &path_obj, &cap, &mode, &parts, &predicate, &dynamic,
                                   &schema_mode, &props, &target, &app_id, &app_version, &umeta,
                                   &max_attempts, &threads, &storage))
    return NULL;
  if (storage != Py_None && !PyDict_Check(storage)) {
    PyErr_SetString(PyExc_TypeError, "storage_options must be a dict or None");
    return NULL;
  }
  struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (!stream) return NULL;
  dk_write_table_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_WRITE_TABLE_OPTIONS_VERSION;
  if (!strcmp(mode, "error")) o.mode = DK_WRITE_ERROR_IF_EXISTS;
  else if (!strcmp(mode, "append")) o.mode = DK_WRITE_APPEND;
  else if (!strcmp(mode, "overwrite")) o.mode = DK_WRITE_OVERWRITE;
  else if (!strcmp(mode, "ignore")) o.mode = DK_WRITE_IGNORE;
  else {
    PyErr_Format(PyExc_ValueError, "mode must be error, append, overwrite or ignore, not '%s'",
                 mode);
    return NULL;
  }
  if (!schema_mode) o.schema_mode = DK_SCHEMA_STRICT;
  else if (!strcmp(schema_mode, "merge")) o.schema_mode = DK_SCHEMA_MERGE;
  else if (!strcmp(schema_mode, "overwrite")) o.schema_mode = DK_SCHEMA_OVERWRITE;
  else {
    PyErr_Format(PyExc_ValueError, "schema_mode must be None, 'merge' or 'overwrite'");
    return NULL;
  }
  PyObject *fs = NULL;
  if (!PyUnicode_FSConverter(path_obj, &fs)) return NULL;
  PyObject *keep = PyList_New(0), *empty = PyTuple_New(0);
  Py_ssize_t np = 0, nc = 0;
  const char **pc = keep && empty ? str_array_of(parts == Py_None ? empty : parts, &np, keep)
                                  : NULL;
  const char **kv = pc ? kv_array_of(props, &nc, keep) : NULL;
  PyObject *res = NULL;
  dk_storage *sto = NULL;
  if (kv && storage_for(&sto, PyBytes_AS_STRING(fs), storage) == 0) {
    o.n_partition_by = (size_t)np;
    o.partition_by = pc;
    o.predicate = predicate;
    o.dynamic_partition_overwrite = dynamic;
    o.n_properties = (size_t)nc;
    o.properties = kv;
    o.app_id = app_id;
    o.app_version = app_version;
    o.write.version = DK_WRITE_OPTIONS_VERSION;
    o.write.target_file_size = target;
    o.write.threads = threads;
    o.txn.version = DK_TXN_OPTIONS_VERSION;
    o.txn.user_metadata = umeta;
    o.txn.max_attempts = max_attempts;
    dk_table_options to;
    memset(&to, 0, sizeof to);
    to.version = DK_TABLE_OPTIONS_VERSION;
    to.alloc = &g_alloc;
    to.storage = sto;
    dk_commit_result r;
    memset(&r, 0, sizeof r);
    r.version = DK_COMMIT_RESULT_VERSION;
    dk_error err;
    dk_error_init(&err);
    dk_table *t = NULL;
    dk_status st;
    const char *path = PyBytes_AS_STRING(fs);
    Py_BEGIN_ALLOW_THREADS st = dk_table_open(&t, path, &to, &err);
    if (!st) st = dk_write_table(&r, t, stream, &o, &err);
    dk_table_free(t);
    if (sto) sto->free(sto);
    Py_END_ALLOW_THREADS
    if (st) raise_dk(NULL, &err);
    else
      res = Py_BuildValue("{s:L,s:i,s:i}", "version", (long long)r.committed_version, "attempts",
                          r.attempts, "checkpoint", r.checkpoint);
  }
  PyMem_Free(pc);
  PyMem_Free(kv);
  Py_XDECREF(keep);
  Py_XDECREF(empty);
  Py_DECREF(fs);
  return res;
}

static PyObject *table_create_cls(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("path"), K("schema"), K("partition_by"), K("properties"), K("mode"),
                           K("name"), K("description"), NULL};
  PyObject *path, *schema, *parts = Py_None, *props = Py_None, *mode = NULL, *name = Py_None,
                           *desc = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOOO:create", kwlist, &path, &schema, &parts,
                                   &props, &mode, &name, &desc))
    return NULL;
  PyObject *mod = PyImport_ImportModule("dk._schema");
  PyObject *ss = mod ? PyObject_CallMethod(mod, "schema_string", "O", schema) : NULL;
  Py_XDECREF(mod);
  if (!ss) return NULL;
  /* make the directory, as delta-spark does for a path table */
  PyObject *os = PyImport_ImportModule("os");
  PyObject *mk = os ? PyObject_CallMethod(os, "makedirs", "OiO", path, 0777, Py_True) : NULL;
  Py_XDECREF(os);
  if (!mk) {
    Py_DECREF(ss);
    return NULL;
  }
  Py_DECREF(mk);
  PyObject *t = PyObject_CallFunctionObjArgs(cls, path, NULL);
  if (!t) {
    Py_DECREF(ss);
    return NULL;
  }
  PyObject *kw2 = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O}", "partition_by", parts, "properties",
                                props, "mode", mode ? mode : Py_None, "name", name, "description",
                                desc);
  if (kw2 && !mode) PyDict_DelItemString(kw2, "mode");
  PyObject *a2 = kw2 ? PyTuple_Pack(1, ss) : NULL;
  PyObject *r = a2 ? table_create_impl((TableObject *)t, a2, kw2) : NULL;
  Py_XDECREF(a2);
  Py_XDECREF(kw2);
  Py_DECREF(ss);
  if (!r) {
    Py_DECREF(t);
    return NULL;
  }
  Py_DECREF(r);
  return t;
}

static PyObject *table_changes(TableObject *self, PyObject *args, PyObject *kw);
static PyObject *table_stream(TableObject *self, PyObject *args, PyObject *kw);

static PyMethodDef table_methods[] = {
    {"changes", (PyCFunction)(void (*)(void))table_changes, METH_VARARGS | METH_KEYWORDS,
     "changes(start_version=None, end_version=None, start_timestamp=None, end_timestamp=None, "
     "columns=None, filter=None) -> dk.Changes: the change data feed of the range (Arrow "
     "stream of the rows with _change_type, _commit_version, _commit_timestamp)"},
    {"stream", (PyCFunction)(void (*)(void))table_stream, METH_VARARGS | METH_KEYWORDS,
     "stream(starting_version=None | 'latest', starting_timestamp=None, resume_offset=None, "
     "max_files=None, max_bytes=None, available_now=False, ignore_deletes=False, "
     "ignore_changes=False, skip_change_commits=False, allow_data_loss=False, "
     "exclude_regex=None, change_data_feed=False, columns=None, filter=None) -> dk.Stream: the "
     "table as micro-batches (the initial snapshot, then new commits, unless a start is given)"},
    {"snapshot", (PyCFunction)(void (*)(void))table_snapshot, METH_VARARGS | METH_KEYWORDS,
     "snapshot(version=None, timestamp=None) -> Snapshot\n\nThe latest snapshot, or time travel "
     "to a version or to the latest commit at or before timestamp (int ms since the epoch, "
     "datetime (naive = UTC) or ISO-8601 string). The Table keeps its latest snapshot and "
     "refreshes it on each call by reading only the commits after it, so every call sees all "
     "commits finished before it."},
    {"history", (PyCFunction)(void (*)(void))table_history, METH_VARARGS | METH_KEYWORDS,
     "history(limit=None) -> list[dict]\n\ncommitInfo of each version, newest first, with "
     "'version' and 'commit_timestamp' added."},
    {"scan", (PyCFunction)(void (*)(void))table_scan, METH_VARARGS | METH_KEYWORDS,
     "scan(...) -> Scan: shorthand for snapshot().scan(...)."},
    {"create", (PyCFunction)(void (*)(void))table_create_cls,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Table.create(path, schema, partition_by=None, properties=None, mode='error', name=None, "
     "description=None) -> Table\n\nCREATE TABLE: schema is a DDL column list ('a long, b "
     "string'), a Delta schema JSON string or an Arrow schema; mode 'error' (the default: a "
     "table there is an error), 'ignore' or 'overwrite' (CREATE OR REPLACE)."},
    {"_create", (PyCFunction)(void (*)(void))table_create_impl, METH_VARARGS | METH_KEYWORDS,
     "_create(schema_string, partition_by=None, properties=None, mode='error', name=None, "
     "description=None) -> version (-1 when mode='ignore' found a table); see Table.create."},
    {"vacuum", (PyCFunction)(void (*)(void))table_vacuum, METH_VARARGS | METH_KEYWORDS,
     "vacuum(retention_hours=None, dry_run=True, enforce_retention_duration=True) -> list[str]"
     "\n\nFiles deleted (dry run: that would be), relative to the root. retention_hours None "
     "= delta.deletedFileRetentionDuration (7 days)."},
    {"checkpoint", (PyCFunction)(void (*)(void))table_checkpoint, METH_VARARGS | METH_KEYWORDS,
     "checkpoint(version=None) -> dict: writes a checkpoint of the latest version (or `version`)"
     " and _last_checkpoint."},
    {"cleanup_metadata", (PyCFunction)(void (*)(void))table_cleanup_metadata,
     METH_VARARGS | METH_KEYWORDS,
     "cleanup_metadata(retention_hours=None, dry_run=False) -> int: deletes log files older "
     "than delta.logRetentionDuration that the newest old checkpoint makes unnecessary."},
    {"optimize", (PyCFunction)(void (*)(void))table_optimize, METH_VARARGS | METH_KEYWORDS,
     "optimize(predicate=None, min_file_size=0, max_file_size=0, "
     "max_deleted_rows_ratio=0, threads=0, max_attempts=0) -> dict\n\nOPTIMIZE (bin-packing "
     "compaction; 0 = delta-spark's defaults): files smaller than min_file_size (1 GiB) in the partitions `predicate` (over "
     "partition columns) selects are rewritten into files of up to max_file_size (1 GiB), "
     "dataChange=false. The dict: version (-1: nothing to compact), files_added, "
     "files_removed, bytes_added, bytes_removed, partitions_optimized, bins, "
     "files_considered, attempts."},
    {"restore", (PyCFunction)(void (*)(void))table_restore, METH_VARARGS | METH_KEYWORDS,
     "restore(version) -> dict(version, attempts): RESTORE TABLE TO VERSION AS OF version."},
    {"delete", (PyCFunction)(void (*)(void))table_delete, METH_VARARGS | METH_KEYWORDS,
     "delete(predicate=None, *, deletion_vectors=True, dv_inline_max_bytes=0) -> metrics: "
     "DELETE FROM the table [WHERE predicate] as one commit (deletion vectors when the table "
     "allows them, else copy-on-write); 'version' is -1 when no row matched"},
    {"update", (PyCFunction)(void (*)(void))table_update, METH_VARARGS | METH_KEYWORDS,
     "update(updates, predicate=None, *, deletion_vectors=True, dv_inline_max_bytes=0) -> "
     "metrics: UPDATE the table SET column = expression (updates: {column: expression text}) "
     "[WHERE predicate] as one commit (deletion vectors on the old rows and new files with the "
     "updated ones when the table allows DVs, else the touched files rewritten); 'version' is "
     "-1 when no row matched"},
    {"merge", (PyCFunction)(void (*)(void))table_merge, METH_VARARGS | METH_KEYWORDS,
     "merge(source, on, source_alias='s', target_alias='t') -> TableMerger: MERGE INTO the "
     "table USING source (any object with __arrow_c_stream__) ON on (equalities "
     "t.key = s.key joined by AND); add clauses with when_matched_update(...) etc., then "
     "execute() -> metrics"},
    {"_merge", (PyCFunction)(void (*)(void))table_merge_impl, METH_VARARGS | METH_KEYWORDS,
     "internal: TableMerger.execute()"},
    {"transaction", (PyCFunction)(void (*)(void))table_transaction, METH_VARARGS | METH_KEYWORDS,
     "transaction(version=None, create=False, operation=None, operation_parameters=None, "
     "max_attempts=0, isolation=None, engine_info=None, user_metadata=None) -> Transaction\n\n"
     "A transaction on the latest snapshot (or `version`), or one that creates the table."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef table_getset[] = {
    {"path", (getter)table_get_path, NULL, "the table root", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Table",
    .tp_basicsize = sizeof(TableObject),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_repr = (reprfunc)table_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(path, storage_options=None, confine_paths=True): a Delta table (a local "
              "path, or s3:// with storage_options). confine_paths: refuse data, DV and sidecar "
              "files the log names outside the table root (and symlinks leading out); False for "
              "a shallow clone.",
    .tp_methods = table_methods,
    .tp_getset = table_getset,
    .tp_init = (initproc)table_init,
    .tp_new = PyType_GenericNew,
};

/* ---- Schema ------------------------------------------------------------------------------ */

static void schema_capsule_free(PyObject *cap) {
  struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
  if (!s) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (s->release) s->release(s);
  free(s);
}

static PyObject *schema_capsule(struct ArrowSchema *src) {
  struct ArrowSchema *s = malloc(sizeof *s);
  if (!s) {
    src->release(src);
    return PyErr_NoMemory();
  }
  *s = *src; /* move */
  src->release = NULL;
  PyObject *cap = PyCapsule_New(s, "arrow_schema", schema_capsule_free);
  if (!cap) {
    s->release(s);
    free(s);
  }
  return cap;
}

static PyObject *schema_arrow_c_schema(SchemaObject *self, PyObject *noargs) {
  (void)noargs;
  struct ArrowSchema out;
  memset(&out, 0, sizeof out);
  dk_error err;
  dk_error_init(&err);
  if (dk_snapshot_arrow_schema(&out, self->snap->s, 0, &err) != DK_OK) return raise_dk(NULL, &err);
  return schema_capsule(&out);
}

static void schema_dealloc(SchemaObject *self) {
  Py_XDECREF(self->snap);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *schema_fields(SchemaObject *self, void *closure) {
  (void)closure;
  const dk_type *st = dk_snapshot_schema(self->snap->s);
  size_t n = st ? st->n_fields : 0;
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (size_t i = 0; i < n; i++) {
    const dk_field *f = &st->fields[i];
    size_t need = dk_type_to_string(NULL, 0, f->type);
    char *buf = PyMem_Malloc(need + 1);
    if (!buf) {
      Py_DECREF(l);
      return PyErr_NoMemory();
    }
    dk_type_to_string(buf, need + 1, f->type);
    PyObject *t = Py_BuildValue("(NsO)", str_or_none(f->name), buf, f->nullable ? Py_True : Py_False);
    PyMem_Free(buf);
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

static PyObject *schema_names(SchemaObject *self, void *closure) {
  (void)closure;
  const dk_type *st = dk_snapshot_schema(self->snap->s);
  size_t n = st ? st->n_fields : 0;
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *s = str_or_none(st->fields[i].name);
    if (!s) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, s);
  }
  return l;
}

static PyObject *schema_json(SchemaObject *self, void *closure) {
  (void)closure;
  return str_or_none(dk_snapshot_metadata(self->snap->s)->schema_string);
}

static PyObject *call_pyarrow(const char *fn, PyObject *arg) {
  PyObject *pa = PyImport_ImportModule("pyarrow");
  if (!pa) return NULL;
  PyObject *res = PyObject_CallMethod(pa, fn, "O", arg);
  Py_DECREF(pa);
  return res;
}

static PyObject *schema_to_pyarrow(SchemaObject *self, PyObject *noargs) {
  (void)noargs;
  return call_pyarrow("schema", (PyObject *)self);
}

static PyObject *schema_repr(SchemaObject *self) {
  PyObject *f = schema_fields(self, NULL);
  if (!f) return NULL;
  PyObject *r = PyUnicode_FromFormat("dk.Schema(%R)", f);
  Py_DECREF(f);
  return r;
}

static PyMethodDef schema_methods[] = {
    {"__arrow_c_schema__", (PyCFunction)schema_arrow_c_schema, METH_NOARGS,
     "The logical schema as a PyCapsule 'arrow_schema' (Arrow PyCapsule Interface)."},
    {"to_pyarrow", (PyCFunction)schema_to_pyarrow, METH_NOARGS, "pyarrow.schema(self)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef schema_getset[] = {
    {"fields", (getter)schema_fields, NULL, "[(name, delta type string, nullable)]", NULL},
    {"names", (getter)schema_names, NULL, "top-level column names", NULL},
    {"json", (getter)schema_json, NULL, "the schemaString of the table metadata", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SchemaType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Schema",
    .tp_basicsize = sizeof(SchemaObject),
    .tp_dealloc = (destructor)schema_dealloc,
    .tp_repr = (reprfunc)schema_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The logical schema of a snapshot; implements __arrow_c_schema__.",
    .tp_methods = schema_methods,
    .tp_getset = schema_getset,
};

/* ---- Snapshot ---------------------------------------------------------------------------- */

static void snapshot_dealloc(SnapshotObject *self) {
  dk_snapshot_free(self->s);
  Py_XDECREF(self->table);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *snapshot_version(SnapshotObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(dk_snapshot_version(self->s));
}

static PyObject *snapshot_timestamp(SnapshotObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(dk_snapshot_timestamp(self->s));
}

static PyObject *snapshot_table(SnapshotObject *self, void *closure) {
  (void)closure;
  Py_INCREF(self->table);
  return (PyObject *)self->table;
}

static PyObject *snapshot_schema(SnapshotObject *self, void *closure) {
  (void)closure;
  SchemaObject *so = PyObject_New(SchemaObject, &SchemaType);
  if (!so) return NULL;
  Py_INCREF(self);
  so->snap = self;
  return (PyObject *)so;
}

static PyObject *snapshot_partition_columns(SnapshotObject *self, void *closure) {
  (void)closure;
  const dk_metadata *m = dk_snapshot_metadata(self->s);
  return str_list(m->partition_columns, m->n_partition_columns);
}

static PyObject *snapshot_properties(SnapshotObject *self, void *closure) {
  (void)closure;
  const dk_metadata *m = dk_snapshot_metadata(self->s);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  for (size_t i = 0; i < m->n_configuration; i++) {
    PyObject *v = str_or_none(m->config_values[i]);
    if (!v) goto fail;
    int rc = PyDict_SetItemString(d, m->config_keys[i], v);
    Py_DECREF(v);
    if (rc < 0) goto fail;
  }
  return d;
fail:
  Py_DECREF(d);
  return NULL;
}

static PyObject *snapshot_protocol(SnapshotObject *self, void *closure) {
  (void)closure;
  const dk_protocol *p = dk_snapshot_protocol(self->s);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  PyObject *rf = NULL, *wf = NULL;
  if (p->has_reader_features) {
    rf = str_list(p->reader_features, p->n_reader_features);
  } else {
    Py_INCREF(Py_None);
    rf = Py_None;
  }
  if (p->has_writer_features) {
    wf = str_list(p->writer_features, p->n_writer_features);
  } else {
    Py_INCREF(Py_None);
    wf = Py_None;
  }
  if (dict_steal(d, "min_reader_version", PyLong_FromLong(p->min_reader_version)) < 0 ||
      dict_steal(d, "min_writer_version", PyLong_FromLong(p->min_writer_version)) < 0 ||
      dict_steal(d, "reader_features", rf) < 0 || dict_steal(d, "writer_features", wf) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *snapshot_metadata(SnapshotObject *self, void *closure) {
  (void)closure;
  const dk_metadata *m = dk_snapshot_metadata(self->s);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dict_steal(d, "id", str_or_none(m->id)) < 0 ||
      dict_steal(d, "name", str_or_none(m->name)) < 0 ||
      dict_steal(d, "description", str_or_none(m->description)) < 0 ||
      dict_steal(d, "format_provider", str_or_none(m->format_provider)) < 0 ||
      dict_steal(d, "schema_string", str_or_none(m->schema_string)) < 0 ||
      dict_steal(d, "created_time",
                 m->created_time < 0 ? (Py_INCREF(Py_None), Py_None)
                                     : PyLong_FromLongLong(m->created_time)) < 0 ||
      dict_steal(d, "partition_columns", str_list(m->partition_columns, m->n_partition_columns)) < 0 ||
      dict_steal(d, "configuration", snapshot_properties(self, NULL)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *snapshot_num_files(SnapshotObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(dk_snapshot_num_files(self->s));
}

static PyObject *dv_dict(const dk_dv_descriptor *dv) {
  if (!dv) Py_RETURN_NONE;
  char st[2] = {dv->storage_type, 0};
  return Py_BuildValue("{s:s,s:N,s:N,s:i,s:L}", "storage_type", st, "path_or_inline_dv",
                       str_or_none(dv->path_or_inline_dv), "offset",
                       dv->offset < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromLong(dv->offset),
                       "size_in_bytes", (int)dv->size_in_bytes, "cardinality",
                       (long long)dv->cardinality);
}

static PyObject *file_dict(SnapshotObject *self, const dk_file_entry *f, int64_t num_records) {
  const dk_metadata *m = dk_snapshot_metadata(self->s);
  PyObject *d = PyDict_New();
  PyObject *pv = PyDict_New();
  if (!d || !pv) goto fail;
  for (size_t k = 0; k < m->n_partition_columns; k++) {
    int is_null = 0;
    const char *v = dk_file_partition_value(self->s, f, m->partition_columns[k], &is_null);
    PyObject *vo = is_null ? (Py_INCREF(Py_None), Py_None) : str_or_none(v);
    if (!vo) goto fail;
    int rc = PyDict_SetItemString(pv, m->partition_columns[k], vo);
    Py_DECREF(vo);
    if (rc < 0) goto fail;
  }
  if (dict_steal(d, "path", str_or_none(f->path)) < 0 ||
      dict_steal(d, "size", PyLong_FromLongLong(f->size)) < 0 ||
      dict_steal(d, "modification_time", PyLong_FromLongLong(f->modification_time)) < 0 ||
      PyDict_SetItemString(d, "partition_values", pv) < 0 ||
      dict_steal(d, "stats", str_or_none(f->stats)) < 0 ||
      dict_steal(d, "tags", json_or_none(f->tags_json)) < 0 ||
      dict_steal(d, "deletion_vector", dv_dict(f->dv)) < 0 ||
      dict_steal(d, "base_row_id", f->has_base_row_id ? PyLong_FromLongLong(f->base_row_id)
                                                       : (Py_INCREF(Py_None), Py_None)) < 0 ||
      dict_steal(d, "default_row_commit_version",
                 f->has_default_row_commit_version
                     ? PyLong_FromLongLong(f->default_row_commit_version)
                     : (Py_INCREF(Py_None), Py_None)) < 0)
    goto fail;
  if (num_records >= -1 &&
      dict_steal(d, "num_records", num_records >= 0 ? PyLong_FromLongLong(num_records)
                                                     : (Py_INCREF(Py_None), Py_None)) < 0)
    goto fail;
  Py_DECREF(pv);
  return d;
fail:
  Py_XDECREF(d);
  Py_XDECREF(pv);
  return NULL;
}

static PyObject *snapshot_files_filtered(SnapshotObject *self, PyObject *filter);

static PyObject *snapshot_files(SnapshotObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("filter"), NULL};
  PyObject *filter = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:files", kwlist, &filter)) return NULL;
  if (filter != Py_None) return snapshot_files_filtered(self, filter);
  int64_t n = dk_snapshot_num_files(self->s);
  dk_error err;
  dk_error_init(&err);
  dk_file_iter *it;
  if (dk_snapshot_files_open(&it, self->s, NULL, &err) != DK_OK) return raise_dk(NULL, &err);
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) {
    dk_file_iter_free(it);
    return NULL;
  }
  for (int64_t i = 0; i < n; i++) {
    const dk_file_entry *f;
    if (dk_file_iter_next(&f, it, &err) != DK_OK || !f) {
      dk_file_iter_free(it);
      Py_DECREF(l);
      return raise_dk(NULL, &err);
    }
    PyObject *d = file_dict(self, f, -2);
    if (!d) {
      dk_file_iter_free(it);
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  dk_file_iter_free(it);
  return l;
}

static PyObject *snapshot_tombstones(SnapshotObject *self, PyObject *noargs) {
  (void)noargs;
  int64_t n = dk_snapshot_num_tombstones(self->s);
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (int64_t i = 0; i < n; i++) {
    dk_tombstone t;
    dk_error err;
    dk_error_init(&err);
    if (dk_snapshot_tombstone(&t, self->s, i, &err) != DK_OK) {
      Py_DECREF(l);
      return raise_dk(NULL, &err);
    }
    PyObject *d = Py_BuildValue(
        "{s:N,s:N,s:N,s:O}", "path", str_or_none(t.path), "deletion_timestamp",
        t.deletion_timestamp >= 0 ? PyLong_FromLongLong(t.deletion_timestamp)
                                  : (Py_INCREF(Py_None), Py_None),
        "size", t.size >= 0 ? PyLong_FromLongLong(t.size) : (Py_INCREF(Py_None), Py_None),
        "data_change", t.data_change ? Py_True : Py_False);
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

static PyObject *snapshot_transactions(SnapshotObject *self, PyObject *noargs) {
  (void)noargs;
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  size_t n = dk_snapshot_num_txns(self->s);
  for (size_t i = 0; i < n; i++) {
    const char *app;
    int64_t v, last;
    dk_snapshot_txn(&app, &v, &last, self->s, i);
    PyObject *t = Py_BuildValue("{s:L,s:N}", "version", (long long)v, "last_updated",
                                last >= 0 ? PyLong_FromLongLong(last)
                                          : (Py_INCREF(Py_None), Py_None));
    if (!t || PyDict_SetItemString(d, app, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(t);
  }
  return d;
}

static PyObject *snapshot_history(SnapshotObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("limit"), NULL};
  PyObject *limit_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:history", kwlist, &limit_obj)) return NULL;
  int64_t limit;
  if (parse_limit(limit_obj, &limit) < 0) return NULL;
  return history_list(self->table, dk_snapshot_version(self->s), limit);
}

static PyObject *snapshot_repr(SnapshotObject *self) {
  return PyUnicode_FromFormat("dk.Snapshot(%R, version=%lld)", self->table->path,
                              (long long)dk_snapshot_version(self->s));
}

/* ---- Scan -------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  SnapshotObject *snap;
  dk_scan *scan;
} ScanObject;

static PyTypeObject ScanType;

/* The stream handed to consumers: forwards to dk's stream, dropping the GIL around the calls
 * that decode when the calling thread holds it. It owns a reference to the Python Scan, so the
 * dk_scan the inner stream reads outlives it however long the consumer keeps the stream. */
typedef struct {
  struct ArrowArrayStream inner;
  PyObject *owner;
} gil_stream;

static int gil_held(void) { return Py_IsInitialized() && PyGILState_Check(); }

static int gs_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  gil_stream *g = s->private_data;
  if (!gil_held()) return g->inner.get_schema(&g->inner, out);
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = g->inner.get_schema(&g->inner, out);
  Py_END_ALLOW_THREADS return rc;
}

static int gs_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  gil_stream *g = s->private_data;
  if (!gil_held()) return g->inner.get_next(&g->inner, out);
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = g->inner.get_next(&g->inner, out);
  Py_END_ALLOW_THREADS return rc;
}

static const char *gs_get_last_error(struct ArrowArrayStream *s) {
  gil_stream *g = s->private_data;
  return g->inner.get_last_error(&g->inner);
}

static void gs_release(struct ArrowArrayStream *s) {
  gil_stream *g = s->private_data;
  if (g->inner.release) g->inner.release(&g->inner);
  PyObject *owner = g->owner;
  free(g);
  s->release = NULL;
  s->private_data = NULL;
  /* consumers may release from any thread, with or without the GIL (after interpreter
   * shutdown the reference is left: the process is ending) */
  if (owner && Py_IsInitialized()) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(gs);
  }
}

static void stream_capsule_free(PyObject *cap) {
  struct ArrowArrayStream *s = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (!s) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (s->release) s->release(s);
  free(s);
}

/* A capsule over `inner` (moved in) that keeps `owner` alive while the consumer reads. */
static PyObject *wrap_stream(PyObject *owner, struct ArrowArrayStream *inner) {
  struct ArrowArrayStream *outer = calloc(1, sizeof *outer);
  gil_stream *g = calloc(1, sizeof *g);
  if (!outer || !g) {
    free(outer);
    free(g);
    inner->release(inner);
    return PyErr_NoMemory();
  }
  g->inner = *inner;
  inner->release = NULL;
  outer->get_schema = gs_get_schema;
  outer->get_next = gs_get_next;
  outer->get_last_error = gs_get_last_error;
  outer->release = gs_release;
  outer->private_data = g;
  Py_INCREF(owner);
  g->owner = owner;
  PyObject *cap = PyCapsule_New(outer, "arrow_array_stream", stream_capsule_free);
  if (!cap) {
    outer->release(outer);
    free(outer);
  }
  return cap;
}

static PyObject *scan_arrow_c_stream(ScanObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("requested_schema"), NULL};
  PyObject *requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:__arrow_c_stream__", kwlist, &requested))
    return NULL;
  /* requested_schema is a hint (PyCapsule Interface); dk produces its own schema */
  struct ArrowArrayStream inner;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  Py_BEGIN_ALLOW_THREADS st = dk_scan_read(&inner, self->scan, &err);
  Py_END_ALLOW_THREADS
  if (st != DK_OK) return raise_dk(NULL, &err);
  return wrap_stream((PyObject *)self, &inner);
}

static PyObject *scan_arrow_c_schema(ScanObject *self, PyObject *noargs) {
  (void)noargs;
  struct ArrowSchema out;
  memset(&out, 0, sizeof out);
  dk_error err;
  dk_error_init(&err);
  if (dk_scan_schema(&out, self->scan, &err) != DK_OK) return raise_dk(NULL, &err);
  return schema_capsule(&out);
}

static PyObject *scan_to_pyarrow(ScanObject *self, PyObject *noargs) {
  (void)noargs;
  return call_pyarrow("table", (PyObject *)self);
}

static PyObject *scan_to_reader(ScanObject *self, PyObject *noargs) {
  (void)noargs;
  PyObject *pa = PyImport_ImportModule("pyarrow");
  if (!pa) return NULL;
  PyObject *cls = PyObject_GetAttrString(pa, "RecordBatchReader");
  Py_DECREF(pa);
  if (!cls) return NULL;
  PyObject *res = PyObject_CallMethod(cls, "from_stream", "O", (PyObject *)self);
  Py_DECREF(cls);
  return res;
}

static PyObject *scan_stats(ScanObject *self, void *closure) {
  (void)closure;
  dk_scan_stats s;
  dk_scan_stats_get(&s, self->scan);
  return Py_BuildValue(
      "{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "files_total",
      (long long)s.files_total, "files_pruned_partition", (long long)s.files_pruned_partition,
      "files_pruned_stats", (long long)s.files_pruned_stats, "files_pruned_limit",
      (long long)s.files_pruned_limit, "files_selected", (long long)s.files_selected,
      "bytes_selected", (long long)s.bytes_selected, "rows_estimated",
      (long long)s.rows_estimated, "row_groups_total", (long long)s.row_groups_total,
      "row_groups_skipped", (long long)s.row_groups_skipped, "pages_skipped",
      (long long)s.pages_skipped, "rows_decoded", (long long)s.rows_decoded, "rows_deleted",
      (long long)s.rows_deleted, "rows_filtered", (long long)s.rows_filtered, "rows_returned",
      (long long)s.rows_returned);
}

static PyObject *scan_files(ScanObject *self, PyObject *noargs) {
  (void)noargs;
  int64_t n = dk_scan_num_files(self->scan);
  dk_error err;
  dk_error_init(&err);
  dk_file_iter *it; /* the stats of the selected files, in snapshot order */
  if (dk_snapshot_files_open(&it, self->snap->s, NULL, &err) != DK_OK) return raise_dk(NULL, &err);
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) goto fail;
  for (int64_t i = 0; i < n; i++) {
    dk_scan_file f;
    const dk_file_entry *e;
    if (dk_scan_file_get(&f, self->scan, i, &err) != DK_OK ||
        dk_file_iter_seek(it, f.entry.index, &err) != DK_OK ||
        dk_file_iter_next(&e, it, &err) != DK_OK || !e) {
      Py_CLEAR(l);
      raise_dk(NULL, &err);
      goto fail;
    }
    PyObject *d = file_dict(self->snap, e, f.num_records);
    if (!d) goto fail;
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  dk_file_iter_free(it);
  return l;
fail:
  Py_XDECREF(l);
  dk_file_iter_free(it);
  return NULL;
}

static void scan_dealloc(ScanObject *self) {
  dk_scan_free(self->scan);
  Py_XDECREF(self->snap);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scan_repr(ScanObject *self) {
  return PyUnicode_FromFormat("dk.Scan(%R, version=%lld, files=%lld)", self->snap->table->path,
                              (long long)dk_snapshot_version(self->snap->s),
                              (long long)dk_scan_num_files(self->scan));
}

static PyMethodDef scan_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))scan_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "A new PyCapsule 'arrow_array_stream' over the whole scan (each call reads afresh)."},
    {"__arrow_c_schema__", (PyCFunction)scan_arrow_c_schema, METH_NOARGS,
     "The scan's output schema as a PyCapsule 'arrow_schema'."},
    {"to_pyarrow", (PyCFunction)scan_to_pyarrow, METH_NOARGS, "pyarrow.table(self)"},
    {"to_reader", (PyCFunction)scan_to_reader, METH_NOARGS,
     "pyarrow.RecordBatchReader.from_stream(self)"},
    {"files", (PyCFunction)scan_files, METH_NOARGS, "the files this scan reads"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef scan_getset[] = {
    {"stats", (getter)scan_stats, NULL, "pushdown and read counters (dk_scan_stats)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ScanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Scan",
    .tp_basicsize = sizeof(ScanObject),
    .tp_dealloc = (destructor)scan_dealloc,
    .tp_repr = (reprfunc)scan_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A planned scan; implements __arrow_c_stream__ (each call yields a new stream).",
    .tp_methods = scan_methods,
    .tp_getset = scan_getset,
};

static const struct {
  const char *name;
  unsigned bit;
} meta_names[] = {{"file_path", DK_META_FILE_PATH},
                  {"file_name", DK_META_FILE_NAME},
                  {"file_size", DK_META_FILE_SIZE},
                  {"file_block_start", DK_META_FILE_BLOCK_START},
                  {"file_block_length", DK_META_FILE_BLOCK_LENGTH},
                  {"file_modification_time", DK_META_FILE_MODIFICATION_TIME},
                  {"row_index", DK_META_ROW_INDEX},
                  {"row_id", DK_META_ROW_ID},
                  {"row_commit_version", DK_META_ROW_COMMIT_VERSION}};

/* with_metadata: False/None, True (every field the table can produce: the row-tracking ones
 * only with the rowTracking feature) or a list of field names. */
static int parse_metadata_fields(PyObject *obj, const dk_snapshot *snap, unsigned *out) {
  *out = 0;
  if (obj == Py_None || obj == Py_False) return 0;
  if (obj == Py_True) {
    *out = DK_META_ALL;
    if (!dk_snapshot_has_feature(snap, "rowTracking"))
      *out &= ~(unsigned)(DK_META_ROW_ID | DK_META_ROW_COMMIT_VERSION);
    return 0;
  }
  PyObject *seq = PySequence_Fast(obj, "with_metadata must be a bool or a list of field names");
  if (!seq) return -1;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const char *name = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
    if (!name) goto fail;
    size_t k = 0;
    for (; k < sizeof meta_names / sizeof meta_names[0]; k++)
      if (!strcmp(name, meta_names[k].name)) break;
    if (k == sizeof meta_names / sizeof meta_names[0]) {
      PyErr_Format(PyExc_ValueError, "unknown _metadata field '%s'", name);
      goto fail;
    }
    *out |= meta_names[k].bit;
  }
  Py_DECREF(seq);
  return 0;
fail:
  Py_DECREF(seq);
  return -1;
}

/* Builds a dk_scan; columns/filter may be Py_None. */
/* columns (a list of names or None) and filter (a dk expression str or None) as a scan
 * takes them: *names (PyMem, NULL for None) borrows from *seq, which the caller releases with
 * the expression. 0, or -1 with an exception set. */
static int columns_and_filter(PyObject *columns, PyObject *filter, const char ***names,
                              size_t *n_names, PyObject **seq, dk_expr **expr) {
  *names = NULL;
  *n_names = 0;
  *seq = NULL;
  *expr = NULL;
  if (columns != Py_None) {
    if (PyUnicode_Check(columns)) {
      PyErr_SetString(PyExc_TypeError, "columns must be a list of names, not a str");
      return -1;
    }
    *seq = PySequence_Fast(columns, "columns must be a list of names");
    if (!*seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(*seq);
    *names = PyMem_Calloc((size_t)n + 1, sizeof **names);
    if (!*names) {
      PyErr_NoMemory();
      return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      (*names)[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(*seq, i));
      if (!(*names)[i]) return -1;
    }
    *n_names = (size_t)n;
  }
  if (filter != Py_None) {
    if (!PyUnicode_Check(filter)) {
      PyErr_SetString(PyExc_TypeError, "filter must be a str (dk expression) or None");
      return -1;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(filter, &len);
    if (!text) return -1;
    dk_error err;
    dk_error_init(&err);
    dk_expr_parse_options po = {DK_EXPR_PARSE_OPTIONS_VERSION, &g_alloc};
    if (dk_expr_parse_v2(expr, text, (size_t)len, &po, &err) != DK_OK) {
      raise_dk(err.code == DK_UNSUPPORTED ? UnsupportedFeature : InvalidArgument, &err);
      return -1;
    }
  }
  return 0;
}

static void columns_and_filter_free(const char **names, PyObject *seq, dk_expr *expr) {
  dk_expr_free(expr);
  PyMem_Free(names);
  Py_XDECREF(seq);
}

static dk_scan *make_scan(SnapshotObject *self, PyObject *columns, PyObject *filter, int64_t limit,
                          unsigned meta, int threads, int64_t read_ahead) {
  dk_scan_options opts;
  memset(&opts, 0, sizeof opts);
  opts.version = DK_SCAN_OPTIONS_VERSION;
  opts.read_ahead_bytes = read_ahead;
  opts.limit = limit;
  opts.metadata_fields = meta;
  opts.threads = threads;
  const char **names;
  size_t n;
  PyObject *seq;
  dk_expr *expr;
  dk_scan *scan = NULL;
  if (columns_and_filter(columns, filter, &names, &n, &seq, &expr) == 0) {
    opts.columns = names;
    opts.n_columns = n;
    opts.filter = expr;
    dk_error err;
    dk_error_init(&err);
    dk_status st;
    LOCKED_CALL(self->table, st = dk_scan_new(&scan, self->s, &opts, &err));
    if (st != DK_OK) {
      scan = NULL;
      raise_dk(st == DK_NOT_FOUND ? ColumnNotFound : NULL, &err);
    }
  }
  columns_and_filter_free(names, seq, expr);
  return scan;
}

static PyObject *snapshot_scan(SnapshotObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("columns"), K("filter"), K("limit"), K("with_metadata"), K("threads"),
                           K("read_ahead"), NULL};
  PyObject *columns = Py_None, *filter = Py_None, *limit_obj = Py_None, *meta_obj = Py_False,
           *threads_obj = Py_None;
  long long read_ahead = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOL:scan", kwlist, &columns, &filter,
                                   &limit_obj, &meta_obj, &threads_obj, &read_ahead))
    return NULL;
  int64_t limit = -1;
  if (limit_obj != Py_None && parse_limit(limit_obj, &limit) < 0) return NULL;
  unsigned meta;
  if (parse_metadata_fields(meta_obj, self->s, &meta) < 0) return NULL;
  int threads = 0;
  if (threads_obj != Py_None) {
    long v = PyLong_AsLong(threads_obj);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v < 0 || v > 1024) {
      PyErr_SetString(PyExc_ValueError, "threads must be between 0 and 1024");
      return NULL;
    }
    threads = (int)v;
  }
  if (filter != Py_None && !PyUnicode_Check(filter)) {
    PyErr_SetString(PyExc_TypeError, "filter must be a str (dk expression) or None");
    return NULL;
  }
  dk_scan *scan = make_scan(self, columns, filter, limit, meta, threads, (int64_t)read_ahead);
  if (!scan) return NULL;
  ScanObject *so = PyObject_New(ScanObject, &ScanType);
  if (!so) {
    dk_scan_free(scan);
    return NULL;
  }
  Py_INCREF(self);
  so->snap = self;
  so->scan = scan;
  return (PyObject *)so;
}

static PyObject *snapshot_files_filtered(SnapshotObject *self, PyObject *filter) {
  if (!PyUnicode_Check(filter)) {
    PyErr_SetString(PyExc_TypeError, "filter must be a str (dk expression) or None");
    return NULL;
  }
  dk_scan *scan = make_scan(self, Py_None, filter, -1, 0, 0, 0);
  if (!scan) return NULL;
  ScanObject tmp; /* only scan_files' fields are used */
  tmp.snap = self;
  tmp.scan = scan;
  PyObject *res = scan_files(&tmp, NULL);
  dk_scan_free(scan);
  return res;
}

static PyMethodDef snapshot_methods[] = {
    {"files", (PyCFunction)(void (*)(void))snapshot_files, METH_VARARGS | METH_KEYWORDS,
     "files(filter=None) -> list[dict]: the active data files (path relative to the root "
     "unless absolute, size, modification_time, partition_values, stats, tags, "
     "deletion_vector, row tracking)."},
    {"history", (PyCFunction)(void (*)(void))snapshot_history, METH_VARARGS | METH_KEYWORDS,
     "history(limit=None) -> list[dict]: commitInfo of versions up to this one, newest first."},
    {"tombstones", (PyCFunction)snapshot_tombstones, METH_NOARGS,
     "tombstones() -> list[dict]: removed files kept for vacuum (path, deletion_timestamp, "
     "size, data_change)."},
    {"transactions", (PyCFunction)snapshot_transactions, METH_NOARGS,
     "transactions() -> dict: app id -> {version, last_updated} (the txn actions)."},
    {"scan", (PyCFunction)(void (*)(void))snapshot_scan, METH_VARARGS | METH_KEYWORDS,
     "scan(columns=None, filter=None, limit=None, with_metadata=False, threads=None, read_ahead=0) -> Scan (read_ahead: bytes per reader thread fetched ahead on object stores; 0 = 64 MiB, -1 = none)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef snapshot_getset[] = {
    {"version", (getter)snapshot_version, NULL, "the snapshot's version", NULL},
    {"timestamp", (getter)snapshot_timestamp, NULL, "commit time of the version (ms)", NULL},
    {"table", (getter)snapshot_table, NULL, "the Table", NULL},
    {"schema", (getter)snapshot_schema, NULL, "the logical schema (dk.Schema)", NULL},
    {"partition_columns", (getter)snapshot_partition_columns, NULL, "list of names", NULL},
    {"properties", (getter)snapshot_properties, NULL, "table properties (configuration)", NULL},
    {"protocol", (getter)snapshot_protocol, NULL, "the protocol action as a dict", NULL},
    {"metadata", (getter)snapshot_metadata, NULL, "the metadata action as a dict", NULL},
    {"num_files", (getter)snapshot_num_files, NULL, "number of active files", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SnapshotType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Snapshot",
    .tp_basicsize = sizeof(SnapshotObject),
    .tp_dealloc = (destructor)snapshot_dealloc,
    .tp_repr = (reprfunc)snapshot_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An immutable snapshot of a table at one version.",
    .tp_methods = snapshot_methods,
    .tp_getset = snapshot_getset,
};

/* ---- Parquet writer (dk.write_parquet; dk/parquet.h) ------------------------------------ */

/* Moves the struct out of an Arrow PyCapsule (the capsule's destructor then sees it released). */
static void *capsule_ptr(PyObject *cap, const char *name) {
  if (!cap || cap == Py_None) return NULL;
  return PyCapsule_GetPointer(cap, name);
}

static int codec_from_name(const char *s, dk_parquet_codec *out) {
  static const struct { const char *n; dk_parquet_codec c; } t[] = {
      {"snappy", DK_PARQUET_SNAPPY}, {"none", DK_PARQUET_UNCOMPRESSED},
      {"uncompressed", DK_PARQUET_UNCOMPRESSED}, {"zstd", DK_PARQUET_ZSTD},
      {"gzip", DK_PARQUET_GZIP}, {"lz4_raw", DK_PARQUET_LZ4_RAW}, {"lz4", DK_PARQUET_LZ4_RAW}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(s, t[i].n)) return *out = t[i].c, 1;
  return 0;
}

static PyObject *mod_write_parquet(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *kwlist[] = {K("path"), K("stream"), K("schema"), K("array"), K("compression"),
                           K("compression_level"), K("row_group_rows"), K("row_group_bytes"),
                           K("page_bytes"), K("page_rows"), K("dictionary_bytes"),
                           K("dictionary"), K("data_page_version"), K("statistics"),
                           K("page_index"), K("threads"), K("metadata"),
                           K("num_indexed_cols"), K("stats_columns"), K("string_prefix_length"),
                           K("timestamp_max_ceil"), NULL};
  const char *path, *compression = "snappy", *num_indexed = NULL, *stats_cols = NULL;
  PyObject *stream_cap = Py_None, *schema_cap = Py_None, *array_cap = Py_None, *md = Py_None;
  int level = 0, dictionary = 1, page_version = 1, statistics = 1, page_index = 1, threads = 1;
  int prefix = 0, ts_ceil = 0;
  long long rg_rows = 0, rg_bytes = 0, page_bytes = 0, page_rows = 0, dict_bytes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOOsiLLLLLpipiiOzzip", kwlist, &path,
                                   &stream_cap, &schema_cap, &array_cap, &compression, &level,
                                   &rg_rows, &rg_bytes, &page_bytes, &page_rows, &dict_bytes,
                                   &dictionary, &page_version, &statistics, &page_index,
                                   &threads, &md, &num_indexed, &stats_cols, &prefix, &ts_ceil))
    return NULL;
  dk_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  if (!codec_from_name(compression, &o.codec))
    return raise_msg(InvalidArgument, DK_INVALID,
                     "compression must be one of snappy, zstd, gzip, lz4_raw, none");
  o.compression_level = level;
  o.row_group_rows = rg_rows;
  o.row_group_bytes = rg_bytes;
  o.page_bytes = page_bytes;
  o.page_rows = page_rows;
  o.dictionary_bytes = dict_bytes;
  o.no_dictionary = !dictionary;
  o.data_page_version = page_version;
  o.no_statistics = !statistics;
  o.no_page_index = !page_index;
  o.threads = threads;
  o.alloc = &g_alloc;
  /* key/value metadata: a dict of str -> str */
  PyObject *keys = NULL, *vals = NULL;
  const char **kk = NULL, **vv = NULL;
  if (md != Py_None) {
    if (!PyDict_Check(md)) return raise_msg(InvalidArgument, DK_INVALID, "metadata must be a dict");
    keys = PyDict_Keys(md);
    vals = PyDict_Values(md);
    Py_ssize_t n = keys ? PyList_GET_SIZE(keys) : 0;
    kk = calloc((size_t)n + 1, sizeof *kk);
    vv = calloc((size_t)n + 1, sizeof *vv);
    if (!keys || !vals || !kk || !vv) goto md_fail;
    for (Py_ssize_t i = 0; i < n; i++) {
      kk[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(keys, i));
      PyObject *v = PyList_GET_ITEM(vals, i);
      vv[i] = v == Py_None ? NULL : PyUnicode_AsUTF8(v);
      if (!kk[i] || (v != Py_None && !vv[i])) goto md_fail;
    }
    o.metadata_keys = kk;
    o.metadata_values = vv;
    o.n_metadata = (size_t)n;
  }
  struct ArrowArrayStream *stream = capsule_ptr(stream_cap, "arrow_array_stream");
  struct ArrowSchema *schema = capsule_ptr(schema_cap, "arrow_schema");
  struct ArrowArray *array = capsule_ptr(array_cap, "arrow_array");
  if (PyErr_Occurred()) goto md_fail;
  if (!stream && (!schema || !array)) {
    raise_msg(InvalidArgument, DK_INVALID, "write_parquet needs a stream or a schema + array");
    goto md_fail;
  }
  dk_error err;
  dk_error_init(&err);
  dk_parquet_writer *w = NULL;
  dk_parquet_write_result res;
  memset(&res, 0, sizeof res);
  res.version = DK_PARQUET_WRITE_RESULT_VERSION;
  char *stats = NULL;
  dk_delta_stats_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_DELTA_STATS_OPTIONS_VERSION;
  so.num_indexed_cols = num_indexed;
  so.stats_columns = stats_cols;
  so.string_prefix_length = prefix;
  so.timestamp_max_ceil = ts_ceil;
  dk_status st;
  Py_BEGIN_ALLOW_THREADS
  struct ArrowSchema sc;
  memset(&sc, 0, sizeof sc);
  if (stream) {
    int rc = stream->get_schema(stream, &sc);
    st = DK_OK;
    if (rc) {
      const char *em = stream->get_last_error ? stream->get_last_error(stream) : NULL;
      err.code = st = DK_CALLBACK;
      snprintf(err.message, sizeof err.message, "the input stream's get_schema failed: %s",
               em ? em : strerror(rc));
    }
  } else {
    sc = *schema;
    st = DK_OK;
  }
  if (st == DK_OK) st = dk_parquet_writer_open(&w, NULL, path, &sc, &o, &err);
  if (stream && sc.release) sc.release(&sc);
  if (st == DK_OK)
    st = stream ? dk_parquet_writer_write_stream(w, stream, &err)
                : dk_parquet_writer_write(w, array, &err);
  if (st == DK_OK) st = dk_parquet_writer_close(w, &res, &err);
  if (st == DK_OK) st = dk_parquet_writer_delta_stats(&stats, w, &so, &err);
  dk_parquet_writer_free(w);
  Py_END_ALLOW_THREADS
  free(kk);
  free(vv);
  Py_XDECREF(keys);
  Py_XDECREF(vals);
  if (st != DK_OK) return raise_dk(NULL, &err);
  PyObject *out = Py_BuildValue("{s:L,s:L,s:i,s:s}", "num_rows", (long long)res.num_rows,
                                "file_size", (long long)res.file_size, "num_row_groups",
                                res.num_row_groups, "stats", stats);
  dk_free(stats);
  return out;
md_fail:
  free(kk);
  free(vv);
  Py_XDECREF(keys);
  Py_XDECREF(vals);
  if (!PyErr_Occurred()) PyErr_NoMemory();
  return NULL;
}

/* ---- Changes (change data feed) and Stream (incremental reads) ---------------------------- */

typedef struct {
  PyObject_HEAD
  TableObject *table;
  dk_changes *c;
} ChangesObject;

typedef struct {
  PyObject_HEAD
  TableObject *table;
  dk_stream *s;
} StreamObject;

typedef struct {
  PyObject_HEAD
  StreamObject *stream;
  dk_stream_batch *b;
} BatchObject;

static PyTypeObject ChangesType, StreamType, BatchType;

static PyObject *raise_changes(const dk_error *err) {
  PyObject *type = NULL;
  if (err->code == DK_NOT_FOUND && strstr(err->message, "column")) type = ColumnNotFound;
  else if (err->code == DK_NOT_FOUND) type = DkIOError; /* a missing data or cdc file */
  return raise_dk(type, err);
}

static const char *const change_source_names[] = {"", "cdc", "add", "remove", "dv_deleted",
                                                  "dv_restored"};

static PyObject *change_file_dict(const dk_change_file *f) {
  int src = f->source >= 1 && f->source <= 5 ? (int)f->source : 0;
  PyObject *pv = PyDict_New();
  if (!pv) return NULL;
  for (size_t k = 0; k < f->entry.n_partition_values; k++) {
    const char *v = f->entry.partition_kv[2 * k + 1];
    PyObject *vo = v ? PyUnicode_FromString(v) : (Py_INCREF(Py_None), Py_None);
    if (!vo || PyDict_SetItemString(pv, f->entry.partition_kv[2 * k], vo) < 0) {
      Py_XDECREF(vo);
      Py_DECREF(pv);
      return NULL;
    }
    Py_DECREF(vo);
  }
  return Py_BuildValue("{s:L,s:L,s:s,s:s,s:L,s:N,s:N,s:N}", "commit_version",
                       (long long)f->commit_version, "commit_timestamp",
                       (long long)f->commit_timestamp, "source", change_source_names[src],
                       "path", f->entry.path, "size", (long long)f->entry.size,
                       "partition_values", pv, "deletion_vector", dv_dict(f->entry.dv),
                       "keep_deletion_vector", dv_dict(f->keep_dv));
}

static PyObject *schema_of(dk_status (*get)(struct ArrowSchema *, const void *, dk_error *),
                           const void *obj) {
  struct ArrowSchema out;
  memset(&out, 0, sizeof out);
  dk_error err;
  dk_error_init(&err);
  if (get(&out, obj, &err) != DK_OK) return raise_dk(NULL, &err);
  return schema_capsule(&out);
}

static PyObject *to_reader_of(PyObject *self) {
  PyObject *pa = PyImport_ImportModule("pyarrow");
  if (!pa) return NULL;
  PyObject *cls = PyObject_GetAttrString(pa, "RecordBatchReader");
  Py_DECREF(pa);
  if (!cls) return NULL;
  PyObject *res = PyObject_CallMethod(cls, "from_stream", "O", self);
  Py_DECREF(cls);
  return res;
}

/* -- Changes -- */

static dk_status changes_schema_get(struct ArrowSchema *out, const void *c, dk_error *err) {
  return dk_changes_schema(out, c, err);
}

static PyObject *changes_arrow_c_stream(ChangesObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("requested_schema"), NULL};
  PyObject *requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:__arrow_c_stream__", kwlist, &requested))
    return NULL;
  struct ArrowArrayStream inner;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  Py_BEGIN_ALLOW_THREADS st = dk_changes_read(&inner, self->c, &err);
  Py_END_ALLOW_THREADS
  if (st != DK_OK) return raise_changes(&err);
  return wrap_stream((PyObject *)self, &inner);
}

static PyObject *changes_arrow_c_schema(ChangesObject *self, PyObject *noargs) {
  (void)noargs;
  return schema_of(changes_schema_get, self->c);
}

static PyObject *changes_to_pyarrow(ChangesObject *self, PyObject *noargs) {
  (void)noargs;
  return call_pyarrow("table", (PyObject *)self);
}

static PyObject *changes_to_reader(ChangesObject *self, PyObject *noargs) {
  (void)noargs;
  return to_reader_of((PyObject *)self);
}

static PyObject *changes_files(ChangesObject *self, PyObject *noargs) {
  (void)noargs;
  int64_t n = dk_changes_num_files(self->c);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; l && i < n; i++) {
    dk_change_file f;
    dk_error err;
    dk_error_init(&err);
    PyObject *d = NULL;
    if (dk_changes_file_get(&f, self->c, i, &err) != DK_OK) raise_dk(NULL, &err);
    else d = change_file_dict(&f);
    if (!d) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

static PyObject *changes_start(ChangesObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(dk_changes_start_version(self->c));
}

static PyObject *changes_end(ChangesObject *self, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(dk_changes_end_version(self->c));
}

static void changes_dealloc(ChangesObject *self) {
  dk_changes_free(self->c);
  Py_XDECREF(self->table);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *changes_repr(ChangesObject *self) {
  return PyUnicode_FromFormat("dk.Changes(%R, versions %lld..%lld, files=%lld)",
                              self->table->path, (long long)dk_changes_start_version(self->c),
                              (long long)dk_changes_end_version(self->c),
                              (long long)dk_changes_num_files(self->c));
}

static PyMethodDef changes_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))changes_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "A new PyCapsule 'arrow_array_stream' over the change rows (each call reads afresh)."},
    {"__arrow_c_schema__", (PyCFunction)changes_arrow_c_schema, METH_NOARGS,
     "The output schema as a PyCapsule 'arrow_schema'."},
    {"to_pyarrow", (PyCFunction)changes_to_pyarrow, METH_NOARGS, "pyarrow.table(self)"},
    {"to_reader", (PyCFunction)changes_to_reader, METH_NOARGS,
     "pyarrow.RecordBatchReader.from_stream(self)"},
    {"files", (PyCFunction)changes_files, METH_NOARGS,
     "the change files, commit by commit: dicts of commit_version, commit_timestamp, source "
     "(cdc, add, remove, dv_deleted, dv_restored), path, size, partition_values, "
     "deletion_vector, keep_deletion_vector"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef changes_getset[] = {
    {"start_version", (getter)changes_start, NULL, "the first version of the range", NULL},
    {"end_version", (getter)changes_end, NULL, "the last version of the range", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ChangesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Changes",
    .tp_basicsize = sizeof(ChangesObject),
    .tp_dealloc = (destructor)changes_dealloc,
    .tp_repr = (reprfunc)changes_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The change data feed of a version range; implements __arrow_c_stream__.",
    .tp_methods = changes_methods,
    .tp_getset = changes_getset,
};

static int opt_i64(PyObject *o, const char *name, int64_t *out) {
  if (o == Py_None) return 0;
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < 0) {
    PyErr_Format(PyExc_ValueError, "%s must not be negative (DELTA_ILLEGAL_OPTION)", name);
    return -1;
  }
  *out = v;
  return 1;
}

static PyObject *table_changes(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("start_version"), K("end_version"), K("start_timestamp"),
                           K("end_timestamp"), K("columns"), K("filter"), K("batch_size"), NULL};
  PyObject *sv = Py_None, *ev = Py_None, *sts = Py_None, *ets = Py_None, *columns = Py_None,
           *filter = Py_None, *bs = Py_None;
  if (check_table(self) < 0 ||
      !PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOO:changes", kwlist, &sv, &ev, &sts, &ets,
                                   &columns, &filter, &bs))
    return NULL;
  dk_changes_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHANGES_OPTIONS_VERSION;
  int r;
  if ((r = opt_i64(sv, "start_version", &o.start)) < 0) return NULL;
  if (r) o.start_kind = DK_BOUND_VERSION;
  if ((r = opt_i64(ev, "end_version", &o.end)) < 0) return NULL;
  if (r) o.end_kind = DK_BOUND_VERSION;
  if (sts != Py_None) {
    if (o.start_kind) {
      PyErr_SetString(PyExc_ValueError, "give start_version or start_timestamp, not both");
      return NULL;
    }
    if (timestamp_to_ms(sts, &o.start) < 0) return NULL;
    o.start_kind = DK_BOUND_TIMESTAMP;
  }
  if (ets != Py_None) {
    if (o.end_kind) {
      PyErr_SetString(PyExc_ValueError, "give end_version or end_timestamp, not both");
      return NULL;
    }
    if (timestamp_to_ms(ets, &o.end) < 0) return NULL;
    o.end_kind = DK_BOUND_TIMESTAMP;
  }
  if (!o.start_kind) {
    PyErr_SetString(PyExc_ValueError, "changes: start_version or start_timestamp is required");
    return NULL;
  }
  if (opt_i64(bs, "batch_size", &o.batch_size) < 0) return NULL;
  const char **names;
  size_t n;
  PyObject *seq;
  dk_expr *expr;
  ChangesObject *co = NULL;
  if (columns_and_filter(columns, filter, &names, &n, &seq, &expr) == 0) {
    o.columns = names;
    o.n_columns = n;
    o.filter = expr;
    dk_error err;
    dk_error_init(&err);
    dk_status st;
    dk_changes *c = NULL;
    LOCKED_CALL(self, st = dk_changes_new(&c, self->t, &o, &err));
    if (st != DK_OK) {
      raise_changes(&err);
    } else if (!(co = PyObject_New(ChangesObject, &ChangesType))) {
      dk_changes_free(c);
    } else {
      Py_INCREF(self);
      co->table = self;
      co->c = c;
    }
  }
  columns_and_filter_free(names, seq, expr);
  return (PyObject *)co;
}

/* -- Stream and its batches -- */

static PyObject *offset_json(const dk_stream_offset *o, const char *table_id) {
  char buf[512];
  size_t n = dk_stream_offset_json(buf, sizeof buf, o, table_id);
  if (n >= sizeof buf) {
    char *big = malloc(n + 1);
    if (!big) return PyErr_NoMemory();
    dk_stream_offset_json(big, n + 1, o, table_id);
    PyObject *r = PyUnicode_FromString(big);
    free(big);
    return r;
  }
  return PyUnicode_FromString(buf);
}

/* An offset argument: a JSON str of this stream's table (or None: *has = 0). */
static int offset_arg(StreamObject *s, PyObject *o, dk_stream_offset *out, int *has) {
  *has = 0;
  if (o == Py_None) return 0;
  Py_ssize_t len;
  const char *text = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &len) : NULL;
  if (!text) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an offset is a JSON str");
    return -1;
  }
  dk_error err;
  dk_error_init(&err);
  if (dk_stream_offset_parse(out, text, (size_t)len, dk_stream_table_id(s->s), &err) != DK_OK) {
    raise_dk(NULL, &err);
    return -1;
  }
  *has = 1;
  return 0;
}

static PyObject *batch_wrap(StreamObject *s, dk_stream_batch *b) {
  BatchObject *bo = PyObject_New(BatchObject, &BatchType);
  if (!bo) {
    dk_stream_batch_free(b);
    return NULL;
  }
  Py_INCREF(s);
  bo->stream = s;
  bo->b = b;
  return (PyObject *)bo;
}

static PyObject *batch_arrow_c_stream(BatchObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("requested_schema"), NULL};
  PyObject *requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:__arrow_c_stream__", kwlist, &requested))
    return NULL;
  struct ArrowArrayStream inner;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  Py_BEGIN_ALLOW_THREADS st = dk_stream_batch_read(&inner, self->b, &err);
  Py_END_ALLOW_THREADS
  if (st != DK_OK) return raise_changes(&err);
  return wrap_stream((PyObject *)self, &inner);
}

static dk_status stream_schema_get(struct ArrowSchema *out, const void *s, dk_error *err) {
  return dk_stream_schema(out, s, err);
}

static PyObject *batch_arrow_c_schema(BatchObject *self, PyObject *noargs) {
  (void)noargs;
  return schema_of(stream_schema_get, self->stream->s);
}

static PyObject *batch_to_pyarrow(BatchObject *self, PyObject *noargs) {
  (void)noargs;
  return call_pyarrow("table", (PyObject *)self);
}

static PyObject *batch_files(BatchObject *self, PyObject *noargs) {
  (void)noargs;
  int64_t n = dk_stream_batch_num_files(self->b);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; l && i < n; i++) {
    dk_change_file f;
    dk_error err;
    dk_error_init(&err);
    PyObject *d = NULL;
    if (dk_stream_batch_file(&f, self->b, i, &err) != DK_OK) raise_dk(NULL, &err);
    else d = change_file_dict(&f);
    if (!d) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

static PyObject *batch_start(BatchObject *self, void *closure) {
  (void)closure;
  dk_stream_offset o;
  dk_stream_batch_start(&o, self->b);
  return offset_json(&o, dk_stream_table_id(self->stream->s));
}

static PyObject *batch_end(BatchObject *self, void *closure) {
  (void)closure;
  dk_stream_offset o;
  dk_stream_batch_end(&o, self->b);
  return offset_json(&o, dk_stream_table_id(self->stream->s));
}

static void batch_dealloc(BatchObject *self) {
  dk_stream_batch_free(self->b);
  Py_XDECREF(self->stream);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef batch_methods[] = {
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))batch_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS, "A new PyCapsule 'arrow_array_stream' over the batch's rows."},
    {"__arrow_c_schema__", (PyCFunction)batch_arrow_c_schema, METH_NOARGS,
     "The output schema as a PyCapsule 'arrow_schema'."},
    {"to_pyarrow", (PyCFunction)batch_to_pyarrow, METH_NOARGS, "pyarrow.table(self)"},
    {"files", (PyCFunction)batch_files, METH_NOARGS, "the batch's files (as Changes.files)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef batch_getset[] = {
    {"start_offset", (getter)batch_start, NULL, "the offset the batch starts after (JSON)", NULL},
    {"end_offset", (getter)batch_end, NULL, "the offset the batch ends at (JSON)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.StreamBatch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One micro-batch of a dk.Stream; implements __arrow_c_stream__.",
    .tp_methods = batch_methods,
    .tp_getset = batch_getset,
};

/* The next batch, or None when nothing new is committed. */
static PyObject *stream_next_batch(StreamObject *self) {
  dk_stream_batch *b = NULL;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self->table, st = dk_stream_next(&b, self->s, &err));
  if (st != DK_OK) return raise_changes(&err);
  if (!b) Py_RETURN_NONE;
  return batch_wrap(self, b);
}

static PyObject *pair_of(BatchObject *b) {
  PyObject *off = batch_end(b, NULL);
  if (!off) {
    Py_DECREF(b);
    return NULL;
  }
  return Py_BuildValue("(NN)", off, (PyObject *)b);
}

static PyObject *stream_iternext(StreamObject *self) {
  PyObject *b = stream_next_batch(self);
  if (!b || b == Py_None) {
    Py_XDECREF(b);
    return NULL; /* no exception set: StopIteration */
  }
  return pair_of((BatchObject *)b);
}

static PyObject *stream_poll(StreamObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("timeout"), K("interval"), NULL};
  double timeout = -1, interval = 1.0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|dd:poll", kwlist, &timeout, &interval))
    return NULL;
  if (interval <= 0) interval = 0.01;
  double waited = 0;
  for (;;) {
    PyObject *b = stream_next_batch(self);
    if (!b) return NULL;
    if (b != Py_None) return pair_of((BatchObject *)b);
    Py_DECREF(b);
    if (timeout >= 0 && waited >= timeout) Py_RETURN_NONE;
    PyObject *time = PyImport_ImportModule("time");
    PyObject *r = time ? PyObject_CallMethod(time, "sleep", "d", interval) : NULL;
    Py_XDECREF(time);
    if (!r) return NULL; /* KeyboardInterrupt */
    Py_DECREF(r);
    waited += interval;
  }
}

static PyObject *stream_get_offset(StreamObject *self, void *closure) {
  (void)closure;
  dk_stream_offset o;
  dk_stream_offset_get(&o, self->s);
  return offset_json(&o, dk_stream_table_id(self->s));
}

static PyObject *stream_table_id(StreamObject *self, void *closure) {
  (void)closure;
  return PyUnicode_FromString(dk_stream_table_id(self->s));
}

static PyObject *stream_latest_offset(StreamObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("start"), K("max_files"), K("max_bytes"), NULL};
  PyObject *start = Py_None;
  long long mf = 0, mb = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OLL:latest_offset", kwlist, &start, &mf, &mb))
    return NULL;
  dk_stream_offset from, out;
  int has_from, has = 0;
  if (offset_arg(self, start, &from, &has_from) < 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self->table, st = dk_stream_latest_offset(&out, &has, self->s,
                                                         has_from ? &from : NULL, mf, mb, &err));
  if (st != DK_OK) return raise_changes(&err);
  if (!has) Py_RETURN_NONE;
  return offset_json(&out, dk_stream_table_id(self->s));
}

static PyObject *stream_batch_between(StreamObject *self, PyObject *args) {
  PyObject *start, *end;
  if (!PyArg_ParseTuple(args, "OO:batch_between", &start, &end)) return NULL;
  dk_stream_offset a, b;
  int has_a, has_b;
  if (offset_arg(self, start, &a, &has_a) < 0 || offset_arg(self, end, &b, &has_b) < 0)
    return NULL;
  if (!has_b) {
    PyErr_SetString(PyExc_ValueError, "batch_between needs an end offset");
    return NULL;
  }
  dk_stream_batch *batch = NULL;
  dk_error err;
  dk_error_init(&err);
  dk_status st;
  LOCKED_CALL(self->table, st = dk_stream_batch_between(&batch, self->s, has_a ? &a : NULL, &b,
                                                         &err));
  if (st != DK_OK) return raise_changes(&err);
  return batch_wrap(self, batch);
}

static PyObject *stream_arrow_c_schema(StreamObject *self, PyObject *noargs) {
  (void)noargs;
  return schema_of(stream_schema_get, self->s);
}

static PyObject *stream_self(PyObject *self) {
  Py_INCREF(self);
  return self;
}

static void stream_dealloc(StreamObject *self) {
  dk_stream_free(self->s);
  Py_XDECREF(self->table);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef stream_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))stream_poll, METH_VARARGS | METH_KEYWORDS,
     "poll(timeout=None, interval=1.0) -> (offset, batch): waits for the next batch (None "
     "after timeout seconds)"},
    {"latest_offset", (PyCFunction)(void (*)(void))stream_latest_offset,
     METH_VARARGS | METH_KEYWORDS,
     "latest_offset(start=None, max_files=0, max_bytes=0) -> the offset the next batch after "
     "`start` would end at (Spark's latestOffset), or None; the stream does not move"},
    {"batch_between", (PyCFunction)stream_batch_between, METH_VARARGS,
     "batch_between(start, end) -> the batch of files after `start` up to `end` (Spark's "
     "planInputPartitions); the stream does not move"},
    {"__arrow_c_schema__", (PyCFunction)stream_arrow_c_schema, METH_NOARGS,
     "The schema of the batches as a PyCapsule 'arrow_schema'."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef stream_getset[] = {
    {"offset", (getter)stream_get_offset, NULL,
     "where the stream is (JSON): after the last batch, or its start", NULL},
    {"table_id", (getter)stream_table_id, NULL, "the table id offsets carry", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dk.Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A table read as micro-batches by offset: iterating yields (end offset, batch) "
              "until nothing new is committed; iterate again (or poll()) later.",
    .tp_iter = stream_self,
    .tp_iternext = (iternextfunc)stream_iternext,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

static PyObject *table_stream(TableObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {K("starting_version"), K("starting_timestamp"), K("resume_offset"),
                           K("max_files"), K("max_bytes"), K("available_now"),
                           K("ignore_deletes"), K("ignore_changes"), K("skip_change_commits"),
                           K("allow_data_loss"), K("exclude_regex"), K("change_data_feed"),
                           K("columns"), K("filter"), K("max_initial_snapshot_files"),
                           K("batch_size"), NULL};
  PyObject *sv = Py_None, *sts = Py_None, *resume = Py_None, *mf = Py_None, *mb = Py_None,
           *excl = Py_None, *columns = Py_None, *filter = Py_None, *maxinit = Py_None,
           *bs = Py_None;
  int avail = 0, idel = 0, ich = 0, skip = 0, loss = 0, cdf = 0;
  if (check_table(self) < 0 ||
      !PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOpppppOpOOOO:stream", kwlist, &sv, &sts,
                                   &resume, &mf, &mb, &avail, &idel, &ich, &skip, &loss, &excl,
                                   &cdf, &columns, &filter, &maxinit, &bs))
    return NULL;
  dk_stream_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_STREAM_OPTIONS_VERSION;
  o.start = DK_STREAM_FROM_SNAPSHOT;
  if (sv != Py_None && sts != Py_None) {
    PyErr_SetString(PyExc_ValueError, "give starting_version or starting_timestamp, not both "
                                      "(DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET)");
    return NULL;
  }
  if (PyUnicode_Check(sv)) {
    if (PyUnicode_CompareWithASCIIString(sv, "latest") != 0) {
      PyErr_SetString(PyExc_ValueError, "starting_version is a version or 'latest'");
      return NULL;
    }
    o.start = DK_STREAM_FROM_LATEST;
  } else if (opt_i64(sv, "starting_version", &o.starting_version) > 0) {
    o.start = DK_STREAM_FROM_VERSION;
  } else if (PyErr_Occurred()) {
    return NULL;
  }
  if (sts != Py_None) {
    if (timestamp_to_ms(sts, &o.starting_timestamp_ms) < 0) return NULL;
    o.start = DK_STREAM_FROM_TIMESTAMP;
  }
  if (opt_i64(mf, "max_files", &o.max_files) < 0 || opt_i64(mb, "max_bytes", &o.max_bytes) < 0 ||
      opt_i64(maxinit, "max_initial_snapshot_files", &o.max_initial_snapshot_files) < 0 ||
      opt_i64(bs, "batch_size", &o.batch_size) < 0)
    return NULL;
  if ((mf != Py_None && o.max_files == 0) || (mb != Py_None && o.max_bytes == 0)) {
    PyErr_SetString(PyExc_ValueError,
                    "max_files and max_bytes must be positive (DELTA_ILLEGAL_OPTION)");
    return NULL;
  }
  if (resume != Py_None && !PyUnicode_Check(resume)) {
    PyErr_SetString(PyExc_TypeError, "resume_offset is a JSON str");
    return NULL;
  }
  if (excl != Py_None && !PyUnicode_Check(excl)) {
    PyErr_SetString(PyExc_TypeError, "exclude_regex is a str");
    return NULL;
  }
  o.resume_offset = resume != Py_None ? PyUnicode_AsUTF8(resume) : NULL;
  o.exclude_regex = excl != Py_None ? PyUnicode_AsUTF8(excl) : NULL;
  if ((resume != Py_None && !o.resume_offset) || (excl != Py_None && !o.exclude_regex))
    return NULL;
  o.available_now = avail;
  o.ignore_deletes = idel;
  o.ignore_changes = ich;
  o.skip_change_commits = skip;
  o.allow_data_loss = loss;
  o.change_data_feed = cdf;
  const char **names;
  size_t n;
  PyObject *seq;
  dk_expr *expr;
  StreamObject *so = NULL;
  if (columns_and_filter(columns, filter, &names, &n, &seq, &expr) == 0) {
    o.columns = names;
    o.n_columns = n;
    o.filter = expr;
    dk_error err;
    dk_error_init(&err);
    dk_status st;
    dk_stream *s = NULL;
    LOCKED_CALL(self, st = dk_stream_open(&s, self->t, &o, &err));
    if (st != DK_OK) {
      raise_changes(&err);
    } else if (!(so = PyObject_New(StreamObject, &StreamType))) {
      dk_stream_free(s);
    } else {
      Py_INCREF(self);
      so->table = self;
      so->s = s;
    }
  }
  columns_and_filter_free(names, seq, expr);
  return (PyObject *)so;
}

/* ---- module ------------------------------------------------------------------------------ */

static PyObject *mod_live_allocations(PyObject *m, PyObject *noargs) {
  (void)m;
  (void)noargs;
  return PyLong_FromLongLong(atomic_load(&g_live_blocks));
}

static PyMethodDef module_methods[] = {
    {"_write_table", (PyCFunction)(void (*)(void))mod_write_table, METH_VARARGS | METH_KEYWORDS,
     "_write_table(path, stream_capsule, ...): see dk.write_table"},
    {"schema_from_ddl", mod_schema_from_ddl, METH_VARARGS,
     "schema_from_ddl('a long, b string') -> the Delta schemaString"},
    {"_live_allocations", mod_live_allocations, METH_NOARGS,
     "blocks dk currently holds through this module's allocator (leak checks)"},
    {"_write_parquet", (PyCFunction)(void (*)(void))mod_write_parquet,
     METH_VARARGS | METH_KEYWORDS, "the C half of dk.write_parquet"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef dk_module = {PyModuleDef_HEAD_INIT, "dk._dk",
                                       "CPython binding of libdk (see the dk package).", -1,
                                       module_methods, NULL, NULL, NULL, NULL};

static PyObject *new_exc(PyObject *m, const char *name, PyObject *base1, PyObject *base2,
                         const char *doc) {
  char full[64];
  snprintf(full, sizeof full, "dk.%s", name);
  PyObject *bases = base2 ? PyTuple_Pack(2, base1, base2) : PyTuple_Pack(1, base1);
  if (!bases) return NULL;
  PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
  Py_DECREF(bases);
  if (!e) return NULL;
  if (PyModule_AddObject(m, name, e) < 0) {
    Py_DECREF(e);
    return NULL;
  }
  Py_INCREF(e); /* the module owns one reference, the static pointer another */
  return e;
}

PyMODINIT_FUNC PyInit__dk(void) {
  PyObject *m = PyModule_Create(&dk_module);
  if (!m) return NULL;
  PyObject *json = PyImport_ImportModule("json");
  if (!json) goto fail;
  g_json_loads = PyObject_GetAttrString(json, "loads");
  Py_DECREF(json);
  if (!g_json_loads) goto fail;
  if (!(DkError = new_exc(m, "DkError", PyExc_Exception, NULL,
                          "Base of dk's errors; .status is dk's status name, .code its number.")) ||
      !(TableNotFound = new_exc(m, "TableNotFound", DkError, NULL, "No Delta table at the path.")) ||
      !(VersionNotFound = new_exc(m, "VersionNotFound", DkError, NULL,
                                  "The version or timestamp is outside the table's history.")) ||
      !(ColumnNotFound = new_exc(m, "ColumnNotFound", DkError, PyExc_LookupError,
                                 "A column named in a scan does not exist.")) ||
      !(UnsupportedFeature = new_exc(m, "UnsupportedFeature", DkError, NULL,
                                     "A table feature, type or encoding dk does not implement.")) ||
      !(CorruptTable = new_exc(m, "CorruptTable", DkError, NULL,
                               "A log, checkpoint, Parquet or DV file is malformed.")) ||
      !(DkIOError = new_exc(m, "DkIOError", DkError, PyExc_OSError, "Storage failed.")) ||
      !(InvalidArgument = new_exc(m, "InvalidArgument", DkError, PyExc_ValueError,
                                  "A bad argument, option or filter expression.")) ||
      !(DkMemoryError = new_exc(m, "DkMemoryError", DkError, PyExc_MemoryError,
                                "An allocation inside dk failed.")) ||
      !(Cancelled = new_exc(m, "Cancelled", DkError, NULL, "The operation was cancelled.")) ||
      !(Conflict = new_exc(m, "Conflict", DkError, NULL, "A concurrent commit won.")) ||
      !(ConcurrentModification = new_exc(m, "ConcurrentModification", Conflict, NULL,
                                         "A concurrent commit conflicts with this transaction "
                                         "(delta-spark's ConcurrentModificationException).")) ||
      !(InternalError = new_exc(m, "InternalError", DkError, NULL, "A bug in dk.")))
    goto fail;
  for (int k = 1; k < 8; k++) {
    const char *nm = dk_conflict_kind_name((dk_conflict_kind)k);
    const char *py = k == DK_CONFLICT_MAX_RETRIES ? "MaxCommitRetriesExceeded" : nm;
    if (!(ConflictKinds[k] = new_exc(m, py, ConcurrentModification, NULL, nm))) goto fail;
  }
  if (PyType_Ready(&TableType) < 0 || PyType_Ready(&SnapshotType) < 0 ||
      PyType_Ready(&SchemaType) < 0 || PyType_Ready(&TxnType) < 0)
    goto fail;
  Py_INCREF(&TxnType);
  if (PyModule_AddObject(m, "Transaction", (PyObject *)&TxnType) < 0) goto fail;
  Py_INCREF(&TableType);
  if (PyModule_AddObject(m, "Table", (PyObject *)&TableType) < 0) goto fail;
  Py_INCREF(&SnapshotType);
  if (PyModule_AddObject(m, "Snapshot", (PyObject *)&SnapshotType) < 0) goto fail;
  Py_INCREF(&SchemaType);
  if (PyModule_AddObject(m, "Schema", (PyObject *)&SchemaType) < 0) goto fail;
  if (PyType_Ready(&ScanType) < 0) goto fail;
  Py_INCREF(&ScanType);
  if (PyModule_AddObject(m, "Scan", (PyObject *)&ScanType) < 0) goto fail;
  if (PyType_Ready(&ChangesType) < 0 || PyType_Ready(&StreamType) < 0 ||
      PyType_Ready(&BatchType) < 0)
    goto fail;
  Py_INCREF(&ChangesType);
  if (PyModule_AddObject(m, "Changes", (PyObject *)&ChangesType) < 0) goto fail;
  Py_INCREF(&StreamType);
  if (PyModule_AddObject(m, "Stream", (PyObject *)&StreamType) < 0) goto fail;
  Py_INCREF(&BatchType);
  if (PyModule_AddObject(m, "StreamBatch", (PyObject *)&BatchType) < 0) goto fail;
  if (PyModule_AddIntConstant(m, "DK_VERSION_NUMBER", dk_version_number()) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
