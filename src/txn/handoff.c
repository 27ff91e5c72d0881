/*
** handoff.c — a transaction whose data files are written by other processes: the driver /
** executor split of distributed engines (delta-spark's DelayedCommitProtocol; Kernel's
** transaction state + generateAppendActions; write-path.md §5, spark-v2-connector-spec.md
** §8.2). The driver's transaction exports its metadata and protocol (dk_txn_writer_state);
** a writer transaction rebuilt from them (dk_txn_begin_writer) writes files through
** dk_txn_write exactly as a local write would and exports its staged adds
** (dk_txn_staged_adds); the driver stages them (dk_txn_add_staged) and commits once.
**
** Both texts are Delta log lines (PROTOCOL.md "Protocol Evolution", "Change Metadata", "Add
** File") parsed and written by src/protocol/actions.c: the state is a protocol line and a
** metaData line; the adds are add lines whose path is the stored path (not URI-encoded:
** they never reach the log as such).
*/
#include <stdlib.h>
#include <string.h>

#include "protocol/actions.h"
#include "txn/txn_int.h"

#define STATE_TAG "{\"dkWriterState\":1}\n"

dk_status dk_txn_writer_state(char **out, size_t *len, const dk_txn *x, dk_error *err) {
  *out = NULL;
  if (len) *len = 0;
  DK_RETURN_IF(!x, DK_INVALID, err, "dk_txn_writer_state: NULL transaction");
  DK_RETURN_IF(!x->meta.schema_string, DK_INVALID, err,
               "dk_txn_writer_state: the new table has no metadata yet (dk_txn_set_metadata)");
  dk_buf b;
  dk__buf_init(&b, NULL); /* the caller frees with dk_free */
  dk_status st = dk__buf_puts(&b, STATE_TAG, err);
  if (!st) st = dk_txn__put_protocol(&b, &x->protocol, err);
  if (!st) st = dk_txn__put_metadata(&b, &x->meta, NULL, 0, err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  if (len) *len = b.len;
  *out = dk__buf_detach(&b);
  return DK_OK;
}

/* Calls fn on each non-blank line of text as one parsed action. */
typedef dk_status (*line_fn)(void *ctx, const dk__action *a, dk_error *err);

static dk_status each_action(const char *text, size_t len, dk_arena *ar, line_fn fn, void *ctx,
                             const char *what, dk_error *err) {
  size_t p = 0;
  while (p < len) {
    size_t e = p;
    while (e < len && text[e] != '\n') e++;
    size_t q = p;
    while (q < e && (text[q] == ' ' || text[q] == '\r' || text[q] == '\t')) q++;
    if (q < e) {
      dk_json_value *v = NULL;
      DK_RETURN_NOT_OK(dk__json_parse(&v, ar, text + q, e - q, err));
      if (v->type != DK_JSON_OBJECT || v->len != 1)
        return dk__error_set(err, DK_CORRUPT, "%s: line at byte %zu is not one action", what, q);
      dk__action a;
      DK_RETURN_NOT_OK(dk_protocol__action_parse(&a, v->u.members[0].key, &v->u.members[0].value,
                                                 ar, err));
      DK_RETURN_NOT_OK(fn(ctx, &a, err));
    }
    p = e + 1;
  }
  return DK_OK;
}

typedef struct state_ctx {
  dk_txn *x;
  int tag, has_protocol, has_meta;
} state_ctx;

static dk_status state_line(void *ctx, const dk__action *a, dk_error *err) {
  state_ctx *c = ctx;
  if (a->kind == DK_ACTION_PROTOCOL) {
    c->x->protocol = a->u.protocol; /* arrays and strings live in the transaction's arena */
    c->has_protocol = 1;
  } else if (a->kind == DK_ACTION_METADATA) {
    DK_RETURN_NOT_OK(dk_txn__meta_from_snapshot(&c->x->meta, &c->x->ar, &a->u.metadata, err));
    c->has_meta = 1;
  } else if (a->name.len == 13 && !memcmp(a->name.ptr, "dkWriterState", 13)) {
    c->tag = 1;
  } else {
    return dk__error_set(err, DK_CORRUPT, "writer state: unexpected action '%.*s'",
                         (int)a->name.len, a->name.ptr);
  }
  return DK_OK;
}

dk_status dk_txn_begin_writer(dk_txn **out, dk_table *t, const char *state, size_t len,
                              const dk_txn_options *opts, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!t || !state, DK_INVALID, err, "dk_txn_begin_writer: no table or state");
  dk_txn *x;
  DK_RETURN_NOT_OK(dk_txn_begin_create(&x, t, opts, err));
  state_ctx c = {.x = x};
  dk_status st = each_action(state, len, &x->ar, state_line, &c, "writer state", err);
  if (!st && (!c.tag || !c.has_protocol || !c.has_meta || !x->meta.schema_string))
    st = dk__error_set(err, DK_CORRUPT,
                       "writer state: not the text of dk_txn_writer_state (no %s)",
                       !c.tag ? "tag" : !c.has_protocol ? "protocol" : "metadata");
  if (!st)
    st = dk_schema__parse(&x->meta_schema, &x->ar, x->meta.schema_string,
                          strlen(x->meta.schema_string), err);
  if (!st) {
    st = dk_txn__check_write_protocol(&x->protocol, err);
    if (st) dk__error_prefix(err, "%s", t->root);
  }
  if (st) {
    dk_txn_abort(x);
    return st;
  }
  x->writer = 1;
  *out = x;
  return DK_OK;
}

