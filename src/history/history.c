/*
** history.c — table history (commitInfo per version) and commit ranges (the actions of
** versions a..b, for change data feed and streaming), above the snapshot module.
**
** Follows PROTOCOL.md "Commit Provenance Information" and "In-Commit Timestamps".
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dk/history.h"
#include "log/paths.h"
#include "protocol/actions.h"
#include "snapshot/snapshot_int.h"

/* ---- history ---------------------------------------------------------------------------- */

typedef struct hist_entry {
  int64_t version, timestamp;
  const char *json;
} hist_entry;

struct dk_history {
  const dk_allocator *alloc;
  dk_arena ar;
  hist_entry *e;
  size_t n;
};

dk_status dk_history_open(dk_history **out, dk_table *t, int64_t limit, dk_error *err) {
  dk__log lg = dk_snapshot__log(t);
  *out = NULL;
  /* without the latest metadata, a commit's time is its ICT when its commitInfo has one (the
   * same versions, in a valid table, as the enablement version gives) */
  dk__commit_times ct;
  dk_status st = dk_log__commit_times_open(&ct, &lg, DK__ICT_FROM_COMMITS, err);
  const dk__logfile *const *c = ct.c;
  size_t n = ct.n;
  dk_history *h = NULL;
  if (st == DK_OK) {
    h = dk__calloc(t->alloc, 1, sizeof *h);
    size_t want = limit > 0 && (size_t)limit < n ? (size_t)limit : n;
    if (h) h->e = dk__calloc(t->alloc, want ? want : 1, sizeof *h->e);
    if (!h || !h->e) {
      st = dk__error_set(err, DK_NOMEM, "out of memory");
    } else {
      h->alloc = t->alloc;
      dk__arena_init(&h->ar, t->alloc, 64 * 1024);
      dk_buf b;
      dk__buf_init(&b, t->alloc);
      for (size_t i = 0; i < want && st == DK_OK; i++) {
        size_t idx = n - 1 - i;
        const dk__logfile *lf = c[idx];
        dk_arena tmp;
        dk__arena_init(&tmp, t->alloc, 16 * 1024);
        const dk_json_value *ci = NULL;
        st = dk_log__commit_info(&ci, &lg, lf, &tmp, err);
        if (st == DK_OK) {
          dk__buf_clear(&b);
          st = ci ? dk__json_write_value(&b, ci, err) : dk__buf_puts(&b, "{}", err);
        }
        hist_entry *e = &h->e[h->n];
        int64_t ict;
        if (!dk__json_as_i64(dk__json_get(ci, "inCommitTimestamp"), &ict)) ict = -1;
        if (st == DK_OK) st = dk_log__commit_time(&e->timestamp, &lg, &ct, idx, ict, err);
        if (st == DK_OK) {
          e->version = lf->version;
          e->json = dk__arena_strndup(&h->ar, b.data ? b.data : "", b.len, err);
          if (!e->json)
            st = DK_NOMEM;
          else
            h->n++;
        }
        dk__arena_dispose(&tmp);
      }
      dk__buf_dispose(&b);
    }
  }
  dk_log__commit_times_dispose(&ct);
  if (st != DK_OK) {
    dk_history_free(h);
    return st;
  }
  *out = h;
  return DK_OK;
}

void dk_history_free(dk_history *h) {
  if (!h) return;
  dk__arena_dispose(&h->ar);
  dk__free(h->alloc, h->e);
  dk__free(h->alloc, h);
}

size_t dk_history_count(const dk_history *h) { return h->n; }

void dk_history_entry(int64_t *version, int64_t *timestamp, const char **commit_info_json,
                      const dk_history *h, size_t i) {
  if (i >= h->n) {
    if (version) *version = -1;
    if (timestamp) *timestamp = -1;
    if (commit_info_json) *commit_info_json = NULL;
    return;
  }
  if (version) *version = h->e[i].version;
  if (timestamp) *timestamp = h->e[i].timestamp;
  if (commit_info_json) *commit_info_json = h->e[i].json;
}

/* ---- commit ranges ---------------------------------------------------------------------- */

struct dk_commit_range {
  const dk_allocator *alloc;
  dk_arena ar;               /* every view and string handed out */
  dk_action *a;
  size_t n, cap;
  int64_t first, last;
  int64_t *ts;               /* commit time per version */
};

typedef struct range_ctx {
  dk_commit_range *r;
  const char *root;
  int64_t version;
  int64_t ict;               /* the commit's inCommitTimestamp, -1 = none */
  dk_arena *tmp;             /* the commit's parse */
  dk_status st;
  dk_error *err;
} range_ctx;

