/*
 * dk_jni.c - JNI glue between the dk Spark connector (io.dk.spark.DkNative) and libdk's
 * public C API (include/dk/). Implements: snapshot open/close and metadata accessors, scan
 * planning (columns, filter text, limit, _metadata bits, split sizes), statistics, split
 * serialization, and split reads exported through the Arrow C Data Interface
 * (ArrowSchema / ArrowArrayStream structs allocated on the Java side by arrow-c-data).
 *
 * Tables: whether a table exists at a URI (its log listed through the table's dk_storage,
 * local or object store), a whole DELETE (dk_table_delete) for the connector's
 * SupportsDeleteV2, ALTER TABLE (dk_table_alter) and the history (dk_history_open).
 *
 * Writes: the driver's transaction (txn*: begin on a snapshot or create, reads, removes,
 * metadata, app versions, the writer state for executors, executors' adds staged, rows
 * deleted by (file, row index) for Spark's row-level DELETE / UPDATE / MERGE, commit)
 * and the executors' writer transactions (writer*), which pull Spark's rows as Arrow batches
 * from the Java DataWriter (an ArrowArrayStream whose get_next calls back into Java once per
 * batch) through dk_txn_write.
 *
 * Handles are plain pointers passed as jlong; the Java wrappers (NativeSnapshot,
 * NativeScan) own them and free them exactly once. Object-store tables (s3://, s3a://) are
 * opened, created, written (the driver's transaction and the executors' writers) and their
 * splits read through S3 backends made from the storage options the Java side passes (DkStorageOptions: the session's fs.s3a.* settings in delta-rs's names),
 * one per bucket and option set, kept for the life of the process (g_backends below): the
 * snapshots, their refs and the executors' streams borrow them. Every dk error is thrown as
 * io.dk.spark.DkException(status, context, message); the Java side maps (status, context) to
 * a stable error class.
 */
#include <jni.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/changes.h"
#include "dk/common.h"
#include "dk/dml.h"
#include "dk/expr.h"
#include "dk/history.h"
#include "dk/parquet.h"
#include "dk/scan.h"
#include "dk/snapshot.h"
#include "dk/txn.h"
#include "dk/sys/storage_s3.h"

#include <pthread.h>

#include "io_dk_spark_DkNative.h"
#include "io_dk_spark_DkStreamNative.h"

/* Executor reads allocate through this counting allocator, so tests can check that a failed
 * or abandoned read returns every byte (DkDebug.nativeBytesOutstanding). 16-byte header. */
static atomic_llong g_outstanding;
static atomic_llong g_allocations; /* successful malloc/realloc calls, ever */

static void *count_malloc(void *ctx, size_t size) {
  (void)ctx;
  if (size > SIZE_MAX - 16) return NULL;
  unsigned char *p = malloc(size + 16);
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  atomic_fetch_add(&g_outstanding, (long long)size);
  atomic_fetch_add(&g_allocations, 1);
  return p + 16;
}

static void count_free(void *ctx, void *ptr) {
  (void)ctx;
  if (!ptr) return;
  unsigned char *p = (unsigned char *)ptr - 16;
  size_t size;
  memcpy(&size, p, sizeof size);
  atomic_fetch_sub(&g_outstanding, (long long)size);
  free(p);
}

static void *count_realloc(void *ctx, void *ptr, size_t size) {
  if (!ptr) return count_malloc(ctx, size);
  if (size > SIZE_MAX - 16) return NULL;
  unsigned char *p = (unsigned char *)ptr - 16;
  size_t old;
  memcpy(&old, p, sizeof old);
  unsigned char *q = realloc(p, size + 16);
  if (!q) return NULL;
  memcpy(q, &size, sizeof size);
  atomic_fetch_add(&g_outstanding, (long long)size - (long long)old);
  atomic_fetch_add(&g_allocations, 1);
  return q + 16;
}

static const dk_allocator g_count_alloc = {NULL, count_malloc, count_realloc, count_free};

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_nativeBytesOutstanding(JNIEnv *env,
                                                                         jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)atomic_load(&g_outstanding);
}

/* How many allocations split reads made so far: lets a test show that the reads it checks
 * for leaks did go through the counting allocator. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_nativeAllocations(JNIEnv *env, jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)atomic_load(&g_allocations);
}

/* A snapshot handle keeps its table alive (`table` is NULL in handles made by snapshotRef /
 * snapshotUpdate: the snapshot's own reference keeps the table then). */
typedef struct jni_snapshot {
  dk_table *table;
  dk_snapshot *snap;
} jni_snapshot;

static void throw_dk(JNIEnv *env, int status, int context, const char *msg) {
  if ((*env)->ExceptionCheck(env)) return;
  jclass cls = (*env)->FindClass(env, "io/dk/spark/DkException");
  if (!cls) return;
  jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(IILjava/lang/String;)V");
  if (!ctor) return;
  jstring jmsg = (*env)->NewStringUTF(env, msg ? msg : "");
  if (!jmsg) return;
  jobject ex = (*env)->NewObject(env, cls, ctor, (jint)status, (jint)context, jmsg);
  if (ex) (*env)->Throw(env, (jthrowable)ex);
}

static void throw_err(JNIEnv *env, const dk_error *err, dk_status st, int context) {
  throw_dk(env, (int)st, context, err->message[0] ? err->message : dk_status_str(st));
}

/* Copies a Java string to a malloc'ed NUL-terminated UTF-8 string (NULL -> NULL). */
static char *dup_jstring(JNIEnv *env, jstring s, int *failed) {
  *failed = 0;
  if (!s) return NULL;
  const char *c = (*env)->GetStringUTFChars(env, s, NULL);
  if (!c) {
    *failed = 1;
    return NULL;
  }
  size_t n = strlen(c);
  char *out = malloc(n + 1);
  if (out) memcpy(out, c, n + 1);
  (*env)->ReleaseStringUTFChars(env, s, c);
  if (!out) {
    *failed = 1;
    throw_dk(env, DK_NOMEM, 0, "out of memory");
  }
  return out;
}

/* Throws err as a DkException when st is not DK_OK; returns whether it did. */
static int thrown(JNIEnv *env, dk_status st, const dk_error *err, int context) {
  if (st == DK_OK) return 0;
  throw_err(env, err, st, context);
  return 1;
}

/* Copies a String[] into a malloc'ed, NULL-terminated array of malloc'ed strings (*n of them;
 * a null array gives *out = NULL, *n = 0). A null element stays NULL when allow_null, else it
 * is DK_INVALID with the message `what`. -1, with a Java exception thrown and nothing left to
 * free, on failure. */
static int dup_strings(JNIEnv *env, jobjectArray arr, int allow_null, const char *what,
                       char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!arr) return 0;
  jsize len = (*env)->GetArrayLength(env, arr);
  char **v = calloc((size_t)len + 1, sizeof *v);
  if (!v) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return -1;
  }
  for (jsize i = 0; i < len; i++) {
    int failed = 0;
    jstring js = (jstring)(*env)->GetObjectArrayElement(env, arr, i);
    v[i] = dup_jstring(env, js, &failed);
    (*env)->DeleteLocalRef(env, js);
    if (failed || (!v[i] && !allow_null)) {
      for (jsize k = 0; k < i; k++) free(v[k]);
      free(v);
      if (!failed) throw_dk(env, DK_INVALID, 0, what);
      return -1;
    }
  }
  *out = v;
  *n = (size_t)len;
  return 0;
}