static dk_str view(const char *s) {
  dk_str v = {s, s ? strlen(s) : 0};
  return v;
}

dk_status dk_txn_staged_adds(char **out, size_t *len, const dk_txn *x, dk_error *err) {
  *out = NULL;
  if (len) *len = 0;
  DK_RETURN_IF(!x, DK_INVALID, err, "dk_txn_staged_adds: NULL transaction");
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status st = dk__buf_reserve(&b, 1, err); /* "" rather than NULL when nothing is staged */
  dk_str pv[128];
  for (size_t i = 0; i < x->n_adds && !st; i++) {
    const txn_add *f = &x->adds[i];
    if (f->dv) {
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "dk_txn_staged_adds: add '%s' has a deletion vector (not exported)",
                         f->path);
      break;
    }
    if (f->n_pv > DK_ARRAY_LEN(pv) / 2) {
      st = dk__error_set(err, DK_UNSUPPORTED, "more than %zu partition columns",
                         DK_ARRAY_LEN(pv) / 2);
      break;
    }
    for (size_t k = 0; k < 2 * f->n_pv; k++) pv[k] = view(f->pv[k]);
    dk__action a;
    memset(&a, 0, sizeof a);
    a.kind = DK_ACTION_ADD;
    a.name = view("add");
    a.u.add.path = view(f->path);
    a.u.add.n_pv = f->n_pv;
    a.u.add.pv = pv;
    a.u.add.size = f->size;
    a.u.add.mtime = f->mtime;
    a.u.add.data_change = f->data_change;
    a.u.add.stats = view(f->stats);
    a.u.add.tags_json = view(f->tags);
    a.u.add.dv_max_row_index = -1;
    a.u.add.dv_offset = -1;
    a.u.add.clustering_provider = view(f->clustering);
    st = dk_protocol__action_write(&b, &a, err);
  }
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  if (len) *len = b.len;
  *out = dk__buf_detach(&b);
  return DK_OK;
}

typedef struct adds_ctx {
  dk_txn *x;
  const char **phys; /* the partition columns' physical names */
  int64_t n;
} adds_ctx;

static char *dup_view(dk_arena *ar, dk_str s, dk_error *err) {
  return s.ptr ? dk__arena_strndup(ar, s.ptr, s.len, err) : NULL;
}