/* Copies of strings and arrays into the range's arena (NULL stays NULL). */
static const char *rstr(dk_commit_range *r, dk_str s, dk_error *err, dk_status *st) {
  if (!s.ptr || *st != DK_OK) return NULL;
  char *p = dk__arena_strndup(&r->ar, s.ptr, s.len, err);
  if (!p) *st = DK_NOMEM;
  return p;
}

static const char *rcstr(dk_commit_range *r, const char *s, dk_error *err, dk_status *st) {
  dk_str v = {s, s ? strlen(s) : 0};
  return rstr(r, v, err, st);
}

static const char *const *rkv(dk_commit_range *r, const dk_str *kv, size_t n, dk_error *err,
                              dk_status *st) {
  if (!n || *st != DK_OK) return NULL;
  const char **out = dk__arena_alloc(&r->ar, 2 * n * sizeof *out, err);
  if (!out) {
    *st = DK_NOMEM;
    return NULL;
  }
  for (size_t i = 0; i < 2 * n; i++) out[i] = rstr(r, kv[i], err, st);
  return out;
}

static const char *const *rstrs(dk_commit_range *r, const char *const *a, size_t n,
                                dk_error *err, dk_status *st) {
  if (!a || *st != DK_OK) return a;
  if (!n) {
    static const char *const empty[1] = {NULL};
    return empty;
  }
  const char **out = dk__arena_alloc(&r->ar, n * sizeof *out, err);
  if (!out) {
    *st = DK_NOMEM;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) out[i] = rcstr(r, a[i], err, st);
  return out;
}

static void *ralloc(dk_commit_range *r, size_t n, dk_error *err, dk_status *st) {
  if (*st != DK_OK) return NULL;
  void *p = dk__arena_alloc(&r->ar, n, err);
  if (!p) *st = DK_NOMEM;
  else memset(p, 0, n);
  return p;
}

static const dk_dv_descriptor *rdv(dk_commit_range *r, char type, dk_str path, int32_t offset,
                                   int32_t size, int64_t card, dk_error *err, dk_status *st) {
  dk_dv_descriptor *dv = ralloc(r, sizeof *dv, err, st);
  if (!dv) return NULL;
  dv->storage_type = type;
  dv->path_or_inline_dv = rstr(r, path, err, st);
  dv->offset = offset;
  dv->size_in_bytes = size;
  dv->cardinality = card;
  return dv;
}

/* The public view of a parsed file action. */
static dk_action_file *file_view(range_ctx *c, const dk__action *pa, dk_status *st) {
  dk_commit_range *r = c->r;
  dk_error *err = c->err;
  dk_action_file *f = ralloc(r, sizeof *f, err, st);
  if (!f) return NULL;
  dk_str path = {NULL, 0};
  f->modification_time = f->deletion_timestamp = -1;
  f->extended_file_metadata = -1;
  if (pa->kind == DK_ACTION_ADD) {
    const dk__add *a = &pa->u.add;
    path = a->path;
    f->n_partition_values = a->n_pv;
    f->partition_kv = rkv(r, a->pv, a->n_pv, err, st);
    f->has_partition_values = 1;
    f->size = a->size;
    f->modification_time = a->mtime;
    f->data_change = a->data_change;
    f->stats = rstr(r, a->stats, err, st);
    f->tags_json = rstr(r, a->tags_json, err, st);
    if (a->has_dv)
      f->dv = rdv(r, a->dv_type, a->dv_path, a->dv_offset, a->dv_size, a->dv_card, err, st);
    f->has_base_row_id = a->has_brid;
    f->base_row_id = a->brid;
    f->has_default_row_commit_version = a->has_drcv;
    f->default_row_commit_version = a->drcv;
  } else if (pa->kind == DK_ACTION_REMOVE) {
    const dk__remove *m = &pa->u.remove;
    path = m->path;
    f->n_partition_values = m->n_pv;
    f->partition_kv = rkv(r, m->pv, m->n_pv, err, st);
    f->has_partition_values = m->has_pv;
    f->size = m->size;
    f->deletion_timestamp = m->deletion_timestamp;
    f->data_change = m->data_change;
    f->extended_file_metadata = m->extended_file_metadata;
    f->stats = rstr(r, m->stats, err, st);
    f->tags_json = rstr(r, m->tags_json, err, st);
    if (m->dv) {
      dk_str dp = {m->dv->path_or_inline_dv, strlen(m->dv->path_or_inline_dv)};
      f->dv = rdv(r, m->dv->storage_type, dp, m->dv->offset, m->dv->size_in_bytes,
                  m->dv->cardinality, err, st);
    }
    f->has_base_row_id = m->has_brid;
    f->base_row_id = m->brid;
    f->has_default_row_commit_version = m->has_drcv;
    f->default_row_commit_version = m->drcv;
  } else { /* cdc */
    const dk__cdc *d = &pa->u.cdc;
    path = d->path;
    f->n_partition_values = d->n_pv;
    f->partition_kv = rkv(r, d->pv, d->n_pv, err, st);
    f->has_partition_values = 1;
    f->size = d->size;
    f->data_change = d->data_change;
    f->tags_json = rstr(r, d->tags_json, err, st);
  }
  if (*st != DK_OK) return NULL;
  if (!path.ptr) {
    *st = dk__error_set(err, DK_CORRUPT, "version %" PRId64 ": %.*s without a path", c->version,
                        (int)pa->name.len, pa->name.ptr);
    return NULL;
  }
  const char *cp;
  size_t cl;
  *st = dk_log__canonical_path(&cp, &cl, &r->ar, c->root, strlen(c->root), path.ptr, path.len,
                               err);
  f->path = cp;
  return *st == DK_OK ? f : NULL;
}