static void free_strings(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

_Static_assert(sizeof(jlong) == sizeof(int64_t), "jlong is 64 bits");

static jlongArray new_long_array(JNIEnv *env, const int64_t *v, jsize n) {
  jlongArray arr = (*env)->NewLongArray(env, n);
  if (arr && n) (*env)->SetLongArrayRegion(env, arr, 0, n, (const jlong *)v);
  return arr;
}

static jobjectArray new_string_array(JNIEnv *env, jsize n) {
  jclass scls = (*env)->FindClass(env, "java/lang/String");
  if (!scls) return NULL;
  return (*env)->NewObjectArray(env, n, scls, NULL);
}

static int set_string(JNIEnv *env, jobjectArray arr, jsize i, const char *v) {
  jstring js = (*env)->NewStringUTF(env, v ? v : "");
  if (!js) return -1;
  (*env)->SetObjectArrayElement(env, arr, i, js);
  (*env)->DeleteLocalRef(env, js);
  return (*env)->ExceptionCheck(env) ? -1 : 0;
}

/* Status 7 (DK_CONFLICT) carries the conflict kind in the context (DkException). */
#define CTX_CONFLICT_BASE 100

/* ---- object-store backends (process-wide) ------------------------------------------------ */

typedef struct jni_backend {
  char *key; /* "uri's bucket\n" then "k=v\n" per option */
  dk_storage *sto;
  struct jni_backend *next;
} jni_backend;
static pthread_mutex_t g_backends_mu = PTHREAD_MUTEX_INITIALIZER;
static jni_backend *g_backends;

/* The backend for an s3:// or s3a:// uri under options kv (key, value, key, value...; NULL:
 * none), made on first use and never freed. NULL with a Java exception thrown on failure. */
static dk_storage *backend_for(JNIEnv *env, const char *uri, jobjectArray kv) {
  jsize n = kv ? (*env)->GetArrayLength(env, kv) / 2 : 0;
  jstring *js = calloc((size_t)(2 * n + 1), sizeof *js);
  const char **str = calloc((size_t)(2 * n + 1), sizeof *str); /* key, value, key, ... */
  const char **keys = calloc((size_t)n + 1, sizeof *keys), **vals = calloc((size_t)n + 1, sizeof *vals);
  int ok = js && str && keys && vals;
  size_t cap = strlen(uri) + 2;
  for (jsize i = 0; ok && i < 2 * n; i++) {
    js[i] = (jstring)(*env)->GetObjectArrayElement(env, kv, i);
    str[i] = js[i] ? (*env)->GetStringUTFChars(env, js[i], NULL) : NULL;
    ok = str[i] != NULL;
    if (ok) cap += strlen(str[i]) + 1;
  }
  char *key = ok ? malloc(cap) : NULL;
  dk_storage *out = NULL;
  if (key) {
    const char *b = strstr(uri, "://") + 3, *slash = strchr(b, '/');
    size_t len = slash ? (size_t)(slash - b) : strlen(b);
    memcpy(key, b, len);
    key[len++] = '\n';
    key[len] = 0;
    for (jsize i = 0; i < n; i++) {
      keys[i] = str[2 * i];
      vals[i] = str[2 * i + 1];
      len += (size_t)sprintf(key + len, "%s=%s\n", keys[i], vals[i]);
    }
    pthread_mutex_lock(&g_backends_mu);
    for (jni_backend *e = g_backends; e && !out; e = e->next)
      if (!strcmp(e->key, key)) out = e->sto;
    if (!out) {
      dk_error err;
      dk_error_init(&err);
      jni_backend *e = calloc(1, sizeof *e);
      dk_status st = e ? dk_storage_s3_for_uri(&e->sto, uri, (size_t)n, keys, vals, NULL, &err)
                       : DK_NOMEM;
      if (st == DK_OK) {
        e->key = key;
        key = NULL;
        e->next = g_backends;
        g_backends = e;
        out = e->sto;
      } else {
        free(e);
        if (!err.message[0]) throw_dk(env, st, 0, "out of memory");
        else throw_err(env, &err, st, 0);
      }
    }
    pthread_mutex_unlock(&g_backends_mu);
  } else if (!(*env)->ExceptionCheck(env)) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
  }
  for (jsize i = 0; js && str && i < 2 * n; i++) {
    if (str[i]) (*env)->ReleaseStringUTFChars(env, js[i], str[i]);
    if (js[i]) (*env)->DeleteLocalRef(env, js[i]);
  }
  free(js);
  free(str);
  free(keys);
  free(vals);
  free(key);
  return out;
}

/* ---- snapshots --------------------------------------------------------------------------- */

/* Opens the table at uri: an object-store URI through the backend for its storage options
 * (backend_for), anything else on the local backend; confine: dk_table_options.confine_paths.
 * context: DkException's for the failure (1: opening the table). */
static dk_status open_table_at(JNIEnv *env, dk_table **out, const char *uri,
                               jobjectArray storage_options, int confine) {
  *out = NULL;
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.confine_paths = confine;
  if (dk_storage_s3_is_uri(uri) && !(to.storage = backend_for(env, uri, storage_options)))
    return DK_IO;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_table_open(out, uri, &to, &err);
  thrown(env, st, &err, 1);
  return st;
}

/* open_table_at of a Java string. */
static dk_status open_jtable(JNIEnv *env, dk_table **out, jstring uri,
                             jobjectArray storage_options, int confine) {
  int failed = 0;
  char *c = dup_jstring(env, uri, &failed);
  if (failed) return DK_NOMEM;
  dk_status st = open_table_at(env, out, c, storage_options, confine);
  free(c);
  return st;
}

static jlong snapshot_open(JNIEnv *env, jstring uri, jint mode, jlong version, jlong ts_ms,
                           jobjectArray storage_options, jboolean confine) {
  jni_snapshot *h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return 0;
  }
  if (open_jtable(env, &h->table, uri, storage_options, confine ? 1 : 0) != DK_OK) {
    free(h);
    return 0;
  }
  dk_error err;
  dk_error_init(&err);
  dk_snapshot_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  so.at_version = mode == 1 ? (int64_t)version : -1;
  so.by_timestamp = mode == 2;
  so.timestamp_ms = (int64_t)ts_ms;
  dk_status st = dk_snapshot_open(&h->snap, h->table, &so, &err);
  if (thrown(env, st, &err, 2 + (int)mode)) {
    dk_table_free(h->table);
    free(h);
    return 0;
  }
  return (jlong)(intptr_t)h;
}

/* storage_options: an object-store table's (key, value, ...), or null; confine_paths:
 * dk_table_options.confine_paths (the connector's confinePaths option). */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_snapshotOpen(
    JNIEnv *env, jclass cls, jstring uri, jint mode, jlong version, jlong ts_ms,
    jobjectArray storage_options, jboolean confine_paths) {
  (void)cls;
  return snapshot_open(env, uri, mode, version, ts_ms, storage_options, confine_paths);
}

/* A second handle on the same snapshot (the table stays alive through the snapshot's own
 * reference), for the connector's snapshot cache (SnapshotCache.java). */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_snapshotRef(JNIEnv *env, jclass cls,
                                                               jlong handle) {
  (void)cls;
  jni_snapshot *h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return 0;
  }
  h->snap = dk_snapshot_ref(((jni_snapshot *)(intptr_t)handle)->snap);
  return (jlong)(intptr_t)h;
}

/* A new handle on the table's latest snapshot, built from `handle`'s by reading only the
 * commits after it (dk_snapshot_update; a full load when the log was rewritten), or 0 when
 * nothing changed. `handle` stays valid. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_snapshotUpdate(JNIEnv *env, jclass cls,
                                                                  jlong handle) {
  (void)cls;
  jni_snapshot *h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return 0;
  }
  dk_error err;
  dk_error_init(&err);
  dk_snapshot *old = ((jni_snapshot *)(intptr_t)handle)->snap;
  dk_status st = dk_snapshot_update(&h->snap, old, &err);
  if (st != DK_OK) {
    free(h);
    throw_err(env, &err, st, 2);
    return 0;
  }
  if (h->snap == old) { /* nothing new */
    dk_snapshot_free(h->snap);
    free(h);
    return 0;
  }
  return (jlong)(intptr_t)h;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_snapshotFree(JNIEnv *env, jclass cls,
                                                              jlong handle) {
  (void)env;
  (void)cls;
  jni_snapshot *h = (jni_snapshot *)(intptr_t)handle;
  if (!h) return;
  dk_snapshot_free(h->snap);
  dk_table_free(h->table);
  free(h);
}

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_snapshotVersion(JNIEnv *env, jclass cls,
                                                                  jlong handle) {
  (void)env;
  (void)cls;
  return (jlong)dk_snapshot_version(((jni_snapshot *)(intptr_t)handle)->snap);
}

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_snapshotTimestamp(JNIEnv *env, jclass cls,
                                                                    jlong handle) {
  (void)env;
  (void)cls;
  return (jlong)dk_snapshot_timestamp(((jni_snapshot *)(intptr_t)handle)->snap);
}

