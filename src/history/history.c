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
  dk__segment seg;
  const dk__logfile **c = NULL;
  size_t n = 0;
  dk_status st = dk_log__list_all(&seg, t->sto, t->root, t->alloc, err);
  if (st == DK_OK) st = dk_log__commit_list(&seg, &c, &n, t->alloc, err);
  if (st == DK_OK && n == 0)
    st = dk__error_set(err, DK_NOT_FOUND, "not a Delta table: %s/_delta_log has no commits",
                       t->root);
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
        const dk__logfile *lf = c[n - 1 - i];
        dk_arena tmp;
        dk__arena_init(&tmp, t->alloc, 16 * 1024);
        const dk_json_value *ci = NULL;
        st = dk_log__commit_info(&ci, &lg, lf, &tmp, err);
        if (st == DK_OK) {
          dk__buf_clear(&b);
          st = ci ? dk__json_write_value(&b, ci, err) : dk__buf_puts(&b, "{}", err);
        }
        if (st == DK_OK) {
          hist_entry *e = &h->e[h->n];
          e->version = lf->version;
          int64_t ict;
          e->timestamp = dk__json_as_i64(dk__json_get(ci, "inCommitTimestamp"), &ict) ? ict
                                                                                      : lf->mtime;
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
  dk__free(t->alloc, c);
  dk_log__segment_dispose(&seg);
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

void dk_history_entry(const dk_history *h, size_t i, int64_t *version, int64_t *timestamp,
                      const char **commit_info_json) {
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
  dk_arena ar;
  dk_action *a;
  size_t n, cap;
  int64_t first, last;
  int64_t *ts; /* per version */
};

typedef struct range_ctx {
  dk_commit_range *r;
  dk_table *t;
  int64_t version;
  int64_t ict;
  dk_buf buf;
  dk_status st;
  dk_error *err;
} range_ctx;

static dk_action_kind kind_of(const char *k) {
  static const struct {
    const char *k;
    dk_action_kind v;
  } m[] = {{"add", DK_ACTION_ADD},
           {"remove", DK_ACTION_REMOVE},
           {"metaData", DK_ACTION_METADATA},
           {"protocol", DK_ACTION_PROTOCOL},
           {"txn", DK_ACTION_TXN},
           {"cdc", DK_ACTION_CDC},
           {"commitInfo", DK_ACTION_COMMIT_INFO},
           {"domainMetadata", DK_ACTION_DOMAIN_METADATA},
           {"checkpointMetadata", DK_ACTION_CHECKPOINT_METADATA},
           {"sidecar", DK_ACTION_SIDECAR}};
  for (size_t i = 0; i < DK_ARRAY_LEN(m); i++)
    if (!strcmp(m[i].k, k)) return m[i].v;
  return DK_ACTION_UNKNOWN;
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
    dk_action *a = &r->a[r->n];
    memset(a, 0, sizeof *a);
    a->kind = kind_of(m->key);
    a->version = c->version;
    if (a->kind == DK_ACTION_COMMIT_INFO) {
      int64_t x;
      if (dk__json_as_i64(dk__json_get(&m->value, "inCommitTimestamp"), &x)) c->ict = x;
    }
    dk__buf_clear(&c->buf);
    c->st = dk__json_write_value(&c->buf, &m->value, c->err);
    if (c->st != DK_OK) return false;
    a->json = dk__arena_strndup(&r->ar, c->buf.data, c->buf.len, c->err);
    if (!a->json) {
      c->st = DK_NOMEM;
      return false;
    }
    if (a->kind == DK_ACTION_ADD || a->kind == DK_ACTION_REMOVE || a->kind == DK_ACTION_CDC) {
      size_t pn;
      const char *p = dk__json_as_str(dk__json_get(&m->value, "path"), &pn);
      if (!p) {
        c->st = dk__error_set(c->err, DK_CORRUPT, "version %" PRId64 ": %s without a path",
                              c->version, m->key);
        return false;
      }
      const char *cp;
      size_t cl;
      c->st = dk_log__canonical_path(&cp, &cl, &r->ar, c->t->root, strlen(c->t->root), p, pn,
                                     c->err);
      if (c->st != DK_OK) return false;
      a->path = cp;
    }
    r->n++;
  }
  return true;
}

dk_status dk_log_commit_range(dk_commit_range **out, dk_table *t, int64_t first, int64_t last,
                              dk_error *err) {
  dk__log lg = dk_snapshot__log(t);
  *out = NULL;
  if (first < 0 || last < first)
    return dk__error_set(err, DK_INVALID, "invalid commit range %" PRId64 "..%" PRId64, first,
                         last);
  dk__segment seg;
  const dk__logfile **c = NULL;
  size_t n = 0;
  dk_status st = dk_log__list_all(&seg, t->sto, t->root, t->alloc, err);
  if (st == DK_OK) st = dk_log__commit_list(&seg, &c, &n, t->alloc, err);
  dk_commit_range *r = NULL;
  if (st == DK_OK) {
    /* the commits first..last must all exist */
    size_t start = n;
    for (size_t i = 0; i < n; i++)
      if (c[i]->version == first) {
        start = i;
        break;
      }
    if (start == n) {
      st = dk__error_set(err, n && first > c[n - 1]->version ? DK_NOT_FOUND : DK_OUT_OF_RANGE,
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
    if (st == DK_OK) {
      r = dk__calloc(t->alloc, 1, sizeof *r);
      if (r) r->ts = dk__calloc(t->alloc, (size_t)(last - first + 1), sizeof *r->ts);
      if (!r || !r->ts) {
        st = dk__error_set(err, DK_NOMEM, "out of memory");
      } else {
        r->alloc = t->alloc;
        r->first = first;
        r->last = last;
        dk__arena_init(&r->ar, t->alloc, 64 * 1024);
        range_ctx ctx = {r, t, 0, -1, {0}, DK_OK, err};
        dk__buf_init(&ctx.buf, t->alloc);
        for (int64_t v = first; v <= last && st == DK_OK; v++) {
          const dk__logfile *lf = c[start + (size_t)(v - first)];
          ctx.version = v;
          ctx.ict = -1;
          dk_arena tmp;
          dk__arena_init(&tmp, t->alloc, 64 * 1024);
          st = dk_log__scan_commit(&lg, lf, &tmp, range_line, &ctx, err);
          if (st == DK_OK) st = ctx.st;
          dk__arena_dispose(&tmp);
          r->ts[v - first] = ctx.ict >= 0 ? ctx.ict : lf->mtime;
        }
        dk__buf_dispose(&ctx.buf);
      }
    }
  }
  dk__free(t->alloc, c);
  dk_log__segment_dispose(&seg);
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