static dk_status typed_view(range_ctx *c, dk_action *out, const dk__action *pa) {
  dk_commit_range *r = c->r;
  dk_error *err = c->err;
  dk_status st = DK_OK;
  switch (pa->kind) {
    case DK_ACTION_ADD:
    case DK_ACTION_REMOVE:
    case DK_ACTION_CDC:
      out->file = file_view(c, pa, &st);
      if (out->file) out->path = out->file->path;
      break;
    case DK_ACTION_METADATA: {
      const dk_metadata *in = &pa->u.metadata;
      dk_metadata *m = ralloc(r, sizeof *m, err, &st);
      if (!m) break;
      *m = *in;
      m->id = rcstr(r, in->id, err, &st);
      m->name = rcstr(r, in->name, err, &st);
      m->description = rcstr(r, in->description, err, &st);
      m->format_provider = rcstr(r, in->format_provider, err, &st);
      m->schema_string = rcstr(r, in->schema_string, err, &st);
      m->partition_columns = rstrs(r, in->partition_columns, in->n_partition_columns, err, &st);
      m->config_keys = rstrs(r, in->config_keys, in->n_configuration, err, &st);
      m->config_values = rstrs(r, in->config_values, in->n_configuration, err, &st);
      out->metadata = m;
      break;
    }
    case DK_ACTION_PROTOCOL: {
      const dk_protocol *in = &pa->u.protocol;
      dk_protocol *p = ralloc(r, sizeof *p, err, &st);
      if (!p) break;
      *p = *in;
      p->reader_features = rstrs(r, in->reader_features, in->n_reader_features, err, &st);
      p->writer_features = rstrs(r, in->writer_features, in->n_writer_features, err, &st);
      out->protocol = p;
      break;
    }
    case DK_ACTION_TXN: {
      dk_action_txn *t = ralloc(r, sizeof *t, err, &st);
      if (!t) break;
      t->app_id = rstr(r, pa->u.txn.app_id, err, &st);
      t->version = pa->u.txn.version;
      t->last_updated = pa->u.txn.last_updated;
      out->txn = t;
      break;
    }
    case DK_ACTION_DOMAIN_METADATA: {
      dk_action_domain *d = ralloc(r, sizeof *d, err, &st);
      if (!d) break;
      d->domain = rstr(r, pa->u.domain.domain, err, &st);
      dk_str cfg = pa->u.domain.configuration.ptr ? pa->u.domain.configuration : (dk_str){"", 0};
      d->configuration = rstr(r, cfg, err, &st);
      d->removed = pa->u.domain.removed;
      out->domain = d;
      break;
    }
    case DK_ACTION_COMMIT_INFO: {
      dk_action_commit_info *ci = ralloc(r, sizeof *ci, err, &st);
      if (!ci) break;
      ci->timestamp = pa->u.commit_info.timestamp;
      ci->in_commit_timestamp = pa->u.commit_info.in_commit_timestamp;
      ci->operation = rstr(r, pa->u.commit_info.operation, err, &st);
      ci->json = rstr(r, pa->u.commit_info.json, err, &st);
      if (ci->in_commit_timestamp >= 0) c->ict = ci->in_commit_timestamp;
      out->commit_info = ci;
      break;
    }
    default: break; /* checkpointMetadata, sidecar (V2 checkpoints only), unknown: kind only */
  }
  return st;
}