JNIEXPORT jboolean JNICALL Java_io_dk_spark_DkNative_snapshotHasFeature(JNIEnv *env,
                                                                        jclass cls,
                                                                        jlong handle,
                                                                        jstring name) {
  (void)cls;
  int failed = 0;
  char *c = dup_jstring(env, name, &failed);
  if (failed || !c) return JNI_FALSE;
  int r = dk_snapshot_has_feature(((jni_snapshot *)(intptr_t)handle)->snap, c);
  free(c);
  return r ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jobjectArray JNICALL Java_io_dk_spark_DkNative_snapshotPartitionColumns(JNIEnv *env,
                                                                                  jclass cls,
                                                                                  jlong handle) {
  (void)cls;
  const dk_metadata *md = dk_snapshot_metadata(((jni_snapshot *)(intptr_t)handle)->snap);
  jobjectArray arr = new_string_array(env, (jsize)md->n_partition_columns);
  if (!arr) return NULL;
  for (size_t i = 0; i < md->n_partition_columns; i++)
    if (set_string(env, arr, (jsize)i, md->partition_columns[i]) != 0) return NULL;
  return arr;
}

/* The raw Delta schemaString (NULL when absent): the connector takes variant and collated
 * string types from it, which the Arrow schema cannot express. */
JNIEXPORT jstring JNICALL Java_io_dk_spark_DkNative_snapshotSchemaString(JNIEnv *env, jclass cls,
                                                                        jlong handle) {
  (void)cls;
  const dk_metadata *md = dk_snapshot_metadata(((jni_snapshot *)(intptr_t)handle)->snap);
  return md->schema_string ? (*env)->NewStringUTF(env, md->schema_string) : NULL;
}

/* Table properties as alternating keys and values. */
JNIEXPORT jobjectArray JNICALL Java_io_dk_spark_DkNative_snapshotProperties(JNIEnv *env,
                                                                            jclass cls,
                                                                            jlong handle) {
  (void)cls;
  const dk_metadata *md = dk_snapshot_metadata(((jni_snapshot *)(intptr_t)handle)->snap);
  jobjectArray arr = new_string_array(env, (jsize)(2 * md->n_configuration));
  if (!arr) return NULL;
  for (size_t i = 0; i < md->n_configuration; i++) {
    if (set_string(env, arr, (jsize)(2 * i), md->config_keys[i]) != 0) return NULL;
    if (set_string(env, arr, (jsize)(2 * i + 1), md->config_values[i]) != 0) return NULL;
  }
  return arr;
}

/* Exports the logical schema into a Java-allocated ArrowSchema at address `out`. */
JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_snapshotArrowSchema(JNIEnv *env, jclass cls,
                                                                     jlong handle, jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_snapshot_arrow_schema((struct ArrowSchema *)(intptr_t)out,
                                          ((jni_snapshot *)(intptr_t)handle)->snap, 0, &err);
  thrown(env, st, &err, 0);
}

/* ---- tables ------------------------------------------------------------------------------ */

static dk_status is_log_file(const dk_file_info *fi, void *payload) {
  const char *name = strrchr(fi->path, '/');
  name = name ? name + 1 : fi->path;
  size_t n = 0;
  while (name[n] >= '0' && name[n] <= '9') n++;
  if (n != 20 || name[20] != '.') return DK_OK;
  *(int *)payload = 1;
  return DK_CANCELLED; /* found one: stop listing */
}

/* Whether a Delta table exists at uri: its _delta_log lists a commit or checkpoint file,
 * through the storage the table is read with (local, or the object store's backend for
 * storage_options). A missing root or log is false; other failures throw. */
JNIEXPORT jboolean JNICALL Java_io_dk_spark_DkNative_tableExists(JNIEnv *env, jclass cls,
                                                                 jstring uri,
                                                                 jobjectArray storage_options) {
  (void)cls;
  int failed = 0;
  char *c = dup_jstring(env, uri, &failed);
  if (failed || !c) return JNI_FALSE;
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_storage *local = NULL, *sto = NULL;
  int found = 0;
  dk_status st = DK_OK;
  if (dk_storage_s3_is_uri(c)) {
    if (!(sto = backend_for(env, c, storage_options))) st = DK_IO;
  } else {
    st = dk_storage_local_new(&local, NULL, &err);
    sto = local;
  }
  if (st == DK_OK) {
    dk_table_options to;
    memset(&to, 0, sizeof to);
    to.version = DK_TABLE_OPTIONS_VERSION;
    to.storage = local ? NULL : sto; /* a local root is resolved by the table's own backend */
    st = dk_table_open(&t, c, &to, &err);
  }
  if (st == DK_OK) {
    const char *root = dk_table_root(t);
    size_t n = strlen(root);
    char *log = malloc(n + sizeof "/_delta_log");
    if (!log) {
      st = DK_NOMEM;
    } else {
      memcpy(log, root, n);
      memcpy(log + n, "/_delta_log", sizeof "/_delta_log");
      st = sto->list_from(sto, log, NULL, is_log_file, &found, &err);
      free(log);
    }
    if (st == DK_CANCELLED && found) st = DK_OK;
  }
  if (st == DK_NOT_FOUND) st = DK_OK; /* no root or no log: no table */
  if (!(*env)->ExceptionCheck(env)) thrown(env, st, &err, 0);
  dk_table_free(t);
  if (local) local->free(local);
  free(c);
  return found ? JNI_TRUE : JNI_FALSE;
}

/* DELETE FROM the table at uri WHERE predicate (dk_expr_parse text; null = every row): one
 * dk_table_delete commit on its latest version. Returns {committed version (-1: no row
 * matched, nothing committed), deleted rows, removed files, added files, DVs added}. */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_tableDelete(JNIEnv *env, jclass cls,
                                                                   jstring uri,
                                                                   jobjectArray storage_options,
                                                                   jboolean confine_paths,
                                                                   jstring predicate,
                                                                   jstring engine) {
  (void)cls;
  int f1 = 0, f2 = 0;
  char *pred = dup_jstring(env, predicate, &f1), *eng = dup_jstring(env, engine, &f2);
  dk_table *t = NULL;
  jlongArray r = NULL;
  if (!f1 && !f2 && open_jtable(env, &t, uri, storage_options, confine_paths ? 1 : 0) == DK_OK) {
    dk_error err;
    dk_error_init(&err);
    dk_txn_options to;
    memset(&to, 0, sizeof to);
    to.version = DK_TXN_OPTIONS_VERSION;
    to.engine_info = eng;
    dk_dml_metrics m;
    memset(&m, 0, sizeof m);
    m.version = DK_DML_METRICS_VERSION;
    dk_commit_result c;
    memset(&c, 0, sizeof c);
    c.version = DK_COMMIT_RESULT_VERSION;
    dk_status st = dk_table_delete(&m, &c, t, pred, NULL, &to, &err);
    if (!thrown(env, st, &err, st == DK_CONFLICT ? CTX_CONFLICT_BASE + (int)c.conflict : 0)) {
      int64_t v[5] = {c.committed_version, m.num_deleted_rows, m.num_removed_files,
                      m.num_added_files, m.num_deletion_vectors_added};
      r = new_long_array(env, v, 5);
    }
  }
  dk_table_free(t);
  free(pred);
  free(eng);
  return r;
}

/* ALTER TABLE on snapshot `snap` (dk_table_alter, one commit). kind: dk_alter_kind; props:
 * SET's key, value pairs or UNSET's keys; columns: path_lens[i] parts of path_parts each,
 * and col_info[4 * i ..]: type JSON, comment, after ("" = FIRST), new name (each may be
 * null). Returns the committed version. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_tableAlter(
    JNIEnv *env, jclass cls, jlong snap, jint kind, jobjectArray props, jintArray path_lens,
    jobjectArray path_parts, jobjectArray col_info, jboolean if_exists, jstring engine) {
  (void)cls;
  int f1 = 0;
  char *eng = dup_jstring(env, engine, &f1);
  char **pv = NULL, **parts = NULL, **info = NULL;
  size_t np = 0, nparts = 0, ninfo = 0;
  jsize ncols = path_lens ? (*env)->GetArrayLength(env, path_lens) : 0;
  jint *lens = ncols ? calloc((size_t)ncols, sizeof *lens) : NULL;
  dk_alter_column *cols = ncols ? calloc((size_t)ncols, sizeof *cols) : NULL;
  jlong out = -1;
  if (f1 || (ncols && (!lens || !cols))) {
    if (!f1) throw_dk(env, DK_NOMEM, 0, "out of memory");
    goto done;
  }
  if (dup_strings(env, props, 0, "null table property", &pv, &np) ||
      dup_strings(env, path_parts, 0, "null column name", &parts, &nparts) ||
      dup_strings(env, col_info, 1, "", &info, &ninfo))
    goto done;
  if (ncols) (*env)->GetIntArrayRegion(env, path_lens, 0, ncols, lens);
  size_t at = 0;
  for (jsize i = 0; i < ncols; i++) {
    if (lens[i] < 0 || at + (size_t)lens[i] > nparts || 4 * (size_t)i + 3 >= ninfo) {
      throw_dk(env, DK_INVALID, 0, "tableAlter: column paths do not match their lengths");
      goto done;
    }
    cols[i].n_path = (size_t)lens[i];
    cols[i].path = (const char *const *)(parts + at);
    at += (size_t)lens[i];
    cols[i].type_json = info[4 * i];
    cols[i].nullable = 1;
    cols[i].comment = info[4 * i + 1];
    cols[i].after = info[4 * i + 2];
    cols[i].new_name = info[4 * i + 3];
  }
  dk_alter_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_ALTER_OPTIONS_VERSION;
  o.kind = (dk_alter_kind)kind;
  o.n_properties = kind == DK_ALTER_SET_PROPERTIES ? np / 2 : np;
  o.properties = (const char *const *)pv;
  o.n_columns = (size_t)ncols;
  o.columns = cols;
  o.if_exists = if_exists ? 1 : 0;
  o.txn.version = DK_TXN_OPTIONS_VERSION;
  o.txn.engine_info = eng;
  dk_commit_result c;
  memset(&c, 0, sizeof c);
  c.version = DK_COMMIT_RESULT_VERSION;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_table_alter(&c, ((jni_snapshot *)(intptr_t)snap)->snap, &o, &err);
  if (!thrown(env, st, &err, st == DK_CONFLICT ? CTX_CONFLICT_BASE + (int)c.conflict : 0))
    out = c.committed_version;
done:
  free(eng);
  free_strings(pv, np);
  free_strings(parts, nparts);
  free_strings(info, ninfo);
  free(lens);
  free(cols);
  return out;
}

/* The table's history (dk_history_open, newest first; limit <= 0 = all) as {version, commit
 * time in ms, commitInfo JSON} string triples. */
JNIEXPORT jobjectArray JNICALL Java_io_dk_spark_DkNative_tableHistory(JNIEnv *env, jclass cls,
                                                                      jstring uri,
                                                                      jobjectArray storage_options,
                                                                      jlong limit) {
  (void)cls;
  dk_table *t = NULL;
  jobjectArray r = NULL;
  if (open_jtable(env, &t, uri, storage_options, 0) != DK_OK) return NULL;
  dk_error err;
  dk_error_init(&err);
  dk_history *h = NULL;
  dk_status st = dk_history_open(&h, t, (int64_t)limit, &err);
  if (!thrown(env, st, &err, 0)) {
    size_t n = dk_history_count(h);
    r = new_string_array(env, (jsize)(3 * n));
    for (size_t i = 0; r && i < n; i++) {
      int64_t v, ts;
      const char *ci;
      char num[2][24];
      dk_history_entry(&v, &ts, &ci, h, i);
      snprintf(num[0], sizeof num[0], "%lld", (long long)v);
      snprintf(num[1], sizeof num[1], "%lld", (long long)ts);
      if (set_string(env, r, (jsize)(3 * i), num[0]) ||
          set_string(env, r, (jsize)(3 * i + 1), num[1]) ||
          set_string(env, r, (jsize)(3 * i + 2), ci ? ci : "{}"))
        r = NULL;
    }
  }
  dk_history_free(h);
  dk_table_free(t);
  return r;
}

/* ---- scans --------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_scanNew(JNIEnv *env, jclass cls,
                                                          jlong handle, jobjectArray columns,
                                                          jstring filter, jlong limit,
                                                          jint meta, jlong split_target,
                                                          jlong open_cost) {
  (void)cls;
  jni_snapshot *h = (jni_snapshot *)(intptr_t)handle;
  dk_error err;
  dk_error_init(&err);
  dk_scan_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_SCAN_OPTIONS_VERSION;
  o.limit = (int64_t)limit;
  o.metadata_fields = (unsigned)meta;
  o.split_target_bytes = (int64_t)split_target;
  o.split_open_cost_bytes = (int64_t)open_cost;

  size_t ncol = 0;
  char **cols = NULL;
  dk_expr *expr = NULL;
  dk_scan *scan = NULL;
  int failed = 0;
  if (dup_strings(env, columns, 0, "null column name", &cols, &ncol) != 0) return 0;
  if (columns) {
    o.columns = (const char *const *)cols;
    o.n_columns = ncol;
  }
  if (filter) {
    char *ftext = dup_jstring(env, filter, &failed);
    if (failed) goto done;
    dk_status st = dk_expr_parse(&expr, ftext, &err);
    free(ftext);
    if (thrown(env, st, &err, 0)) goto done;
    o.filter = expr;
  }
  {
    dk_status st = dk_scan_new(&scan, h->snap, &o, &err);
    if (st != DK_OK) {
      scan = NULL;
      throw_err(env, &err, st, 0);
      goto done;
    }
    st = dk_scan_plan_splits(scan, &err);
    if (st != DK_OK) {
      dk_scan_free(scan);
      scan = NULL;
      throw_err(env, &err, st, 0);
    }
  }
done:
  dk_expr_free(expr);
  free_strings(cols, ncol);
  return (jlong)(intptr_t)scan;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_scanFree(JNIEnv *env, jclass cls, jlong scan) {
  (void)env;
  (void)cls;
  dk_scan_free((dk_scan *)(intptr_t)scan);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_scanSchema(JNIEnv *env, jclass cls, jlong scan,
                                                            jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st =
      dk_scan_schema((struct ArrowSchema *)(intptr_t)out, (const dk_scan *)(intptr_t)scan, &err);
  thrown(env, st, &err, 0);
}

JNIEXPORT jstring JNICALL Java_io_dk_spark_DkNative_scanResidual(JNIEnv *env, jclass cls,
                                                                 jlong scan) {
  (void)cls;
  const dk_expr *r = dk_scan_residual((const dk_scan *)(intptr_t)scan);
  if (!r) return NULL;
  dk_error err;
  dk_error_init(&err);
  char *s = NULL;
  dk_status st = dk_expr_to_string(&s, r, &err);
  if (thrown(env, st, &err, 0)) return NULL;
  jstring js = (*env)->NewStringUTF(env, s);
  dk_expr_string_free(s);
  return js;
}

/* files_total, pruned_partition, pruned_stats, pruned_limit, files_selected, bytes_selected,
 * rows_estimated, splits */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_scanStats(JNIEnv *env, jclass cls,
                                                                 jlong scan) {
  (void)cls;
  const dk_scan *s = (const dk_scan *)(intptr_t)scan;
  dk_scan_stats st;
  dk_scan_stats_get(&st, s);
  int64_t v[8] = {st.files_total,    st.files_pruned_partition, st.files_pruned_stats,
                st.files_pruned_limit, st.files_selected,      st.bytes_selected,
                st.rows_estimated, dk_scan_num_splits(s)};
  jlongArray arr = (*env)->NewLongArray(env, 8);
  if (!arr) return NULL;
  (*env)->SetLongArrayRegion(env, arr, 0, 8, v);
  return arr;
}

JNIEXPORT jobjectArray JNICALL Java_io_dk_spark_DkNative_scanSplits(JNIEnv *env, jclass cls,
                                                                    jlong scan) {
  (void)cls;
  const dk_scan *s = (const dk_scan *)(intptr_t)scan;
  int64_t n = dk_scan_num_splits(s);
  jclass bcls = (*env)->FindClass(env, "[B");
  if (!bcls) return NULL;
  jobjectArray arr = (*env)->NewObjectArray(env, (jsize)n, bcls, NULL);
  if (!arr) return NULL;
  for (int64_t i = 0; i < n; i++) {
    dk_error err;
    dk_error_init(&err);
    uint8_t *bytes = NULL;
    size_t len = 0;
    dk_status st = dk_scan_split_serialize(&bytes, &len, s, i, &err);
    if (thrown(env, st, &err, 0)) return NULL;
    jbyteArray b = (*env)->NewByteArray(env, (jsize)len);
    if (b) (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte *)bytes);
    dk_free(bytes);
    if (!b) return NULL;
    (*env)->SetObjectArrayElement(env, arr, (jsize)i, b);
    (*env)->DeleteLocalRef(env, b);
  }
  return arr;
}

