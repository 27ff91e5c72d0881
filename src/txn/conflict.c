/*
** conflict.c — conflict detection between a transaction and the commits that won the race
** (delta-spark ConflictChecker.scala, OptimisticTransaction.scala, isolationLevels.scala;
** write-path.md §3.1), in delta-spark's order, per winning commit:
**   1. protocol: the winner's must be writable by dk; both changing it, or the winner dropping
**      a feature, is ProtocolChangedException; else the winner's protocol is adopted;
**   2. metadata: both changing it is MetadataChangedException; otherwise only changes of
**      configuration (no key removed; added/changed keys on the allow-list: row tracking,
**      column mapping name mode, DV and ICT enablement, checkpointPolicy=v2) and the schema
**      changes of enabling column mapping are tolerated, and the winner's metadata adopted;
**   3. domain metadata set by both (except delta.rowTracking): ConcurrentTransactionException;
**   4. the winner sets the txn version of an appId we read: ConcurrentTransactionException;
**   5. row tracking: our row ids move above the winner's high-water mark (at serialization);
**   6. winner adds we should have read (Serializable: every add; WriteSerializable without a
**      metadata change: adds of non-blind commits; SnapshotIsolation / a blind append: none),
**      matched against our partition read predicates (any add when we read the whole table or
**      the table is unpartitioned): ConcurrentAppendException;
**   7. winner removes of files we read (or any remove after a whole-table read):
**      ConcurrentDeleteReadException;
**   8. winner removes of files we remove: ConcurrentDeleteDeleteException;
**   9. in-commit timestamp: ours must exceed the winner's.
** The isolation level is the table's (delta.isolationLevel, default Serializable), downgraded
** to SnapshotIsolation when every file action has dataChange=false and there is no non-file
** action (delta-spark canDowngradeToSnapshotIsolation).
*/
#include <stdio.h>
#include <stdlib.h>

#include "arrow/array.h"
#include "log/commit.h"
#include "log/replay.h"
#include "protocol/schema.h"
#include "log/paths.h"
#include "txn/txn_int.h"

/* ---- reading a winning commit --------------------------------------------------------------- */

typedef struct winner_ctx {
  txn_winner *w;
  dk_txn *x;
  dk_arena *ar;
  size_t cap_apps, cap_domains, cap_adds, cap_removes;
  dk_status st;
  dk_error *err;
} winner_ctx;

static int push(dk_arena *ar, void **arr, size_t *n, size_t *cap, size_t elem, const void *item,
                dk_error *err) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    void *q = dk__arena_alloc(ar, nc * elem, err);
    if (!q) return 0;
    if (*n) memcpy(q, *arr, *n * elem);
    *arr = q;
    *cap = nc;
  }
  memcpy((char *)*arr + *n * elem, item, elem);
  (*n)++;
  return 1;
}

static const char *jstr(const dk_json_value *o, const char *key) {
  const dk_json_value *v = dk__json_get(o, key);
  return v && v->type == DK_JSON_STRING ? v->u.str : NULL;
}

static dk_status str_array(const char ***out, size_t *n, dk_arena *ar, const dk_json_value *v,
                           dk_error *err) {
  *out = NULL;
  *n = 0;
  if (!v || v->type != DK_JSON_ARRAY) return DK_OK;
  const char **l = dk__arena_alloc(ar, (v->len ? v->len : 1) * sizeof *l, err);
  if (!l) return DK_NOMEM;
  for (uint32_t i = 0; i < v->len; i++)
    l[i] = v->u.items[i].type == DK_JSON_STRING ? v->u.items[i].u.str : "";
  *out = l;
  *n = v->len;
  return DK_OK;
}