static bool range_line(const dk_json_value *line, void *payload) {
  range_ctx *c = payload;
  dk_commit_range *r = c->r;
  if (!line || line->type != DK_JSON_OBJECT) {
    c->st = dk__error_set(c->err, DK_CORRUPT, "version %" PRId64 ": action line is not an object",
                          c->version);
    return false;
  }
  for (uint32_t i = 0; i < line->len; i++) {
    const dk_json_member *m = &line->u.members[i];
    if (m->value.type != DK_JSON_OBJECT) continue;
    if (r->n == r->cap) {
      size_t nc = r->cap ? r->cap * 2 : 64;
      dk_action *p = dk__realloc(r->alloc, r->a, nc * sizeof *p);
      if (!p) {
        c->st = dk__error_set(c->err, DK_NOMEM, "out of memory");
        return false;
      }
      r->a = p;
      r->cap = nc;
    }
    dk__action pa;
    c->st = dk_protocol__action_parse(&pa, m->key, &m->value, c->tmp, c->err);
    if (c->st != DK_OK) {
      dk__error_prefix(c->err, "version %" PRId64, c->version);
      return false;
    }
    dk_action *a = &r->a[r->n];
    memset(a, 0, sizeof *a);
    a->kind = pa.kind;
    a->version = c->version;
    c->st = typed_view(c, a, &pa);
    if (c->st != DK_OK) return false;
    r->n++;
  }
  return true;
}

dk_status dk_commit_range_open(dk_commit_range **out, dk_table *t, int64_t first, int64_t last,
                               dk_error *err) {
  dk__log lg = dk_snapshot__log(t);
  *out = NULL;
  if (first < 0 || last < first)
    return dk__error_set(err, DK_INVALID, "invalid commit range %" PRId64 "..%" PRId64, first,
                         last);
  dk__commit_times ct;
  dk_status st = dk_log__commit_times_open(&ct, &lg, DK__ICT_FROM_COMMITS, err);
  if (st == DK_NOT_FOUND) { /* no commit at all: as before, commit `first` is not there */
    if (err) dk_error_init(err);
    st = dk__error_set(err, DK_NOT_FOUND, "%s: commit %" PRId64 " is not available", t->root,
                       first);
  }
  const dk__logfile *const *c = ct.c;
  size_t n = ct.n;
  dk_commit_range *r = NULL;
  size_t start = n;
  if (st == DK_OK) {
    /* the commits first..last must all exist */
    start = dk_log__commit_index(&ct, first);
    if (start == n) {
      st = dk__error_set(err, first > c[n - 1]->version ? DK_NOT_FOUND : DK_OUT_OF_RANGE,
                         "%s: commit %" PRId64 " is not available", t->root, first);
    } else {
      for (int64_t v = first; v <= last; v++) {
        size_t i = start + (size_t)(v - first);
        if (i >= n || c[i]->version != v) {
          st = dk__error_set(err, i >= n ? DK_NOT_FOUND : DK_CORRUPT,
                             "%s: commit %" PRId64 " is missing", t->root, v);
          break;
        }
      }
    }
  }
  if (st == DK_OK) {
    r = dk__calloc(t->alloc, 1, sizeof *r);
    if (r) r->ts = dk__calloc(t->alloc, (size_t)(last - first + 1), sizeof *r->ts);
    if (!r || !r->ts) st = dk__error_set(err, DK_NOMEM, "out of memory");
  }
  if (st == DK_OK) {
    r->alloc = t->alloc;
    r->first = first;
    r->last = last;
    dk__arena_init(&r->ar, t->alloc, 64 * 1024);
    for (int64_t v = first; v <= last && st == DK_OK; v++) {
      size_t idx = start + (size_t)(v - first);
      dk_arena tmp;
      dk__arena_init(&tmp, t->alloc, 64 * 1024);
      range_ctx ctx = {r, t->root, v, -1, &tmp, DK_OK, err};
      st = dk_log__scan_commit(&lg, c[idx], &tmp, range_line, &ctx, err);
      if (st == DK_OK) st = ctx.st;
      if (st == DK_OK) st = dk_log__commit_time(&r->ts[v - first], &lg, &ct, idx, ctx.ict, err);
      dk__arena_dispose(&tmp);
    }
  }
  dk_log__commit_times_dispose(&ct);
  if (st != DK_OK) {
    dk_commit_range_free(r);
    return st;
  }
  *out = r;
  return DK_OK;
}

void dk_commit_range_free(dk_commit_range *r) {
  if (!r) return;
  dk__arena_dispose(&r->ar);
  dk__free(r->alloc, r->a);
  dk__free(r->alloc, r->ts);
  dk__free(r->alloc, r);
}

size_t dk_commit_range_count(const dk_commit_range *r) { return r->n; }
const dk_action *dk_commit_range_action(const dk_commit_range *r, size_t i) {
  return i < r->n ? &r->a[i] : NULL;
}
int64_t dk_commit_range_timestamp(const dk_commit_range *r, int64_t v) {
  if (v < r->first || v > r->last) return -1;
  return r->ts[v - r->first];
}