/* ---- executor side ---------------------------------------------------------------------- */

/* Opens a serialized split as an ArrowArrayStream written into Java-allocated memory `out`. */
JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_splitRead(JNIEnv *env, jclass cls,
                                                           jbyteArray split, jlong out) {
  (void)cls;
  jsize len = (*env)->GetArrayLength(env, split);
  jbyte *bytes = (*env)->GetByteArrayElements(env, split, NULL);
  if (!bytes) return;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_split_read((struct ArrowArrayStream *)(intptr_t)out, (const uint8_t *)bytes,
                               (size_t)len, &g_count_alloc, &err);
  (*env)->ReleaseByteArrayElements(env, split, bytes, JNI_ABORT);
  thrown(env, st, &err, 0);
}

/* splitRead of a split of the object-store table at `root`, through the backend for its
 * bucket under storage_options (the driver's, carried in the partition). */
JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_splitReadWith(JNIEnv *env, jclass cls,
                                                               jbyteArray split, jlong out,
                                                               jstring root,
                                                               jobjectArray storage_options) {
  (void)cls;
  int failed = 0;
  char *croot = dup_jstring(env, root, &failed);
  if (failed) return;
  dk_split_read_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_SPLIT_READ_OPTIONS_VERSION;
  o.alloc = &g_count_alloc;
  o.storage = dk_storage_s3_is_uri(croot) ? backend_for(env, croot, storage_options) : NULL;
  int need = dk_storage_s3_is_uri(croot);
  free(croot);
  if (need && !o.storage) return;
  jsize len = (*env)->GetArrayLength(env, split);
  jbyte *bytes = (*env)->GetByteArrayElements(env, split, NULL);
  if (!bytes) return;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_split_read_v2((struct ArrowArrayStream *)(intptr_t)out, (const uint8_t *)bytes,
                                  (size_t)len, &o, &err);
  (*env)->ReleaseByteArrayElements(env, split, bytes, JNI_ABORT);
  thrown(env, st, &err, 0);
}