static dk_status parse_meta(txn_meta *m, dk_arena *ar, const dk_json_value *o, dk_error *err) {
  memset(m, 0, sizeof *m);
  m->id = jstr(o, "id");
  m->name = jstr(o, "name");
  m->description = jstr(o, "description");
  const dk_json_value *fmt = dk__json_get(o, "format");
  m->provider = fmt ? jstr(fmt, "provider") : NULL;
  m->schema_string = jstr(o, "schemaString");
  m->created_time = -1;
  const dk_json_value *ct = dk__json_get(o, "createdTime");
  if (ct) (void)dk__json_as_i64(ct, &m->created_time);
  DK_RETURN_NOT_OK(str_array(&m->part, &m->n_part, ar, dk__json_get(o, "partitionColumns"), err));
  const dk_json_value *conf = dk__json_get(o, "configuration");
  if (conf && conf->type == DK_JSON_OBJECT && conf->len) {
    const char **c = dk__arena_alloc(ar, 2 * conf->len * sizeof *c, err);
    if (!c) return DK_NOMEM;
    for (uint32_t i = 0; i < conf->len; i++) {
      c[2 * i] = conf->u.members[i].key;
      const dk_json_value *v = &conf->u.members[i].value;
      c[2 * i + 1] = v->type == DK_JSON_STRING ? v->u.str : "";
    }
    m->conf = c;
    m->n_conf = conf->len;
  }
  return DK_OK;
}

static bool winner_line(const dk_json_value *line, void *payload) {
  winner_ctx *c = payload;
  txn_winner *w = c->w;
  dk_error *err = c->err;
  const dk_json_value *a;
  if ((a = dk__json_get(line, "commitInfo"))) {
    w->has_commit_info = 1;
    w->txn_id = jstr(a, "txnId");
    w->operation = jstr(a, "operation");
    bool b;
    const dk_json_value *v = dk__json_get(a, "isBlindAppend");
    if (v && dk__json_as_bool(v, &b)) w->is_blind_append = b ? 1 : 0;
    v = dk__json_get(a, "inCommitTimestamp");
    if (v) (void)dk__json_as_i64(v, &w->ict);
    const dk_json_value *tags = dk__json_get(a, "tags");
    const char *t = tags ? jstr(tags, "delta.identity.highWaterMarkOnly") : NULL;
    w->identity_only = t && !strcmp(t, "true");
  } else if ((a = dk__json_get(line, "add"))) {
    const char *p = jstr(a, "path");
    const char *path = NULL;
    size_t plen;
    if (p && dk_log__canonical_path(&path, &plen, c->ar, c->x->table->root,
                                    strlen(c->x->table->root), p, strlen(p), err) != DK_OK) {
      c->st = err ? err->code : DK_CORRUPT;
      return false;
    }
    const dk_json_value *pv = dk__json_get(a, "partitionValues");
    size_t n = w->n_adds, cap = c->cap_adds;
    if (!push(c->ar, (void **)&w->add_paths, &n, &cap, sizeof(char *), &path, err) ||
        !push(c->ar, (void **)&w->add_pv, &w->n_adds, &c->cap_adds, sizeof pv, &pv, err)) {
      c->st = DK_NOMEM;
      return false;
    }
  } else if ((a = dk__json_get(line, "remove"))) {
    const char *p = jstr(a, "path");
    const char *path = NULL;
    size_t plen;
    if (p && dk_log__canonical_path(&path, &plen, c->ar, c->x->table->root,
                                    strlen(c->x->table->root), p, strlen(p), err) != DK_OK) {
      c->st = err ? err->code : DK_CORRUPT;
      return false;
    }
    if (!push(c->ar, (void **)&w->remove_paths, &w->n_removes, &c->cap_removes, sizeof path,
              &path, err)) {
      c->st = DK_NOMEM;
      return false;
    }
  } else if ((a = dk__json_get(line, "metaData"))) {
    w->has_meta = 1;
    c->st = parse_meta(&w->meta, c->ar, a, err);
    if (c->st) return false;
  } else if ((a = dk__json_get(line, "protocol"))) {
    w->has_protocol = 1;
    int64_t r = 0, wv = 0;
    (void)dk__json_as_i64(dk__json_get(a, "minReaderVersion"), &r);
    (void)dk__json_as_i64(dk__json_get(a, "minWriterVersion"), &wv);
    w->protocol.min_reader_version = (int32_t)r;
    w->protocol.min_writer_version = (int32_t)wv;
    const char **l;
    size_t n;
    c->st = str_array(&l, &n, c->ar, dk__json_get(a, "readerFeatures"), err);
    w->protocol.reader_features = l;
    w->protocol.n_reader_features = n;
    w->protocol.has_reader_features = dk__json_get(a, "readerFeatures") != NULL;
    if (!c->st) c->st = str_array(&l, &n, c->ar, dk__json_get(a, "writerFeatures"), err);
    w->protocol.writer_features = l;
    w->protocol.n_writer_features = n;
    w->protocol.has_writer_features = dk__json_get(a, "writerFeatures") != NULL;
    if (c->st) return false;
  } else if ((a = dk__json_get(line, "txn"))) {
    const char *app = jstr(a, "appId");
    if (app && !push(c->ar, (void **)&w->apps, &w->n_apps, &c->cap_apps, sizeof app, &app, err)) {
      c->st = DK_NOMEM;
      return false;
    }
  } else if ((a = dk__json_get(line, "domainMetadata"))) {
    const char *d = jstr(a, "domain");
    if (d && !strcmp(d, "delta.rowTracking")) {
      const char *cfg = jstr(a, "configuration");
      const char *q = cfg ? strstr(cfg, "\"rowIdHighWaterMark\"") : NULL;
      if (q && (q = strchr(q + 20, ':'))) w->hwm = strtoll(q + 1, NULL, 10);
    }
    if (d && !push(c->ar, (void **)&w->domains, &w->n_domains, &c->cap_domains, sizeof d, &d,
                   err)) {
      c->st = DK_NOMEM;
      return false;
    }
  }
  return true;
}