static dk_status add_line(void *ctx, const dk__action *a, dk_error *err) {
  adds_ctx *c = ctx;
  dk_txn *x = c->x;
  DK_RETURN_IF(a->kind != DK_ACTION_ADD, DK_CORRUPT, err,
               "staged adds: unexpected action '%.*s'", (int)a->name.len, a->name.ptr);
  const dk__add *in = &a->u.add;
  DK_RETURN_IF(!in->path.ptr || !in->path.len || in->size < 0, DK_CORRUPT, err,
               "staged adds: an add without path or size");
  DK_RETURN_IF(in->has_dv, DK_UNSUPPORTED, err, "staged adds: deletion vectors are not taken");
  DK_RETURN_IF(in->n_pv != x->meta.n_part, DK_INVALID, err,
               "staged add '%.*s': %zu partition values for %zu partition columns "
               "(DELTA_INVALID_PARTITIONING_SCHEMA)",
               (int)in->path.len, in->path.ptr, in->n_pv, x->meta.n_part);
  dk_file_entry f;
  memset(&f, 0, sizeof f);
  f.version = DK_FILE_ENTRY_VERSION;
  f.path = dup_view(&x->ar, in->path, err);
  f.size = in->size;
  f.modification_time = in->mtime;
  f.n_partition_values = in->n_pv;
  const char **kv = in->n_pv ? dk__arena_alloc(&x->ar, 2 * in->n_pv * sizeof *kv, err) : NULL;
  if (!f.path || (in->n_pv && !kv)) return DK_NOMEM;
  /* in the table's partition-column order, keyed by physical name */
  for (size_t k = 0; k < x->meta.n_part; k++) {
    size_t j = 0;
    while (j < in->n_pv && !(in->pv[2 * j].len == strlen(c->phys[k]) &&
                             !memcmp(in->pv[2 * j].ptr, c->phys[k], in->pv[2 * j].len)))
      j++;
    DK_RETURN_IF(j == in->n_pv, DK_INVALID, err,
                 "staged add '%s': no value for partition column '%s' "
                 "(DELTA_INVALID_PARTITIONING_SCHEMA)",
                 f.path, x->meta.part[k]);
    kv[2 * k] = c->phys[k];
    kv[2 * k + 1] = dup_view(&x->ar, in->pv[2 * j + 1], err);
    if (in->pv[2 * j + 1].ptr && !kv[2 * k + 1]) return DK_NOMEM;
  }
  f.partition_kv = kv;
  f.stats = dup_view(&x->ar, in->stats, err);
  f.tags_json = dup_view(&x->ar, in->tags_json, err);
  if ((in->stats.ptr && !f.stats) || (in->tags_json.ptr && !f.tags_json)) return DK_NOMEM;
  DK_RETURN_NOT_OK(dk_txn__add_entry(x, &f, in->data_change, err));
  if (in->clustering_provider.ptr) {
    x->adds[x->n_adds - 1].clustering = dup_view(&x->ar, in->clustering_provider, err);
    if (!x->adds[x->n_adds - 1].clustering) return DK_NOMEM;
  }
  c->n++;
  return DK_OK;
}

dk_status dk_txn_add_staged(dk_txn *x, const char *adds, size_t len, int64_t *n, dk_error *err) {
  if (n) *n = 0;
  DK_RETURN_IF(!x || (!adds && len), DK_INVALID, err, "dk_txn_add_staged: NULL");
  DK_RETURN_IF(!x->meta.schema_string, DK_INVALID, err,
               "dk_txn_add_staged: the new table has no metadata yet");
  const dk_type *schema = x->meta_schema ? x->meta_schema
                          : x->snap      ? dk_snapshot_schema(x->snap)
                                         : NULL;
  if (!schema)
    DK_RETURN_NOT_OK(dk_schema__parse(&schema, &x->ar, x->meta.schema_string,
                                      strlen(x->meta.schema_string), err));
  adds_ctx c = {.x = x};
  c.phys = x->meta.n_part ? dk__arena_alloc(&x->ar, x->meta.n_part * sizeof *c.phys, err) : NULL;
  if (x->meta.n_part && !c.phys) return DK_NOMEM;
  for (size_t k = 0; k < x->meta.n_part; k++) {
    const dk_field *f = dk_schema_find(schema, x->meta.part[k]);
    c.phys[k] = f && f->physical_name ? f->physical_name : x->meta.part[k];
  }
  /* parse into a scratch arena: only what is staged is copied into the transaction's */
  dk_arena tmp;
  dk__arena_init(&tmp, x->alloc, 16384);
  size_t before = x->n_adds;
  dk_status st = each_action(adds, len, &tmp, add_line, &c, "staged adds", err);
  dk__arena_dispose(&tmp);
  if (st) {
    x->n_adds = before; /* all or nothing */
    return st;
  }
  if (n) *n = c.n;
  return DK_OK;
}