/* Parses a filter text and binds it against the snapshot's logical schema: returns NULL when
 * dk can evaluate it, else dk's message (the predicate then stays a post-scan filter). */
JNIEXPORT jstring JNICALL Java_io_dk_spark_DkNative_exprBindCheck(JNIEnv *env, jclass cls,
                                                                  jlong handle, jstring text) {
  (void)cls;
  int failed = 0;
  char *c = dup_jstring(env, text, &failed);
  if (failed || !c) return NULL;
  dk_error err;
  dk_error_init(&err);
  dk_expr *e = NULL, *bound = NULL;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  dk_status st = dk_expr_parse(&e, c, &err);
  free(c);
  if (st == DK_OK)
    st = dk_snapshot_arrow_schema(&schema, ((jni_snapshot *)(intptr_t)handle)->snap, 0, &err);
  if (st == DK_OK) st = dk_expr_bind(&bound, e, &schema, &err);
  if (schema.release) schema.release(&schema);
  dk_expr_free(bound);
  dk_expr_free(e);
  if (st == DK_OK) return NULL;
  return (*env)->NewStringUTF(env, err.message[0] ? err.message : dk_status_str(st));
}

/* ---- change data feed and streaming reads (io.dk.spark.DkStreamNative) -------------------
 * Driver and executors alike open the table themselves: the driver plans (dk_changes_new,
 * dk_stream_latest_offset, dk_stream_batch_between) and hands each input partition the range
 * or the two offsets plus a file slice; the executor plans the same range or batch again and
 * reads its slice (dk_changes_read_files, dk_stream_batch_read_files). */

typedef struct jni_changes {
  dk_table *table;
  dk_changes *changes;
  dk_expr *filter;
} jni_changes;

typedef struct jni_stream {
  dk_table *table;
  dk_stream *stream;
  char *regex;
  char **cols;
  size_t n_cols;
} jni_stream;

static void changes_free(jni_changes *h) {
  if (!h) return;
  dk_changes_free(h->changes);
  dk_expr_free(h->filter);
  dk_table_free(h->table);
  free(h);
}

/* bounds: {start_kind, start, end_kind, end} as dk_bound_kind / versions / ms. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkStreamNative_changesOpen(JNIEnv *env, jclass cls,
                                                                     jstring path,
                                                                     jobjectArray storage_options,
                                                                     jlongArray bounds,
                                                                     jobjectArray columns,
                                                                     jstring filter) {
  (void)cls;
  jlong b[4];
  (*env)->GetLongArrayRegion(env, bounds, 0, 4, b);
  if ((*env)->ExceptionCheck(env)) return 0;
  jni_changes *h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return 0;
  }
  char **cols = NULL;
  size_t ncols = 0;
  dk_error err;
  dk_error_init(&err);
  dk_status st = open_jtable(env, &h->table, path, storage_options, 0);
  if (st == DK_OK && dup_strings(env, columns, 0, "null column name", &cols, &ncols) != 0) st = DK_NOMEM;
  if (st == DK_OK && filter) {
    int failed = 0;
    char *ftext = dup_jstring(env, filter, &failed);
    st = failed ? DK_NOMEM : dk_expr_parse(&h->filter, ftext, &err);
    free(ftext);
    if (st != DK_OK && !failed) throw_err(env, &err, st, 0);
  }
  if (st == DK_OK) {
    dk_changes_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_CHANGES_OPTIONS_VERSION;
    o.start_kind = (dk_bound_kind)b[0];
    o.start = (int64_t)b[1];
    o.end_kind = (dk_bound_kind)b[2];
    o.end = (int64_t)b[3];
    o.columns = (const char *const *)cols;
    o.n_columns = ncols;
    o.filter = h->filter;
    st = dk_changes_new(&h->changes, h->table, &o, &err);
    thrown(env, st, &err, 0);
  }
  free_strings(cols, ncols);
  if (st != DK_OK) {
    changes_free(h);
    return 0;
  }
  return (jlong)(intptr_t)h;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_changesFree(JNIEnv *env, jclass cls,
                                                                   jlong handle) {
  (void)env;
  (void)cls;
  changes_free((jni_changes *)(intptr_t)handle);
}

/* {start version, end version, schema version, files} */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkStreamNative_changesInfo(JNIEnv *env,
                                                                         jclass cls,
                                                                         jlong handle) {
  (void)cls;
  const dk_changes *c = ((jni_changes *)(intptr_t)handle)->changes;
  int64_t v[4] = {dk_changes_start_version(c), dk_changes_end_version(c),
                dk_changes_schema_version(c), dk_changes_num_files(c)};
  return new_long_array(env, v, 4);
}

typedef dk_status (*file_get_fn)(dk_change_file *out, const void *owner, int64_t i,
                                 dk_error *err);

static dk_status changes_file(dk_change_file *out, const void *c, int64_t i, dk_error *err) {
  return dk_changes_file_get(out, c, i, err);
}

static dk_status batch_file(dk_change_file *out, const void *b, int64_t i, dk_error *err) {
  return dk_stream_batch_file(out, b, i, err);
}

/* The size in bytes of each of n change files (for packing them into input partitions). */
static jlongArray file_sizes(JNIEnv *env, const void *owner, int64_t n, file_get_fn get) {
  int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < n; i++) {
    dk_change_file f;
    dk_error err;
    dk_error_init(&err);
    dk_status st = get(&f, owner, i, &err);
    if (st != DK_OK) {
      free(v);
      throw_err(env, &err, st, 0);
      return NULL;
    }
    v[i] = (jlong)f.entry.size;
  }
  jlongArray arr = new_long_array(env, v, (jsize)n);
  free(v);
  return arr;
}

JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkStreamNative_changesFileSizes(JNIEnv *env,
                                                                              jclass cls,
                                                                              jlong handle) {
  (void)cls;
  const dk_changes *c = ((jni_changes *)(intptr_t)handle)->changes;
  return file_sizes(env, c, dk_changes_num_files(c), changes_file);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_changesSchema(JNIEnv *env, jclass cls,
                                                                     jlong handle, jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_changes_schema((struct ArrowSchema *)(intptr_t)out,
                                   ((jni_changes *)(intptr_t)handle)->changes, &err);
  thrown(env, st, &err, 0);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_changesReadFiles(JNIEnv *env,
                                                                        jclass cls,
                                                                        jlong handle,
                                                                        jlong first, jlong n,
                                                                        jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_changes_read_files((struct ArrowArrayStream *)(intptr_t)out,
                                       ((jni_changes *)(intptr_t)handle)->changes,
                                       (int64_t)first, (int64_t)n, &err);
  thrown(env, st, &err, 0);
}

static void stream_free(jni_stream *h) {
  if (!h) return;
  dk_stream_free(h->stream);
  dk_table_free(h->table);
  free(h->regex);
  free_strings(h->cols, h->n_cols);
  free(h);
}

/* opts: {start kind (dk_stream_start), starting version, starting timestamp ms, max files,
 * max bytes, available now, ignore deletes, ignore changes, skip change commits, allow data
 * loss, change data feed, max initial snapshot files}; exclude_regex may be null. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkStreamNative_streamOpen(JNIEnv *env, jclass cls,
                                                                    jstring path,
                                                                    jobjectArray storage_options,
                                                                    jlongArray opts,
                                                                    jstring exclude_regex,
                                                                    jobjectArray columns) {
  (void)cls;
  jlong v[12];
  (*env)->GetLongArrayRegion(env, opts, 0, 12, v);
  if ((*env)->ExceptionCheck(env)) return 0;
  jni_stream *h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return 0;
  }
  int failed = 0;
  dk_status st = open_jtable(env, &h->table, path, storage_options, 0);
  if (st == DK_OK) h->regex = dup_jstring(env, exclude_regex, &failed);
  if (st == DK_OK && (failed || dup_strings(env, columns, 0, "null column name", &h->cols, &h->n_cols) != 0))
    st = DK_NOMEM;
  if (st == DK_OK) {
    dk_error err;
    dk_error_init(&err);
    dk_stream_options o;
    memset(&o, 0, sizeof o);
    o.version = DK_STREAM_OPTIONS_VERSION;
    o.start = (dk_stream_start)v[0];
    o.starting_version = (int64_t)v[1];
    o.starting_timestamp_ms = (int64_t)v[2];
    o.max_files = (int64_t)v[3];
    o.max_bytes = (int64_t)v[4];
    o.available_now = (int)v[5];
    o.ignore_deletes = (int)v[6];
    o.ignore_changes = (int)v[7];
    o.skip_change_commits = (int)v[8];
    o.allow_data_loss = (int)v[9];
    o.change_data_feed = (int)v[10];
    o.max_initial_snapshot_files = (int64_t)v[11];
    o.exclude_regex = h->regex;
    o.columns = (const char *const *)h->cols;
    o.n_columns = h->n_cols;
    st = dk_stream_open(&h->stream, h->table, &o, &err);
    thrown(env, st, &err, 0);
  }
  if (st != DK_OK) {
    stream_free(h);
    return 0;
  }
  return (jlong)(intptr_t)h;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_streamFree(JNIEnv *env, jclass cls,
                                                                  jlong handle) {
  (void)env;
  (void)cls;
  stream_free((jni_stream *)(intptr_t)handle);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_streamSchema(JNIEnv *env, jclass cls,
                                                                    jlong handle, jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_stream_schema((struct ArrowSchema *)(intptr_t)out,
                                  ((jni_stream *)(intptr_t)handle)->stream, &err);
  thrown(env, st, &err, 0);
}

static jstring offset_json(JNIEnv *env, const dk_stream *s, const dk_stream_offset *o) {
  const char *id = dk_stream_table_id(s);
  size_t n = dk_stream_offset_json(NULL, 0, o, id);
  char *buf = malloc(n + 1);
  if (!buf) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    return NULL;
  }
  dk_stream_offset_json(buf, n + 1, o, id);
  jstring js = (*env)->NewStringUTF(env, buf);
  free(buf);
  return js;
}

/* Parses an offset of this stream's table; 0 (and a Java exception) when it is malformed. */
static int offset_parse(JNIEnv *env, dk_stream_offset *out, const dk_stream *s, jstring json) {
  int failed = 0;
  char *c = dup_jstring(env, json, &failed);
  if (failed || !c) return -1;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_stream_offset_parse(out, c, strlen(c), dk_stream_table_id(s), &err);
  free(c);
  if (thrown(env, st, &err, 0)) return -1;
  return 0;
}

/* The stream's start offset (Spark's initialOffset). */
JNIEXPORT jstring JNICALL Java_io_dk_spark_DkStreamNative_streamInitialOffset(JNIEnv *env,
                                                                              jclass cls,
                                                                              jlong handle) {
  (void)cls;
  const dk_stream *s = ((jni_stream *)(intptr_t)handle)->stream;
  dk_stream_offset o;
  dk_stream_offset_get(&o, s);
  return offset_json(env, s, &o);
}

/* The end offset of the next batch after `start` within the limits, or null when nothing is
 * there (dk_stream_latest_offset). */
JNIEXPORT jstring JNICALL Java_io_dk_spark_DkStreamNative_streamLatestOffset(
    JNIEnv *env, jclass cls, jlong handle, jstring start, jlong max_files, jlong max_bytes) {
  (void)cls;
  dk_stream *s = ((jni_stream *)(intptr_t)handle)->stream;
  dk_stream_offset from, out;
  if (offset_parse(env, &from, s, start) != 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  int has = 0;
  dk_status st = dk_stream_latest_offset(&out, &has, s, &from, (int64_t)max_files,
                                         (int64_t)max_bytes, &err);
  if (thrown(env, st, &err, 0)) return NULL;
  return has ? offset_json(env, s, &out) : NULL;
}

/* The batch (start, end] (dk_stream_batch_between), as a handle for batchFileSizes /
 * batchReadFiles / batchFree. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkStreamNative_streamBatch(JNIEnv *env, jclass cls,
                                                                    jlong handle, jstring start,
                                                                    jstring end) {
  (void)cls;
  dk_stream *s = ((jni_stream *)(intptr_t)handle)->stream;
  dk_stream_offset a, b;
  if (offset_parse(env, &a, s, start) != 0 || offset_parse(env, &b, s, end) != 0) return 0;
  dk_error err;
  dk_error_init(&err);
  dk_stream_batch *batch = NULL;
  dk_status st = dk_stream_batch_between(&batch, s, &a, &b, &err);
  if (thrown(env, st, &err, 0)) return 0;
  return (jlong)(intptr_t)batch;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_batchFree(JNIEnv *env, jclass cls,
                                                                 jlong batch) {
  (void)env;
  (void)cls;
  dk_stream_batch_free((dk_stream_batch *)(intptr_t)batch);
}

JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkStreamNative_batchFileSizes(JNIEnv *env,
                                                                            jclass cls,
                                                                            jlong batch) {
  (void)cls;
  const dk_stream_batch *b = (const dk_stream_batch *)(intptr_t)batch;
  return file_sizes(env, b, dk_stream_batch_num_files(b), batch_file);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkStreamNative_batchReadFiles(JNIEnv *env, jclass cls,
                                                                      jlong batch, jlong first,
                                                                      jlong n, jlong out) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_stream_batch_read_files((struct ArrowArrayStream *)(intptr_t)out,
                                            (dk_stream_batch *)(intptr_t)batch, (int64_t)first,
                                            (int64_t)n, &err);
  thrown(env, st, &err, 0);
}

/* ---- transactions (driver) ---------------------------------------------------------------- */

/* A driver transaction; `table` is owned when the transaction creates the table. */
typedef struct jni_txn {
  dk_table *table;
  dk_txn *txn;
} jni_txn;

/* txn options: operation, parameters JSON, engine info, user metadata (any may be NULL). */
static jlong txn_begin(JNIEnv *env, dk_snapshot *snap, dk_table *create_on, jstring op,
                       jstring params, jstring engine, jstring user_md) {
  int f1 = 0, f2 = 0, f3 = 0, f4 = 0;
  char *cop = dup_jstring(env, op, &f1), *cpar = dup_jstring(env, params, &f2),
       *ceng = dup_jstring(env, engine, &f3), *cum = dup_jstring(env, user_md, &f4);
  jni_txn *h = NULL;
  if (f1 || f2 || f3 || f4) goto done;
  h = calloc(1, sizeof *h);
  if (!h) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    goto done;
  }
  dk_txn_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_TXN_OPTIONS_VERSION;
  o.operation = cop;
  o.operation_parameters = cpar;
  o.engine_info = ceng;
  o.user_metadata = cum;
  dk_error err;
  dk_error_init(&err);
  dk_status st = snap ? dk_txn_begin(&h->txn, snap, &o, &err)
                      : dk_txn_begin_create(&h->txn, create_on, &o, &err);
  if (st != DK_OK) {
    free(h);
    h = NULL;
    throw_err(env, &err, st, 0);
    goto done;
  }
  if (!snap) h->table = create_on;
done:
  free(cop);
  free(cpar);
  free(ceng);
  free(cum);
  return (jlong)(intptr_t)h;
}

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnBegin(JNIEnv *env, jclass cls, jlong snap,
                                                           jstring op, jstring params,
                                                           jstring engine, jstring user_md) {
  (void)cls;
  return txn_begin(env, ((jni_snapshot *)(intptr_t)snap)->snap, NULL, op, params, engine,
                   user_md);
}

/* A transaction creating the table at `uri` (version 0): an object-store URI through the
 * backend for storage_options (its key, value, ...; null for a local path). */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnBeginCreate(JNIEnv *env, jclass cls,
                                                                 jstring uri,
                                                                 jobjectArray storage_options,
                                                                 jstring op, jstring params,
                                                                 jstring engine,
                                                                 jstring user_md) {
  (void)cls;
  dk_table *t = NULL;
  if (open_jtable(env, &t, uri, storage_options, 0) != DK_OK) return 0;
  jlong h = txn_begin(env, NULL, t, op, params, engine, user_md);
  if (!h) dk_table_free(t);
  return h;
}

static dk_txn *TXN(jlong h) { return ((jni_txn *)(intptr_t)h)->txn; }

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnAbort(JNIEnv *env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  jni_txn *t = (jni_txn *)(intptr_t)h;
  if (!t) return;
  dk_txn_abort(t->txn);
  dk_table_free(t->table);
  free(t);
}

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnReadVersion(JNIEnv *env, jclass cls,
                                                                 jlong h) {
  (void)env;
  (void)cls;
  return (jlong)dk_txn_read_version(TXN(h));
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnSetMetadata(
    JNIEnv *env, jclass cls, jlong h, jstring schema, jobjectArray parts, jobjectArray conf_kv,
    jstring name, jstring description) {
  (void)cls;
  int f1 = 0, f4 = 0, f5 = 0;
  size_t np = 0, nc = 0;
  char *cs = dup_jstring(env, schema, &f1), *cn = dup_jstring(env, name, &f4),
       *cd = dup_jstring(env, description, &f5);
  char **pa = NULL, **kv = NULL;
  if (!(f1 || f4 || f5) && dup_strings(env, parts, 0, "null partition column", &pa, &np) == 0 &&
      dup_strings(env, conf_kv, 1, "", &kv, &nc) == 0) {
    dk_metadata_spec m;
    memset(&m, 0, sizeof m);
    m.version = DK_METADATA_SPEC_VERSION;
    m.schema_string = cs;
    m.name = cn;
    m.description = cd;
    m.n_partition_columns = (size_t)np;
    m.partition_columns = (const char *const *)pa;
    m.n_configuration = (size_t)nc / 2;
    m.configuration = (const char *const *)kv;
    m.created_time = -1;
    dk_error err;
    dk_error_init(&err);
    thrown(env, dk_txn_set_metadata(TXN(h), &m, &err), &err, 0);
  }
  free(cs);
  free(cn);
  free(cd);
  free_strings(pa, np);
  free_strings(kv, nc);
}

/* Records a read of the files matching `filter` (NULL = all) and returns their indexes. With
 * partition_only, a filter on data columns is DK_UNSUPPORTED (replaceWhere replaces whole
 * files of the partitions it selects). */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_txnReadFiles(JNIEnv *env, jclass cls,
                                                                    jlong h, jstring filter,
                                                                    jboolean partition_only) {
  (void)cls;
  int failed = 0;
  char *ft = dup_jstring(env, filter, &failed);
  if (failed) return NULL;
  dk_error err;
  dk_error_init(&err);
  dk_expr *e = NULL;
  dk_status st = ft ? dk_expr_parse(&e, ft, &err) : DK_OK;
  if (st == DK_OK && e && partition_only) {
    const dk_metadata *md = dk_snapshot_metadata(dk_txn_snapshot(TXN(h)));
    if (!dk_expr_references_only(e, md->partition_columns, md->n_partition_columns)) {
      st = DK_UNSUPPORTED;
      snprintf(err.message, sizeof err.message,
               "replaceWhere '%s' references data columns; dk replaces by partition predicates "
               "only so far",
               ft);
    }
  }
  free(ft);
  int64_t *idx = NULL, n = 0;
  if (st == DK_OK) st = dk_txn_read_files(TXN(h), e, &idx, &n, &err);
  dk_expr_free(e);
  if (thrown(env, st, &err, 0)) return NULL;
  jlongArray r = new_long_array(env, idx, (jsize)n);
  dk_free(idx);
  return r;
}

/* Records a read of the partitions given as rows of serialized values (flat, nRows rows of
 * the table's partition columns) and returns the indexes of their files. */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_txnReadPartitions(JNIEnv *env,
                                                                         jclass cls, jlong h,
                                                                         jobjectArray values,
                                                                         jint n_rows) {
  (void)cls;
  size_t n = 0;
  char **v = NULL;
  if (dup_strings(env, values, 1, "", &v, &n) != 0) return NULL;
  dk_error err;
  dk_error_init(&err);
  int64_t *idx = NULL, cnt = 0;
  dk_status st = dk_txn_read_partitions(TXN(h), (const char *const *)v, (int64_t)n_rows, &idx,
                                        &cnt, &err);
  free_strings(v, n);
  if (thrown(env, st, &err, 0)) return NULL;
  jlongArray r = new_long_array(env, idx, (jsize)cnt);
  dk_free(idx);
  return r;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnReadWholeTable(JNIEnv *env, jclass cls,
                                                                  jlong h) {
  (void)env;
  (void)cls;
  dk_txn_read_whole_table(TXN(h));
}

/* Removes active file i; returns its size (for the operation metrics). */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnRemoveFile(JNIEnv *env, jclass cls,
                                                                jlong h, jlong i,
                                                                jboolean data_change) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  dk_file_entry f;
  dk_status st = dk_snapshot_file(&f, dk_txn_snapshot(TXN(h)), (int64_t)i, &err);
  if (st == DK_OK) st = dk_txn_remove_file(TXN(h), (int64_t)i, data_change ? 1 : 0, &err);
  if (thrown(env, st, &err, 0)) return 0;
  return (jlong)f.size;
}

JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnAppVersion(JNIEnv *env, jclass cls,
                                                                jlong h, jstring app) {
  (void)cls;
  int failed = 0;
  char *a = dup_jstring(env, app, &failed);
  if (failed || !a) return -1;
  int64_t v = dk_txn_app_version(TXN(h), a);
  free(a);
  return (jlong)v;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnSetAppVersion(JNIEnv *env, jclass cls,
                                                                  jlong h, jstring app,
                                                                  jlong version) {
  (void)cls;
  int failed = 0;
  char *a = dup_jstring(env, app, &failed);
  if (failed) return;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_txn_set_app_version(TXN(h), a, (int64_t)version, &err);
  free(a);
  thrown(env, st, &err, 0);
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnSetMetric(JNIEnv *env, jclass cls, jlong h,
                                                              jstring name, jlong value) {
  (void)cls;
  int failed = 0;
  char *n = dup_jstring(env, name, &failed);
  if (failed || !n) return;
  dk_error err;
  dk_error_init(&err);
  dk_status st = dk_txn_set_metric(TXN(h), n, (int64_t)value, &err);
  free(n);
  thrown(env, st, &err, 0);
}

JNIEXPORT jbyteArray JNICALL Java_io_dk_spark_DkNative_txnWriterState(JNIEnv *env, jclass cls,
                                                                     jlong h) {
  (void)cls;
  dk_error err;
  dk_error_init(&err);
  char *s = NULL;
  size_t len = 0;
  dk_status st = dk_txn_writer_state(&s, &len, TXN(h), &err);
  if (thrown(env, st, &err, 0)) return NULL;
  jbyteArray b = (*env)->NewByteArray(env, (jsize)len);
  if (b) (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte *)s);
  dk_free(s);
  return b;
}

/* Stages deletes of rows named by (data file URI as libdk's scans name it, physical row
 * index), dk_txn_delete_rows: DVs of the read snapshot's files. Returns {deleted rows, files
 * touched, files removed, removed bytes, DVs added, DVs removed, DVs updated}. */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_txnDeleteRows(JNIEnv *env, jclass cls,
                                                                     jlong h,
                                                                     jobjectArray uris,
                                                                     jlongArray rows) {
  (void)cls;
  char **u = NULL;
  size_t n = 0;
  if (dup_strings(env, uris, 0, "null data file", &u, &n) != 0) return NULL;
  jlong *r = n ? (*env)->GetLongArrayElements(env, rows, NULL) : NULL;
  jlongArray out = NULL;
  if (!n || r) {
    dk_error err;
    dk_error_init(&err);
    dk_dml_metrics m;
    memset(&m, 0, sizeof m);
    m.version = DK_DML_METRICS_VERSION;
    dk_status st = dk_txn_delete_rows(&m, TXN(h), (const char *const *)u, (const int64_t *)r,
                                      n, NULL, &err);
    if (!thrown(env, st, &err, 0)) {
      int64_t v[7] = {m.num_deleted_rows, m.num_files_after_skipping, m.num_removed_files,
                      m.num_removed_bytes, m.num_deletion_vectors_added,
                      m.num_deletion_vectors_removed, m.num_deletion_vectors_updated};
      out = new_long_array(env, v, 7);
    }
  }
  if (r) (*env)->ReleaseLongArrayElements(env, rows, r, JNI_ABORT);
  free_strings(u, n);
  return out;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_txnClearMetrics(JNIEnv *env, jclass cls,
                                                                  jlong h) {
  (void)env;
  (void)cls;
  dk_txn_clear_metrics(TXN(h));
}

/* Stages an executor's adds (dk_txn_staged_adds text); returns how many. */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_txnAddStaged(JNIEnv *env, jclass cls, jlong h,
                                                               jbyteArray adds) {
  (void)cls;
  jsize len = (*env)->GetArrayLength(env, adds);
  jbyte *b = (*env)->GetByteArrayElements(env, adds, NULL);
  if (!b) return 0;
  dk_error err;
  dk_error_init(&err);
  int64_t n = 0;
  dk_status st = dk_txn_add_staged(TXN(h), (const char *)b, (size_t)len, &n, &err);
  (*env)->ReleaseByteArrayElements(env, adds, b, JNI_ABORT);
  thrown(env, st, &err, 0);
  return (jlong)n;
}

/* Commits (consumes the transaction; the handle is freed whatever happens). Returns
 * {version, attempts, commit timestamp, checkpoint}; a conflict is DkException with status
 * DK_CONFLICT and context CTX_CONFLICT_BASE + kind. */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_txnCommit(JNIEnv *env, jclass cls,
                                                                 jlong h) {
  (void)cls;
  jni_txn *t = (jni_txn *)(intptr_t)h;
  dk_error err;
  dk_error_init(&err);
  dk_commit_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_COMMIT_RESULT_VERSION;
  dk_status st = dk_txn_commit(t->txn, &r, &err);
  dk_table_free(t->table);
  free(t);
  if (st != DK_OK) {
    throw_err(env, &err, st, st == DK_CONFLICT ? CTX_CONFLICT_BASE + (int)r.conflict : 0);
    return NULL;
  }
  int64_t v[4] = {r.committed_version, r.attempts, r.commit_timestamp, r.checkpoint};
  return new_long_array(env, v, 4);
}

/* ---- writer transactions (executors) ------------------------------------------------------ */

#ifdef DK_WRITE_OPTIONS_VERSION /* dk_txn_write: libdk's data path */
#define DK_JNI_CAN_WRITE 1
#else
#define DK_JNI_CAN_WRITE 0
#endif

typedef struct jni_writer {
  dk_table *table;
  dk_txn *txn;
  char *replace_where;  /* every row must satisfy it, or NULL */
  int64_t target_file_size;
  int threads;
  int64_t files, rows, bytes;
} jni_writer;

JNIEXPORT jboolean JNICALL Java_io_dk_spark_DkNative_canWrite(JNIEnv *env, jclass cls) {
  (void)env;
  (void)cls;
  return DK_JNI_CAN_WRITE ? JNI_TRUE : JNI_FALSE;
}

/* A writer transaction on the table at `uri` from the driver's writer state; an object-store
 * table's files go through the backend for storage_options (the driver's, carried in the
 * writer factory). Allocations go through the counting allocator
 * (DkDebug.nativeBytesOutstanding). */
JNIEXPORT jlong JNICALL Java_io_dk_spark_DkNative_writerOpen(JNIEnv *env, jclass cls,
                                                             jstring uri,
                                                             jobjectArray storage_options,
                                                             jbyteArray state,
                                                             jstring replace_where,
                                                             jlong target_file_size,
                                                             jint threads) {
  (void)cls;
  int f1 = 0, f2 = 0;
  char *curi = dup_jstring(env, uri, &f1);
  char *rw = dup_jstring(env, replace_where, &f2);
  jni_writer *w = NULL;
  jbyte *sb = NULL;
  jsize slen = 0;
  if (f1 || f2) goto fail;
  w = calloc(1, sizeof *w);
  if (!w) {
    throw_dk(env, DK_NOMEM, 0, "out of memory");
    goto fail;
  }
  dk_error err;
  dk_error_init(&err);
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.alloc = &g_count_alloc;
  to.threads = 1;
  if (dk_storage_s3_is_uri(curi) && !(to.storage = backend_for(env, curi, storage_options)))
    goto fail;
  dk_status st = dk_table_open(&w->table, curi, &to, &err);
  if (st != DK_OK) {
    throw_err(env, &err, st, 1);
    goto fail;
  }
  slen = (*env)->GetArrayLength(env, state);
  sb = (*env)->GetByteArrayElements(env, state, NULL);
  if (!sb) goto fail;
  st = dk_txn_begin_writer(&w->txn, w->table, (const char *)sb, (size_t)slen, NULL, &err);
  (*env)->ReleaseByteArrayElements(env, state, sb, JNI_ABORT);
  if (st != DK_OK) {
    throw_err(env, &err, st, 0);
    goto fail;
  }
  w->replace_where = rw;
  w->target_file_size = (int64_t)target_file_size;
  w->threads = (int)threads;
  free(curi);
  return (jlong)(intptr_t)w;
fail:
  if (w) {
    dk_table_free(w->table);
    free(w);
  }
  free(curi);
  free(rw);
  return 0;
}

JNIEXPORT void JNICALL Java_io_dk_spark_DkNative_writerFree(JNIEnv *env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  jni_writer *w = (jni_writer *)(intptr_t)h;
  if (!w) return;
  dk_txn_abort(w->txn);
  dk_table_free(w->table);
  free(w->replace_where);
  free(w);
}

#if DK_JNI_CAN_WRITE
/* An ArrowArrayStream over the Java DataWriter: exportSchema(long) / nextBatch(long) fill the
 * C structs at the given addresses (arrow-c-data). dk_txn_write pulls on the thread that
 * called writerWriteAll, so `env` stays valid; a Java
 * exception stays pending and fails the stream. */
typedef struct jpull {
  JNIEnv *env;
  jobject src;
  jmethodID schema_m, next_m;
  const char *msg;
} jpull;

static int pull_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  jpull *p = s->private_data;
  (*p->env)->CallVoidMethod(p->env, p->src, p->schema_m, (jlong)(intptr_t)out);
  if ((*p->env)->ExceptionCheck(p->env)) {
    p->msg = "the Spark writer failed (Java exception)";
    return 5; /* EIO */
  }
  return 0;
}

static int pull_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  jpull *p = s->private_data;
  memset(out, 0, sizeof *out);
  jboolean more = (*p->env)->CallBooleanMethod(p->env, p->src, p->next_m, (jlong)(intptr_t)out);
  if ((*p->env)->ExceptionCheck(p->env)) {
    p->msg = "the Spark writer failed (Java exception)";
    if (out->release) out->release(out);
    return 5;
  }
  if (!more) out->release = NULL;
  return 0;
}

static const char *pull_error(struct ArrowArrayStream *s) {
  return ((jpull *)s->private_data)->msg;
}

static void pull_release(struct ArrowArrayStream *s) { s->release = NULL; }
#endif

/* Writes every batch `source` (io.dk.spark.DkDataWriter) produces as data files of the
 * writer transaction; returns the partitions written (flat rows of serialized values, NULL =
 * null) followed by nothing else. Files/rows/bytes so far: writerStats. */
JNIEXPORT jobjectArray JNICALL Java_io_dk_spark_DkNative_writerWriteAll(JNIEnv *env, jclass cls,
                                                                        jlong h, jobject source,
                                                                        jint n_part) {
  (void)cls;
#if DK_JNI_CAN_WRITE
  jni_writer *w = (jni_writer *)(intptr_t)h;
  jclass scls = (*env)->GetObjectClass(env, source);
  if (!scls) return NULL;
  jpull p;
  memset(&p, 0, sizeof p);
  p.env = env;
  p.src = source;
  p.schema_m = (*env)->GetMethodID(env, scls, "exportSchema", "(J)V");
  p.next_m = p.schema_m ? (*env)->GetMethodID(env, scls, "nextBatch", "(J)Z") : NULL;
  if (!p.next_m) return NULL;
  struct ArrowArrayStream s;
  memset(&s, 0, sizeof s);
  s.get_schema = pull_schema;
  s.get_next = pull_next;
  s.get_last_error = pull_error;
  s.release = pull_release;
  s.private_data = &p;
  dk_error err;
  dk_error_init(&err);
  dk_expr *rw = NULL;
  dk_status st = w->replace_where ? dk_expr_parse(&rw, w->replace_where, &err) : DK_OK;
  dk_write_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_WRITE_OPTIONS_VERSION;
  o.target_file_size = w->target_file_size;
  o.replace_where = rw;
  o.threads = w->threads;
  dk_write_result r;
  memset(&r, 0, sizeof r);
  r.version = DK_WRITE_RESULT_VERSION;
  if (st == DK_OK) st = dk_txn_write(&r, w->txn, &s, &o, &err);
  dk_expr_free(rw);
  if ((*env)->ExceptionCheck(env)) return NULL; /* the Java failure is the error */
  if (thrown(env, st, &err, 0)) return NULL;
  w->files += r.files;
  w->rows += r.rows;
  w->bytes += r.bytes;
  jsize n = (jsize)(r.n_partitions * n_part);
  jobjectArray out = new_string_array(env, n);
  if (!out) return NULL;
  for (jsize i = 0; i < n; i++) {
    const char *v = r.partitions[i];
    if (!v) continue;
    jstring js = (*env)->NewStringUTF(env, v);
    if (!js) return NULL;
    (*env)->SetObjectArrayElement(env, out, i, js);
    (*env)->DeleteLocalRef(env, js);
  }
  return out;
#else
  (void)h;
  (void)source;
  (void)n_part;
  throw_dk(env, DK_UNSUPPORTED, 0,
           "this libdk has no data path (dk_txn_write): the connector cannot write data files");
  return NULL;
#endif
}

/* {files, rows, bytes} written by the writer so far. */
JNIEXPORT jlongArray JNICALL Java_io_dk_spark_DkNative_writerStats(JNIEnv *env, jclass cls,
                                                                   jlong h) {
  (void)cls;
  jni_writer *w = (jni_writer *)(intptr_t)h;
  int64_t v[3] = {w->files, w->rows, w->bytes};
  return new_long_array(env, v, 3);
}

JNIEXPORT jbyteArray JNICALL Java_io_dk_spark_DkNative_writerStagedAdds(JNIEnv *env, jclass cls,
                                                                       jlong h) {
  (void)cls;
  jni_writer *w = (jni_writer *)(intptr_t)h;
  dk_error err;
  dk_error_init(&err);
  char *s = NULL;
  size_t len = 0;
  dk_status st = dk_txn_staged_adds(&s, &len, w->txn, &err);
  if (thrown(env, st, &err, 0)) return NULL;
  jbyteArray b = (*env)->NewByteArray(env, (jsize)len);
  if (b) (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte *)s);
  dk_free(s);
  return b;
}