/* dk_txn__read_winner of the commit file at key `path`. */
static dk_status read_winner_at(txn_winner *w, dk_txn *x, int64_t v, const char *path,
                                dk_arena *ar, dk_error *err) {
  memset(w, 0, sizeof *w);
  w->version = v;
  w->is_blind_append = -1;
  w->ict = -1;
  w->hwm = -1;
  dk_storage *sto = x->table->sto;
  uint8_t *data = NULL;
  size_t len = 0;
  dk_error e2;
  dk_error_init(&e2);
  dk_status st = sto->read(sto, path, &data, &len, &e2);
  if (st == DK_NOT_FOUND) return DK_NOT_FOUND;
  if (st) {
    if (err) *err = e2;
    return st;
  }
  dk_file_info fi;
  if (sto->stat(sto, path, &fi, NULL) == DK_OK) w->file_mtime = fi.mtime_ms;
  /* the DOM must outlive this call: copy the text into the arena */
  char *text = dk__arena_alloc(ar, len + 1, err);
  if (!text) {
    sto->free_buf(sto, data);
    return DK_NOMEM;
  }
  memcpy(text, data, len);
  text[len] = 0;
  sto->free_buf(sto, data);
  winner_ctx c = {.w = w, .x = x, .ar = ar, .err = err};
  size_t bad_line = 0, bad_off = 0;
  st = dk_log__scan_lines(text, len, false, ar, winner_line, &c, &bad_line, &bad_off, err);
  if (!st) st = c.st;
  if (st) dk__error_prefix(err, "%s: line %zu", path, bad_line);
  return st;
}

dk_status dk_txn__read_winner(txn_winner *w, dk_txn *x, int64_t v, dk_arena *ar,
                              dk_error *err) {
  dk_buf name, key;
  dk__buf_init(&name, x->alloc);
  dk__buf_init(&key, x->alloc);
  dk_status st = dk_log__name_commit(&name, v, err);
  if (!st) st = dk_log__file_key(&key, x->table->root, name.data, err);
  if (!st) st = read_winner_at(w, x, v, key.data, ar, err);
  dk__buf_dispose(&name);
  dk__buf_dispose(&key);
  return st;
}

#define META_FMT                                                                    \
  "The metadata of the Delta table %s has been changed by a concurrent update (%s) committed " \
  "at version %lld. Please try the operation again."

/* ---- checks --------------------------------------------------------------------------------- */

dk_isolation dk_txn__isolation(const dk_txn *x) {
  dk_isolation table = x->isolation_opt;
  if (table == DK_ISOLATION_TABLE) {
    const char *lv = dk_txn__meta_conf(&x->meta, "delta.isolationLevel");
    table = lv && !strcasecmp(lv, "WriteSerializable") ? DK_ISOLATION_WRITE_SERIALIZABLE
                                                       : DK_ISOLATION_SERIALIZABLE;
  }
  if (table == DK_ISOLATION_SNAPSHOT) return table;
  /* downgrade: only dataChange=false file actions (the row-tracking domain aside) */
  if (x->has_new_meta || x->has_new_protocol || x->app_id || x->n_domains) return table;
  if (x->n_adds == 0 && x->n_removes == 0) return table;
  for (size_t i = 0; i < x->n_adds; i++)
    if (x->adds[i].data_change) return table;
  for (size_t i = 0; i < x->n_removes; i++)
    if (x->removes[i].data_change) return table;
  return DK_ISOLATION_SNAPSHOT;
}

static dk_status conflict(dk_conflict_kind *kind, dk_conflict_kind k, dk_error *err,
                          const char *fmt, ...) DK_PRINTF(4, 5);
static dk_status conflict(dk_conflict_kind *kind, dk_conflict_kind k, dk_error *err,
                          const char *fmt, ...) {
  *kind = k;
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dk__error_set(err, DK_CONFLICT, "%s: %s", dk_conflict_kind_name(k), msg);
}

static const char *op_name(const txn_winner *w) { return w->operation ? w->operation : "TRANSACTION"; }

static int in_list(const char *const *l, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (l[i] && s && !strcmp(l[i], s)) return 1;
  return 0;
}

static int str_eq(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

/* delta-spark checkConfigurationChangesForConflicts: 1 = every change is allowed. */
static int config_changes_ok(const dk_txn *x, const txn_meta *cur, const txn_meta *win) {
  for (size_t i = 0; i < cur->n_conf; i++)
    if (!dk_txn__meta_conf(win, cur->conf[2 * i])) return 0; /* a key was removed */
  for (size_t i = 0; i < win->n_conf; i++) {
    const char *k = win->conf[2 * i], *v = win->conf[2 * i + 1];
    const char *old = dk_txn__meta_conf(cur, k);
    if (old && !strcmp(old, v)) continue;
    int is_new = old == NULL, ok;
    if (!strcmp(k, "delta.enableRowTracking"))
      ok = dk_txn__protocol_supports(&x->protocol, "rowTracking") && !strcmp(v, "true");
    else if (!strcmp(k, "delta.rowTracking.materializedRowIdColumnName") ||
             !strcmp(k, "delta.rowTracking.materializedRowCommitVersionColumnName"))
      ok = dk_txn__conf_true(win, "delta.enableRowTracking");
    else if (!strcmp(k, "delta.columnMapping.mode")) {
      const char *cm = dk_txn__meta_conf(cur, "delta.columnMapping.mode");
      ok = (!cm || !strcmp(cm, "none")) && !strcmp(v, "name") &&
           dk_txn__protocol_supports(&x->protocol, "columnMapping");
    } else if (!strcmp(k, "delta.columnMapping.maxColumnId"))
      ok = 1;
    else if (!strcmp(k, "delta.enableDeletionVectors"))
      ok = dk_txn__protocol_supports(&x->protocol, "deletionVectors") && !strcmp(v, "true");
    else if (!strcmp(k, "delta.checkpointPolicy"))
      ok = dk_txn__protocol_supports(&x->protocol, "v2Checkpoint") && !strcmp(v, "v2");
    else if (!strcmp(k, "delta.enableInCommitTimestamps"))
      ok = dk_txn__protocol_supports(&x->protocol, "inCommitTimestamp") && !strcmp(v, "true");
    else if (!strcmp(k, "delta.inCommitTimestampEnablementVersion") ||
             !strcmp(k, "delta.inCommitTimestampEnablementTimestamp"))
      ok = is_new;
    else
      ok = 0; /* not on the allow-list */
    if (!ok) return 0;
  }
  return 1;
}

/* delta-spark checkSchemaChangesForConflicts: only enabling column mapping (name mode), with
 * every field keeping its name, type and nullability. */
static int schema_change_ok(dk_txn *x, const txn_meta *cur, const txn_meta *win) {
  const char *cm = dk_txn__meta_conf(cur, "delta.columnMapping.mode");
  const char *wcm = dk_txn__meta_conf(win, "delta.columnMapping.mode");
  if ((cm && strcmp(cm, "none")) || !wcm || strcmp(wcm, "name")) return 0;
  if (!cur->schema_string || !win->schema_string) return 0;
  dk_arena ar;
  dk__arena_init(&ar, x->alloc, 4096);
  const dk_type *a = NULL, *b = NULL;
  int ok = dk_schema__parse(&a, &ar, cur->schema_string, strlen(cur->schema_string), NULL) ==
               DK_OK &&
           dk_schema__parse(&b, &ar, win->schema_string, strlen(win->schema_string), NULL) ==
               DK_OK &&
           a->n_fields == b->n_fields;
  for (size_t i = 0; ok && i < a->n_fields; i++) {
    char ta[256], tb[256];
    dk_type_to_string(ta, sizeof ta, a->fields[i].type);
    dk_type_to_string(tb, sizeof tb, b->fields[i].type);
    ok = !strcmp(a->fields[i].name, b->fields[i].name) && !strcmp(ta, tb) &&
         a->fields[i].nullable == b->fields[i].nullable;
  }
  dk__arena_dispose(&ar);
  return ok;
}

static dk_status copy_meta(txn_meta *dst, dk_arena *ar, const txn_meta *src, dk_error *err) {
  *dst = *src;
#define DUP(f)                                                          \
  if (src->f && !(dst->f = dk__arena_strndup(ar, src->f, strlen(src->f), err))) return DK_NOMEM
  DUP(id);
  DUP(name);
  DUP(description);
  DUP(provider);
  DUP(schema_string);
#undef DUP
  const char **p = src->n_part ? dk__arena_alloc(ar, src->n_part * sizeof *p, err) : NULL;
  const char **c = src->n_conf ? dk__arena_alloc(ar, 2 * src->n_conf * sizeof *c, err) : NULL;
  if ((src->n_part && !p) || (src->n_conf && !c)) return DK_NOMEM;
  for (size_t i = 0; i < src->n_part; i++)
    if (!(p[i] = dk__arena_strndup(ar, src->part[i], strlen(src->part[i]), err))) return DK_NOMEM;
  for (size_t i = 0; i < 2 * src->n_conf; i++)
    if (!(c[i] = dk__arena_strndup(ar, src->conf[i], strlen(src->conf[i]), err))) return DK_NOMEM;
  dst->part = p;
  dst->conf = c;
  return DK_OK;
}

static dk_status copy_protocol(dk_protocol *dst, dk_arena *ar, const dk_protocol *src,
                               dk_error *err) {
  *dst = *src;
  const char **r = src->n_reader_features
                       ? dk__arena_alloc(ar, src->n_reader_features * sizeof *r, err) : NULL;
  const char **w = src->n_writer_features
                       ? dk__arena_alloc(ar, src->n_writer_features * sizeof *w, err) : NULL;
  if ((src->n_reader_features && !r) || (src->n_writer_features && !w)) return DK_NOMEM;
  for (size_t i = 0; i < src->n_reader_features; i++)
    if (!(r[i] = dk__arena_strndup(ar, src->reader_features[i], strlen(src->reader_features[i]),
                                   err)))
      return DK_NOMEM;
  for (size_t i = 0; i < src->n_writer_features; i++)
    if (!(w[i] = dk__arena_strndup(ar, src->writer_features[i], strlen(src->writer_features[i]),
                                   err)))
      return DK_NOMEM;
  dst->reader_features = r;
  dst->writer_features = w;
  return DK_OK;
}

/* "[p=a, q=1]" from a partitionValues object (Spark getPrettyPartitionMessage). */
static void pretty_partition(char *out, size_t cap, const dk_json_value *pv) {
  size_t k = 0;
  out[0] = 0;
  if (!pv || pv->type != DK_JSON_OBJECT || pv->len == 0) return;
  k += (size_t)snprintf(out + k, cap - k, "partition [");
  for (uint32_t i = 0; i < pv->len && k < cap; i++) {
    const dk_json_value *v = &pv->u.members[i].value;
    k += (size_t)snprintf(out + k, cap - k, "%s%s=%s", i ? ", " : "", pv->u.members[i].key,
                          v->type == DK_JSON_STRING ? v->u.str : "null");
  }
  if (k < cap) snprintf(out + k, cap - k, "]");
}

static void pretty_kv(char *out, size_t cap, const char *const *kv, size_t n) {
  size_t k = 0;
  out[0] = 0;
  if (!n) return;
  k += (size_t)snprintf(out + k, cap - k, "partition [");
  for (size_t i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%s=%s", i ? ", " : "", kv[2 * i],
                          kv[2 * i + 1] ? kv[2 * i + 1] : "null");
  if (k < cap) snprintf(out + k, cap - k, "]");
}

/* The value of logical partition column `col` in an add's partitionValues (physical keys). */
static const char *pv_value(const dk_txn *x, const dk_json_value *pv, const char *col) {
  const char *key = col;
  if (x->snap) {
    const dk_field *f = dk_schema_find(dk_snapshot_schema(x->snap), col);
    if (f && f->physical_name) key = f->physical_name;
  }
  const dk_json_value *v = pv ? dk__json_get(pv, key) : NULL;
  if (!v || v->type != DK_JSON_STRING || v->len == 0) return NULL;
  return v->u.str;
}

/* Index of the first winner add whose partition matches one of our read predicates, or -1. */
static dk_status first_matching_add(int64_t *out, dk_txn *x, const txn_winner *w,
                                    dk_error *err) {
  *out = -1;
  if (!w->n_adds) return DK_OK;
  size_t npc = x->snap ? dk_snapshot_metadata(x->snap)->n_partition_columns : 0;
  const char *const *pcols = x->snap ? dk_snapshot_metadata(x->snap)->partition_columns : NULL;
  if (x->read_whole || npc == 0) {
    *out = 0;
    return DK_OK;
  }
  /* a read predicate without partition conjuncts matches every file */
  for (size_t i = 0; i < x->n_preds; i++)
    if (!x->preds[i].partition) {
      *out = 0;
      return DK_OK;
    }
  /* dynamic partition overwrite: the partitions it replaced */
  for (size_t a = 0; a < w->n_adds && x->n_dyn; a++)
    for (size_t r = 0; r < x->n_dyn; r++) {
      size_t c = 0;
      for (; c < npc; c++) {
        const char *v = pv_value(x, w->add_pv[a], pcols[c]);
        const char *d = x->dyn_parts[r * npc + c];
        if (d && !*d) d = NULL;
        if ((v == NULL) != (d == NULL) || (v && strcmp(v, d))) break;
      }
      if (c == npc) {
        *out = (int64_t)a;
        return DK_OK;
      }
    }
  if (!x->n_preds) return DK_OK;
  /* evaluate the partition predicates over the winner's adds */
  struct ArrowSchema full, pschema;
  memset(&pschema, 0, sizeof pschema);
  DK_RETURN_NOT_OK(dk_snapshot_arrow_schema(&full, x->snap, 0, err));
  dk_status st = DK_OK;
  const char **vals = NULL;
  uint8_t *mask = NULL;
  dk_atype sty = dk__atype_make(DK_AT_STRUCT);
  st = dk__schema_init(&pschema, &sty, "", 0, (int64_t)npc, err);
  for (size_t k = 0; k < npc && !st; k++) {
    int64_t j = 0;
    while (j < full.n_children && strcasecmp(full.children[j]->name, pcols[k])) j++;
    if (j == full.n_children) {
      st = dk__error_set(err, DK_CORRUPT, "partition column '%s' is not in the schema", pcols[k]);
      break;
    }
    dk__schema_release(pschema.children[k]);
    st = dk__schema_copy(pschema.children[k], full.children[j], err);
  }
  if (!st) {
    vals = dk__calloc(x->alloc, w->n_adds * npc, sizeof *vals);
    mask = dk__malloc(x->alloc, w->n_adds);
    if (!vals || !mask) st = dk__error_set(err, DK_NOMEM, "out of memory (conflict check)");
  }
  for (size_t a = 0; a < w->n_adds && !st; a++)
    for (size_t k = 0; k < npc; k++) vals[a * npc + k] = pv_value(x, w->add_pv[a], pcols[k]);
  struct ArrowArray batch;
  memset(&batch, 0, sizeof batch);
  if (!st) st = dk_partition_batch(&batch, &pschema, vals, (int64_t)w->n_adds, err);
  for (size_t i = 0; i < x->n_preds && !st && *out < 0; i++) {
    dk_expr *bound = NULL;
    st = dk_expr_bind(&bound, x->preds[i].partition, &pschema, err);
    if (!st) st = dk_expr_eval_filter(mask, NULL, bound, &pschema, &batch, err);
    dk_expr_free(bound);
    for (size_t a = 0; a < w->n_adds && !st; a++)
      if (mask[a]) {
        *out = (int64_t)a;
        break;
      }
  }
  if (batch.release) batch.release(&batch);
  dk__free(x->alloc, vals);
  dk__free(x->alloc, mask);
  if (pschema.release) pschema.release(&pschema);
  full.release(&full);
  return st;
}

dk_status dk_txn__check_winner(dk_txn *x, const txn_winner *w, dk_isolation iso,
                               dk_conflict_kind *kind, dk_error *err) {
  const char *root = x->table->root;
  long long wv = (long long)w->version;
  char hint[512];
  /* 1. protocol */
  if (w->has_protocol) {
    dk_status st = dk_txn__check_write_protocol(&w->protocol, err);
    if (st) {
      dk__error_prefix(err, "%s: winning commit %lld", root, wv);
      return st;
    }
    if (x->has_new_protocol)
      return conflict(kind, DK_CONFLICT_PROTOCOL_CHANGED, err,
                      "The protocol version of the Delta table %s has been changed by a "
                      "concurrent update (%s) committed at version %lld.%s Please try the "
                      "operation again.",
                      root, op_name(w), wv,
                      w->version == 0 ? " This happens when multiple writers are writing to an "
                                        "empty directory. Creating the table ahead of time will "
                                        "avoid this conflict."
                                      : "");
    if (x->snap && dk_txn__protocol_removes_features(&w->protocol, dk_snapshot_protocol(x->snap)))
      return conflict(kind, DK_CONFLICT_PROTOCOL_CHANGED, err,
                      "The protocol version of the Delta table %s has been changed by a "
                      "concurrent update (%s) committed at version %lld that drops a table "
                      "feature. Please try the operation again.",
                      root, op_name(w), wv);
    DK_RETURN_NOT_OK(copy_protocol(&x->protocol, &x->ar, &w->protocol, err));
  }
  /* 2. metadata */
  if (w->has_meta) {
    if (x->has_new_meta) return conflict(kind, DK_CONFLICT_METADATA_CHANGED, err, META_FMT, root,
                                         op_name(w), wv);
    if (!w->identity_only) {
      const txn_meta *c = &x->meta, *m = &w->meta;
      int same_parts = c->n_part == m->n_part;
      for (size_t i = 0; same_parts && i < c->n_part; i++) same_parts = !strcmp(c->part[i], m->part[i]);
      if (!str_eq(c->id, m->id) || !str_eq(c->name, m->name) ||
          !str_eq(c->description, m->description) ||
          !str_eq(c->provider ? c->provider : "parquet", m->provider ? m->provider : "parquet") ||
          c->created_time != m->created_time || !same_parts)
        return conflict(kind, DK_CONFLICT_METADATA_CHANGED, err, META_FMT, root, op_name(w), wv);
      if (!config_changes_ok(x, c, m))
        return conflict(kind, DK_CONFLICT_METADATA_CHANGED, err, META_FMT, root, op_name(w), wv);
      if (!str_eq(c->schema_string, m->schema_string) && !schema_change_ok(x, c, m))
        return conflict(kind, DK_CONFLICT_METADATA_CHANGED, err, META_FMT, root, op_name(w), wv);
      DK_RETURN_NOT_OK(copy_meta(&x->meta, &x->ar, m, err));
    }
  }
  /* 3. domain metadata */
  if (dk_txn__protocol_supports(&x->protocol, "domainMetadata"))
    for (size_t i = 0; i < x->n_domains; i++)
      if (in_list(w->domains, w->n_domains, x->domains[i].domain))
        return conflict(kind, DK_CONFLICT_CONCURRENT_TRANSACTION, err,
                        "A conflicting metadata domain %s is added (by %s, committed at version "
                        "%lld).",
                        x->domains[i].domain, op_name(w), wv);
  /* 4. app transactions we read */
  for (size_t i = 0; i < w->n_apps; i++)
    if (dk__hmap_get(&x->read_apps, w->apps[i], strlen(w->apps[i])))
      return conflict(kind, DK_CONFLICT_CONCURRENT_TRANSACTION, err,
                      "This error occurs when multiple streaming queries are using the same "
                      "checkpoint to write into this table: app '%s' was updated by a "
                      "concurrent %s committed at version %lld. Did you run multiple instances "
                      "of the same streaming query at the same time?",
                      w->apps[i], op_name(w), wv);
  /* 5. row tracking: the next serialization assigns ids above the winner's high-water mark */
  if (w->hwm > x->read_hwm) x->read_hwm = w->hwm;
  /* 6. files added that we should have read */
  int check_adds = !dk_txn__is_blind_append(x) && iso != DK_ISOLATION_SNAPSHOT &&
                   !(iso == DK_ISOLATION_WRITE_SERIALIZABLE && !x->has_new_meta &&
                     w->is_blind_append == 1);
  if (check_adds) {
    int64_t a;
    DK_RETURN_NOT_OK(first_matching_add(&a, x, w, err));
    if (a >= 0) {
      pretty_partition(hint, sizeof hint, w->add_pv[a]);
      return conflict(kind, DK_CONFLICT_CONCURRENT_APPEND, err,
                      "[DELTA_CONCURRENT_APPEND.%s] Transaction conflict detected. A concurrent "
                      "%s added data to table %s committed at version %lld.%s%s%s Please retry "
                      "the operation.",
                      hint[0] ? "WITH_PARTITION_HINT" : "WITHOUT_HINT", op_name(w), root, wv,
                      hint[0] ? " The concurrent operation modified data in the " : "", hint,
                      hint[0] ? " that should have been read by this operation." : "");
    }
  }
  /* 7. files removed that we read */
  for (size_t i = 0; i < w->n_removes; i++) {
    const char *p = w->remove_paths[i];
    if (!p) continue;
    if (dk__hmap_get(&x->read_paths, p, strlen(p)) || x->read_whole) {
      hint[0] = 0;
      if (!x->read_whole && x->snap)
        for (int64_t f = 0; f < dk_snapshot_num_files(x->snap); f++) {
          dk_file_entry fe;
          if (dk_snapshot_file(&fe, x->snap, f, NULL) == DK_OK && !strcmp(fe.path, p)) {
            pretty_kv(hint, sizeof hint, fe.partition_kv, fe.n_partition_values);
            break;
          }
        }
      return conflict(kind, DK_CONFLICT_CONCURRENT_DELETE_READ, err,
                      "[DELTA_CONCURRENT_DELETE_READ.%s] Transaction conflict detected. A "
                      "concurrent %s deleted data from table %s committed at version %lld%s%s "
                      "that should have been read by this operation. Please retry the "
                      "operation.",
                      hint[0] ? "WITH_PARTITION_HINT" : "WITHOUT_HINT", op_name(w), root, wv,
                      hint[0] ? " in " : "", hint);
    }
  }
  /* 8. files removed twice */
  for (size_t i = 0; i < w->n_removes; i++) {
    const char *p = w->remove_paths[i];
    if (p && dk__hmap_get(&x->removed_paths, p, strlen(p))) {
      hint[0] = 0;
      for (size_t r = 0; r < x->n_removes; r++) {
        dk_file_entry fe;
        if (dk_snapshot_file(&fe, x->snap, x->removes[r].idx, NULL) == DK_OK &&
            !strcmp(fe.path, p)) {
          pretty_kv(hint, sizeof hint, fe.partition_kv, fe.n_partition_values);
          break;
        }
      }
      return conflict(kind, DK_CONFLICT_CONCURRENT_DELETE_DELETE, err,
                      "[DELTA_CONCURRENT_DELETE_DELETE.%s] Transaction conflict detected. A "
                      "concurrent %s deleted data from table %s committed at version %lld%s%s "
                      "that this operation also deletes. Please retry the operation.",
                      hint[0] ? "WITH_PARTITION_HINT" : "WITHOUT_HINT", op_name(w), root, wv,
                      hint[0] ? " in " : "", hint);
    }
  }
  /* 9. in-commit timestamps stay increasing */
  int64_t wt = w->ict >= 0 ? w->ict : w->file_mtime;
  if (wt > x->last_ict) x->last_ict = wt;
  return DK_OK;
}
