/*
** stream.c — incremental reads (include/dk/changes.h dk_stream): a table consumed as
** micro-batches of files by offset, as delta-spark's streaming source does it
** (sources/DeltaSource.scala getFileChanges, validateCommitAndDecideSkipping,
** getStartingVersion; DeltaSourceCDCSupport for readChangeFeed;
** ../shared/reference/spark-v2-connector-spec.md §6.2, §7).
**
** The file sequence: an initial snapshot's files sorted by (modificationTime, path), or a
** commit's data-change adds (change data feed: its cdc files, else its data-change adds and
** removes) in log order, each wrapped in BASE / END sentinels and indexed 0..; positions are
** totally ordered by (version, index). A batch is the positions after its start offset, up to
** the first one admission refuses (admit.c); its end offset is the one after its last
** position. Commits are validated as they are listed: a commit removing data without
** ignoreDeletes / ignoreChanges / skipChangeCommits fails, as does a schema change the read
** schema (the latest snapshot's when the stream opened) cannot read.
**
** excludeRegex is a Java regex (java.util.regex, found anywhere in the file's path, as
** Scala's Regex.findFirstIn does): PCRE2 (libpcre2-8) compiles it, the engine nearest to
** Java's syntax (\d, lazy quantifiers, lookarounds, (?i)); POSIX ERE has none of them.
*/
#include <inttypes.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes/changes_int.h"
#include "codec/json/json.h"
#include "log/timestamps.h"
#include "protocol/protocol.h"
#include "snapshot/access.h"
#include "snapshot/snapshot_int.h"

#define DEFAULT_INITIAL_SNAPSHOT_MAX_FILES 100000
#define COMMITS_PER_READ 64

static bool excluded(const dk_stream *s, const char *path);

struct dk_stream {
  const dk_allocator *alloc;
  dk_table *t;
  dk_stream_options o;
  bool cdf;
  pcre2_general_context *re_ctx; /* allocations through the stream's allocator */
  pcre2_code *re;               /* excludeRegex, or NULL */
  pcre2_match_data *re_md;
  dk_snapshot *init;            /* the latest snapshot when the stream opened: read schema */
  dk_arena meta_ar;
  dk_changes__meta init_meta;
  char *table_id;
  bool starting_option;         /* started from an explicit version or timestamp */
  dk_changes__reader *reader;
  dk_stream_offset start;       /* where batches begin (before the first one) */
  dk_stream_offset offset;      /* after the last batch handed out */
  bool avail_done;              /* available_now: the end was computed */
  bool avail_has;               /* ... and there is one */
  dk_stream_offset avail_end;
  bool checked_start;           /* the start version's schema was checked */
  int64_t cdf_checked;          /* change data feed: the last batch start version found with
                                   change data recorded (-1: none yet) */
  /* the initial snapshot being read: its files sorted by (modificationTime, path) */
  dk_snapshot *snap;
  int64_t *order;
  int64_t n_order;
  int64_t snap_ts;
};

struct dk_stream_batch {
  const dk_allocator *alloc;
  int refs; /* atomic: the handle plus one per open reader stream */
  dk_changes__reader *reader;
  dk_stream_offset start, end;
  dk_changes__files files;
};

/* ---- positions ---------------------------------------------------------------------------- */

typedef struct spos {
  dk_changes__indexed ix;
  dk_changes__action act; /* FILE: the action (entry borrowed from a range or the snapshot) */
  int64_t ts;             /* the commit's time */
} spos;

typedef struct seqv {
  const dk_allocator *alloc;
  spos *v;
  dk_changes__indexed *ix; /* the positions alone, for admission */
  size_t n, cap;
  dk_commit_range **ranges; /* kept until the positions are used */
  size_t n_ranges, cap_ranges;
} seqv;

static void seqv_dispose(seqv *q) {
  for (size_t i = 0; i < q->n_ranges; i++) dk_commit_range_free(q->ranges[i]);
  dk__free(q->alloc, q->ranges);
  dk__free(q->alloc, q->v);
  dk__free(q->alloc, q->ix);
  memset(q, 0, sizeof *q);
}

static dk_status seqv_push(seqv *q, const spos *p, dk_error *err) {
  if (q->n == q->cap) {
    size_t nc = q->cap ? 2 * q->cap : 256;
    spos *v = dk__realloc(q->alloc, q->v, nc * sizeof *v);
    if (v) q->v = v;
    dk_changes__indexed *ix = v ? dk__realloc(q->alloc, q->ix, nc * sizeof *ix) : NULL;
    if (ix) q->ix = ix;
    DK_RETURN_IF(!v || !ix, DK_NOMEM, err, "out of memory (stream)");
    q->cap = nc;
  }
  q->v[q->n] = *p;
  q->ix[q->n++] = p->ix;
  return DK_OK;
}

static dk_status seqv_keep_range(seqv *q, dk_commit_range *r, dk_error *err) {
  if (q->n_ranges == q->cap_ranges) {
    size_t nc = q->cap_ranges ? 2 * q->cap_ranges : 8;
    dk_commit_range **p = dk__realloc(q->alloc, q->ranges, nc * sizeof *p);
    if (!p) {
      dk_commit_range_free(r);
      return dk__error_set(err, DK_NOMEM, "out of memory (stream)");
    }
    q->ranges = p;
    q->cap_ranges = nc;
  }
  q->ranges[q->n_ranges++] = r;
  return DK_OK;
}

static int pos_cmp(int64_t v, int64_t i, const dk_stream_offset *o) {
  if (v != o->version) return v < o->version ? -1 : 1;
  return i < o->index ? -1 : i > o->index ? 1 : 0;
}

/* Whether position (v, i) is after `from` and not after `end` (NULL: no end). */
static bool in_window(int64_t v, int64_t i, const dk_stream_offset *from,
                      const dk_stream_offset *end) {
  return pos_cmp(v, i, from) > 0 && (!end || pos_cmp(v, i, end) <= 0);
}

static dk_status push_sentinel(seqv *q, int64_t v, bool end_of, int atomic,
                               const dk_stream_offset *from, const dk_stream_offset *end,
                               dk_error *err) {
  int64_t idx = end_of ? DK_CHANGES__INDEX_END : DK_STREAM_INDEX_BASE;
  if (!in_window(v, idx, from, end)) return DK_OK;
  spos p;
  memset(&p, 0, sizeof p);
  p.ix = (dk_changes__indexed){v, idx, end_of ? DK_CHANGES__END : DK_CHANGES__BASE, 0, atomic};
  return seqv_push(q, &p, err);
}

/* ---- options and errors ------------------------------------------------------------------ */

static dk_status schema_changed(const dk_stream *s, int64_t v, const char *cls, const char *what,
                                dk_error *err) {
  /* a rename or drop under column mapping: delta-spark streams on across it only with a
  ** schema log (the schemaTrackingLocation option), which dk does not keep */
  bool log = !strcmp(cls, "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG");
  return dk__error_set(err, DK_UNSUPPORTED,
                       "stream: the schema change at version %" PRId64 " %s: the stream's read "
                       "schema (version %" PRId64 ") cannot read it; %s (%s%s)",
                       v, what, dk_snapshot_version(s->init),
                       log ? "delta-spark reads across it with a schema log (the option "
                             "schemaTrackingLocation), which dk does not support: start the "
                             "stream at a version after the rename or drop"
                           : "restart the stream to read with the new schema",
                       cls,
                       !strcmp(cls, "DELTA_SCHEMA_CHANGED") && s->starting_option
                           ? "_WITH_STARTING_OPTIONS"
                           : "");
}

/* delta-spark DeltaSource.checkReadIncompatibleSchemaChanges (no schema tracking log). */
static dk_status check_metadata(dk_stream *s, const dk_metadata *md, int64_t v, dk_error *err) {
  dk_changes__meta m;
  DK_RETURN_NOT_OK(dk_changes__meta_of(&m, md, &s->meta_ar, err));
  int64_t iv = dk_snapshot_version(s->init);
  const dk_changes__meta *newer = v < iv ? &s->init_meta : &m, *older = v < iv ? &m : &s->init_meta;
  if (strcmp(newer->md->id ? newer->md->id : "", older->md->id ? older->md->id : "") != 0)
    return dk__error_set(err, DK_INVALID,
                         "stream: version %" PRId64 " belongs to another table (id %s, the "
                         "stream reads %s) (DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE)",
                         v, m.md->id ? m.md->id : "", s->table_id);
  bool ok = true;
  DK_RETURN_NOT_OK(dk_changes__no_cm_schema_changes(&ok, newer, older, s->alloc, err));
  if (!ok)
    return schema_changed(s, v, "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG",
                          "renames, drops or repartitions columns", err);
  if (!dk_changes__read_compatible(m.schema, s->init_meta.schema, true) ||
      !dk_changes__same_partitioning(newer->md, older->md))
    return schema_changed(s, v, "DELTA_SCHEMA_CHANGED", "is not read-compatible", err);
  return DK_OK;
}

static dk_status open_meta(dk_snapshot **out, dk_table *t, int64_t v, dk_error *err) {
  dk_snapshot_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  so.at_version = v;
  so.metadata_only = 1;
  return dk_snapshot_open(out, t, &so, err);
}

/* checkReadIncompatibleSchemaChangeOnStreamStartOnce: the schema of the version the first
** batch starts from, once per stream. */
static dk_status check_start(dk_stream *s, int64_t v, dk_error *err) {
  if (s->checked_start) return DK_OK;
  dk_snapshot *snap = NULL;
  dk_error e2;
  dk_error_init(&e2);
  dk_status st = open_meta(&snap, s->t, v, &e2);
  if (st == DK_UNSUPPORTED) {
    *err = e2;
    return st;
  }
  if (st) {
    if (s->init_meta.mode == DK_COLUMN_MAPPING_NONE) {
      s->checked_start = true;
      return DK_OK;
    }
    return dk__error_set(err, DK_UNSUPPORTED,
                         "stream: the snapshot at version %" PRId64 " cannot be loaded (%s), so "
                         "the column-mapped schema cannot be checked "
                         "(DELTA_STREAMING_CHECK_COLUMN_MAPPING_NO_SNAPSHOT)",
                         v, e2.message);
  }
  st = check_metadata(s, dk_snapshot_metadata(snap), dk_snapshot_version(snap), err);
  dk_snapshot_free(snap);
  if (!st) s->checked_start = true;
  return st;
}

/* ---- the initial snapshot ---------------------------------------------------------------- */


typedef struct sort_key {
  int64_t mtime;
  const char *path;
  int64_t i;
} sort_key;

static int key_cmp(const void *a, const void *b) {
  const sort_key *x = a, *y = b;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->path, y->path);
}

/* Loads the snapshot of version v (the initial snapshot) and sorts its files. */
static dk_status ensure_snapshot(dk_stream *s, int64_t v, dk_error *err) {
  if (s->snap && dk_snapshot_version(s->snap) == v) return DK_OK;
  dk_snapshot_free(s->snap);
  dk__free(s->alloc, s->order);
  s->snap = NULL;
  s->order = NULL;
  dk_snapshot_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  so.at_version = v;
  dk_status st = dk_snapshot_open(&s->snap, s->t, &so, err);
  if (st) {
    dk__error_prefix(err, "stream: the initial snapshot (version %" PRId64 ")", v);
    return st;
  }
  int64_t n = dk_snapshot_num_files(s->snap);
  int64_t max = s->o.max_initial_snapshot_files > 0 ? s->o.max_initial_snapshot_files
                                                    : DEFAULT_INITIAL_SNAPSHOT_MAX_FILES;
  if (n > max)
    return dk__error_set(err, DK_UNSUPPORTED,
                         "stream: the initial snapshot (version %" PRId64 ") has %" PRId64
                         " files, more than %" PRId64
                         " (DELTA_STREAMING_INITIAL_SNAPSHOT_TOO_LARGE): start from a version",
                         v, n, max);
  sort_key *k = dk__malloc(s->alloc, (size_t)(n ? n : 1) * sizeof *k);
  s->order = dk__malloc(s->alloc, (size_t)(n ? n : 1) * sizeof *s->order);
  if (!k || !s->order) {
    dk__free(s->alloc, k);
    return dk__error_set(err, DK_NOMEM, "out of memory (stream)");
  }
  for (int64_t i = 0; i < n && !st; i++) {
    dk_file_entry e;
    st = dk_snapshot_file(&e, s->snap, i, err);
    k[i] = (sort_key){e.modification_time, e.path, i};
  }
  if (!st) qsort(k, (size_t)n, sizeof *k, key_cmp);
  for (int64_t i = 0; i < n; i++) s->order[i] = k[i].i;
  dk__free(s->alloc, k);
  s->n_order = n;
  /* its commit time, as a change data feed's initial inserts carry it */
  s->snap_ts = dk_snapshot_timestamp(s->snap);
  dk_commit_range *r = NULL;
  if (!st && dk_commit_range_open(&r, s->t, v, v, NULL) == DK_OK)
    s->snap_ts = dk_commit_range_timestamp(r, v);
  dk_commit_range_free(r);
  return st;
}

static dk_status list_snapshot(dk_stream *s, seqv *q, const dk_stream_offset *from,
                               const dk_stream_offset *end, dk_error *err) {
  int64_t v = from->version;
  DK_RETURN_NOT_OK(ensure_snapshot(s, v, err));
  DK_RETURN_NOT_OK(push_sentinel(q, v, false, 0, from, end, err));
  for (int64_t k = 0; k < s->n_order; k++) {
    if (!in_window(v, k, from, end)) continue;
    spos p;
    memset(&p, 0, sizeof p);
    DK_RETURN_NOT_OK(dk_snapshot_file(&p.act.entry, s->snap, s->order[k], err));
    p.act.kind = DK_CHANGES__ADD;
    p.act.data_change = 1;
    p.ts = s->snap_ts;
    /* the stream's partition filter drops initial files before admission (their indexes
    ** stay), as delta-spark's DeltaSourceSnapshot does */
    if (s->o.filter) {
      dk_change_file f;
      memset(&f, 0, sizeof f);
      f.entry = p.act.entry;
      f.source = s->cdf ? DK_CHANGE_ADDED : 0;
      f.commit_version = v;
      f.commit_timestamp = p.ts;
      bool pruned = false;
      DK_RETURN_NOT_OK(dk_changes__reader_prunes(&pruned, s->reader, &f, err));
      if (pruned) continue;
    }
    if (s->cdf && excluded(s, p.act.entry.path)) continue;
    p.ix = (dk_changes__indexed){v, k, DK_CHANGES__FILE, p.act.entry.size, 0};
    DK_RETURN_NOT_OK(seqv_push(q, &p, err));
  }
  return push_sentinel(q, v, true, 0, from, end, err);
}

/* ---- commits ------------------------------------------------------------------------------ */

/* The actions of commit v: range actions [i, j). */
typedef struct commit_view {
  const dk_commit_range *r;
  size_t i, j;
  int64_t v, ts;
} commit_view;

static const char *commit_operation(const commit_view *c, char *buf, size_t cap) {
  for (size_t k = c->i; k < c->j; k++) {
    const dk_action *a = dk_commit_range_action(c->r, k);
    if (a->kind == DK_ACTION_COMMIT_INFO && a->commit_info->operation) {
      snprintf(buf, cap, "%s", a->commit_info->operation);
      return buf;
    }
  }
  return NULL;
}

/* delta-spark validateCommitAndDecideSkipping (and, for change data feeds, filterCDCActions'
** checks): the commit's metadata and protocol, and whether it may remove data. *skip: the
** commit's files are left out (skipChangeCommits). */
static dk_status validate_commit(dk_stream *s, const commit_view *c, bool *skip, dk_error *err) {
  *skip = false;
  bool seen_add = false, seen_md = false, seen_proto = false;
  const char *removed = NULL;
  for (size_t k = c->i; k < c->j; k++) {
    const dk_action *a = dk_commit_range_action(c->r, k);
    switch (a->kind) {
      case DK_ACTION_ADD:
        seen_add |= a->file->data_change != 0;
        break;
      case DK_ACTION_REMOVE:
        if (a->file->data_change && !removed) removed = a->file->path;
        break;
      case DK_ACTION_METADATA:
        DK_RETURN_IF(seen_md, DK_CORRUPT, err,
                     "stream: version %" PRId64 " has two metaData actions", c->v);
        seen_md = true;
        DK_RETURN_NOT_OK(check_metadata(s, a->metadata, c->v, err));
        break;
      case DK_ACTION_PROTOCOL:
        DK_RETURN_IF(seen_proto, DK_CORRUPT, err,
                     "stream: version %" PRId64 " has two protocol actions", c->v);
        seen_proto = true;
        if (dk_protocol__check_read(a->protocol, err)) {
          dk__error_prefix(err, "stream: version %" PRId64, c->v);
          return DK_UNSUPPORTED;
        }
        break;
      default:
        break;
    }
  }
  if (s->cdf || !removed) return DK_OK;
  bool allow_changes = s->o.ignore_changes || s->o.skip_change_commits;
  bool allow_deletes = allow_changes || s->o.ignore_deletes;
  *skip = s->o.skip_change_commits != 0;
  char op[256];
  if (seen_add && !allow_changes) {
    const char *what = commit_operation(c, op, sizeof op);
    return dk__error_set(err, DK_UNSUPPORTED,
                         "stream: version %" PRId64 " of %s updates files (%s, e.g. %s), which "
                         "a stream cannot take without ignore_changes or skip_change_commits "
                         "(DELTA_SOURCE_TABLE_IGNORE_CHANGES)",
                         c->v, dk_table_root(s->t), what ? what : "an update", removed);
  }
  if (!seen_add && !allow_deletes)
    return dk__error_set(err, DK_UNSUPPORTED,
                         "stream: version %" PRId64 " of %s deletes data (%s is removed), which a "
                         "stream cannot take without ignore_deletes, ignore_changes or "
                         "skip_change_commits (DELTA_SOURCE_IGNORE_DELETE)",
                         c->v, dk_table_root(s->t), removed);
  return DK_OK;
}

static bool commit_is_noop_merge(const commit_view *c, const dk_allocator *alloc) {
  for (size_t k = c->i; k < c->j; k++) {
    const dk_action *a = dk_commit_range_action(c->r, k);
    if (a->kind == DK_ACTION_COMMIT_INFO) return dk_changes__is_noop_merge(a->commit_info, alloc);
  }
  return false;
}

/* The positions of one commit. `inspect`: false when the batch ends at its BASE (Spark does
** not look into it then). */
static dk_status list_commit(dk_stream *s, seqv *q, const commit_view *c,
                             const dk_stream_offset *from, const dk_stream_offset *end,
                             bool inspect, dk_error *err) {
  bool skip = false;
  if (inspect) DK_RETURN_NOT_OK(validate_commit(s, c, &skip, err));
  bool has_cdc = false, has_dv = false;
  for (size_t k = c->i; k < c->j; k++) {
    const dk_action *a = dk_commit_range_action(c->r, k);
    has_cdc |= a->kind == DK_ACTION_CDC;
    if ((a->kind == DK_ACTION_ADD || a->kind == DK_ACTION_REMOVE) && a->file->data_change &&
        a->file->dv)
      has_dv = true;
  }
  int atomic = 0;
  bool noop = false;
  if (s->cdf) {
    atomic = has_cdc ? DK_CHANGES__ATOMIC_CDC : has_dv ? DK_CHANGES__ATOMIC_DV : 0;
    noop = !has_cdc && commit_is_noop_merge(c, s->alloc);
  }
  if (atomic != DK_CHANGES__ATOMIC_CDC)
    DK_RETURN_NOT_OK(push_sentinel(q, c->v, false, atomic, from, end, err));
  int64_t idx = 0;
  for (size_t k = c->i; k < c->j && !skip; k++) {
    const dk_action *a = dk_commit_range_action(c->r, k);
    bool take;
    if (!s->cdf) take = a->kind == DK_ACTION_ADD && a->file->data_change;
    else if (has_cdc) take = a->kind == DK_ACTION_CDC;
    else take = (a->kind == DK_ACTION_ADD || a->kind == DK_ACTION_REMOVE) && a->file->data_change;
    if (!take) continue;
    int64_t i = idx++;
    if (noop || !in_window(c->v, i, from, end)) continue;
    /* a change data feed leaves excluded files out before admission; a stream of added
    ** files after it (they count towards the limits) */
    if (s->cdf && excluded(s, a->file->path)) continue;
    spos p;
    memset(&p, 0, sizeof p);
    p.act.kind = a->kind == DK_ACTION_ADD      ? DK_CHANGES__ADD
                 : a->kind == DK_ACTION_REMOVE ? DK_CHANGES__REMOVE
                                               : DK_CHANGES__CDC;
    p.act.data_change = a->file->data_change;
    dk_changes__entry_of_action(&p.act.entry, a->file);
    p.ts = c->ts;
    int64_t size = a->file->size > 0 ? a->file->size : 0;
    p.ix = (dk_changes__indexed){c->v, i, DK_CHANGES__FILE, size, atomic};
    DK_RETURN_NOT_OK(seqv_push(q, &p, err));
  }
  if (atomic != DK_CHANGES__ATOMIC_CDC)
    DK_RETURN_NOT_OK(push_sentinel(q, c->v, true, atomic, from, end, err));
  return DK_OK;
}

/* The table's commit versions as listed now: earliest and latest. */
static dk_status list_versions(dk_stream *s, int64_t *earliest, int64_t *latest, dk_error *err) {
  dk__log lg = dk_snapshot__log(s->t);
  dk__commit_times ct;
  dk_status st = dk_log__commit_times_open(&ct, &lg, DK__ICT_OFF, err);
  if (!st) {
    *earliest = ct.c[0]->version;
    *latest = ct.c[ct.n - 1]->version;
  }
  dk_log__commit_times_dispose(&ct);
  return st;
}

/* The positions after `from` up to `end` (NULL: the latest commit), with admission `lim`
** (NULL: none; the positions a batch takes are q->n then) — delta-spark getFileChanges. */
static dk_status enumerate(dk_stream *s, seqv *q, const dk_stream_offset *from,
                           const dk_stream_offset *end, const dk_changes__limits *lim,
                           size_t *taken, dk_error *err) {
  dk_changes__admission adm;
  if (lim) dk_changes__admission_init(&adm, lim);
  int64_t next = from->version;
  if (from->is_initial_snapshot) {
    DK_RETURN_NOT_OK(list_snapshot(s, q, from, end, err));
    next++;
    if (lim) dk_changes__admit_more(&adm, q->ix, q->n);
  }
  int64_t earliest = 0, latest = -1;
  if (!lim || !adm.stopped) DK_RETURN_NOT_OK(list_versions(s, &earliest, &latest, err));
  if (end && end->version < latest) latest = end->version;
  if (next < earliest && next <= latest) {
    if (!s->o.allow_data_loss)
      return dk__error_set(err, DK_OUT_OF_RANGE,
                           "stream: version %" PRId64 " of %s is no longer in the log (the "
                           "earliest is %" PRId64 "): data was lost; set allow_data_loss to "
                           "continue from the earliest (DELTA_VERSION_NOT_FOUND)",
                           next, dk_table_root(s->t), earliest);
    next = earliest;
  }
  bool stop = lim && adm.stopped;
  while (!stop && next <= latest) {
    if (lim && s->cdf && !dk_changes__admission_has_capacity(&adm)) break;
    int64_t last = next + COMMITS_PER_READ - 1 < latest ? next + COMMITS_PER_READ - 1 : latest;
    dk_commit_range *r = NULL;
    dk_status st = dk_commit_range_open(&r, s->t, next, last, err);
    if (st) {
      dk__error_prefix(err, "stream");
      return st;
    }
    DK_RETURN_NOT_OK(seqv_keep_range(q, r, err));
    size_t n = dk_commit_range_count(r);
    for (size_t i = 0; i < n && !stop;) {
      commit_view c = {r, i, i, dk_commit_range_action(r, i)->version, 0};
      while (c.j < n && dk_commit_range_action(r, c.j)->version == c.v) c.j++;
      c.ts = dk_commit_range_timestamp(r, c.v);
      i = c.j;
      if (lim && s->cdf && !dk_changes__admission_has_capacity(&adm)) {
        stop = true;
        break;
      }
      bool inspect = !(end && end->version == c.v && end->index == DK_STREAM_INDEX_BASE);
      DK_RETURN_NOT_OK(list_commit(s, q, &c, from, end, inspect, err));
      if (lim) {
        dk_changes__admit_more(&adm, q->ix, q->n);
        stop = adm.stopped;
      }
    }
    /* versions without actions (an empty commit file) have no positions: go on after them */
    next = last + 1;
  }
  *taken = lim ? adm.taken : q->n;
  return DK_OK;
}

/* ---- the handle ------------------------------------------------------------------------ */

void dk_stream_free(dk_stream *s) {
  if (!s) return;
  pcre2_match_data_free(s->re_md);
  pcre2_code_free(s->re);
  pcre2_general_context_free(s->re_ctx);
  dk_changes__reader_free(s->reader);
  dk_snapshot_free(s->snap);
  dk_snapshot_free(s->init);
  dk__free(s->alloc, s->order);
  dk__free(s->alloc, s->table_id);
  dk__arena_dispose(&s->meta_ar);
  dk__free(s->alloc, s);
}

const char *dk_stream_table_id(const dk_stream *s) { return s->table_id; }

dk_status dk_stream_schema(struct ArrowSchema *out, const dk_stream *s, dk_error *err) {
  return dk_changes__reader_schema(out, s->reader, err);
}

void dk_stream_offset_get(dk_stream_offset *out, const dk_stream *s) { *out = s->offset; }

static dk_status resolve_start(dk_stream *s, dk_error *err) {
  int64_t lv = dk_snapshot_version(s->init);
  int64_t v = 0;
  switch (s->o.start) {
    case DK_STREAM_FROM_SNAPSHOT:
      s->start = (dk_stream_offset){lv, DK_STREAM_INDEX_BASE, 1};
      return DK_OK;
    case DK_STREAM_FROM_LATEST:
      s->start = (dk_stream_offset){lv + 1, DK_STREAM_INDEX_BASE, 0};
      return DK_OK;
    case DK_STREAM_FROM_VERSION: {
      v = s->o.starting_version;
      /* the protocol at v when its snapshot loads; else the commit must exist */
      dk_snapshot *snap = NULL;
      dk_status st = v <= lv ? open_meta(&snap, s->t, v, NULL) : DK_NOT_FOUND;
      dk_snapshot_free(snap);
      if (st == DK_UNSUPPORTED) return open_meta(&snap, s->t, v, err);
      int64_t earliest = 0, latest = lv;
      if (st) DK_RETURN_NOT_OK(list_versions(s, &earliest, &latest, err));
      if (st && (v < earliest || v > latest))
        return dk__error_set(err, DK_OUT_OF_RANGE,
                             "stream: version %" PRId64 " of %s is not available (versions %"
                             PRId64 "..%" PRId64 " are) (DELTA_VERSION_NOT_FOUND)",
                             v, dk_table_root(s->t), earliest, latest);
      break;
    }
    case DK_STREAM_FROM_TIMESTAMP: {
      int64_t latest = 0;
      DK_RETURN_NOT_OK(dk_changes__version_from_timestamp(&v, &latest, s->t, s->init,
                                                          s->o.starting_timestamp_ms, err));
      if (v > latest)
        return dk__error_set(err, DK_OUT_OF_RANGE,
                             "stream: starting timestamp %" PRId64 " is after the latest commit "
                             "(version %" PRId64 ") (DELTA_TIMESTAMP_GREATER_THAN_COMMIT)",
                             s->o.starting_timestamp_ms, latest);
      dk_snapshot *snap = NULL;
      if (open_meta(&snap, s->t, v, NULL) == DK_UNSUPPORTED)
        return open_meta(&snap, s->t, v, err);
      dk_snapshot_free(snap);
      break;
    }
    default:
      return dk__error_set(err, DK_INVALID, "stream: unknown start %d (DELTA_ILLEGAL_OPTION)",
                           (int)s->o.start);
  }
  s->start = (dk_stream_offset){v, DK_STREAM_INDEX_BASE, 0};
  return DK_OK;
}

static void *re_malloc(PCRE2_SIZE n, void *ctx) { return dk__malloc(ctx, n); }
static void re_free(void *p, void *ctx) { dk__free(ctx, p); }

/* Compiles excludeRegex (a Java regex) into s->re; an invalid one is DK_INVALID naming the
** pattern, the offset and PCRE2's reason, with delta-spark's error class. */
static dk_status compile_exclude(dk_stream *s, const char *pattern, dk_error *err) {
  s->re_ctx = pcre2_general_context_create(re_malloc, re_free, (void *)s->alloc);
  pcre2_compile_context *cc = s->re_ctx ? pcre2_compile_context_create(s->re_ctx) : NULL;
  DK_RETURN_IF(!cc, DK_NOMEM, err, "out of memory (stream: exclude_regex)");
  int code = 0;
  PCRE2_SIZE at = 0;
  /* UTF: '.' and classes take whole characters, as Java's UTF-16 strings do; a path that is
  ** not UTF-8 is still searched instead of failing the match */
  s->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                        PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &at, cc);
  pcre2_compile_context_free(cc);
  if (!s->re) {
    PCRE2_UCHAR msg[256];
    if (pcre2_get_error_message(code, msg, sizeof msg) < 0) strcpy((char *)msg, "invalid");
    return dk__error_set(err, DK_INVALID,
                         "stream: exclude_regex '%s': %s at offset %zu (DELTA_REGEX_OPT_SYNTAX_ERROR)",
                         pattern, (const char *)msg, (size_t)at);
  }
  s->re_md = pcre2_match_data_create_from_pattern(s->re, s->re_ctx);
  DK_RETURN_IF(!s->re_md, DK_NOMEM, err, "out of memory (stream: exclude_regex)");
  return DK_OK;
}

/* Whether excludeRegex is found in path (false without one). A match that ends in an error
** (the match limit) does not exclude: the file is read, a stream must not drop data. */
static bool excluded(const dk_stream *s, const char *path) {
  if (!s->re) return false;
  return pcre2_match(s->re, (PCRE2_SPTR)path, PCRE2_ZERO_TERMINATED, 0, 0, s->re_md, NULL) >= 0;
}

dk_status dk_stream_open(dk_stream **out, dk_table *t, const dk_stream_options *opts,
                         dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!t || !opts, DK_INVALID, err, "dk_stream_open: NULL table or options");
  DK_CHECK_OPTIONS_VERSION(opts, DK_STREAM_OPTIONS_VERSION, "dk_stream_open", err);
  DK_RETURN_IF(opts->max_files < 0 || opts->max_bytes < 0, DK_INVALID, err,
               "stream: max_files and max_bytes must be positive (DELTA_ILLEGAL_OPTION)");
  DK_RETURN_IF(opts->start == DK_STREAM_FROM_VERSION && opts->starting_version < 0, DK_INVALID,
               err, "stream: starting version %" PRId64 " is negative (DELTA_ILLEGAL_OPTION)",
               opts->starting_version);
  dk_snapshot *init = NULL;
  DK_RETURN_NOT_OK(open_meta(&init, t, -1, err));
  const dk_allocator *alloc = dk_snapshot__allocator(init);
  dk_stream *s = dk__calloc(alloc, 1, sizeof *s);
  if (!s) {
    dk_snapshot_free(init);
    return dk__error_set(err, DK_NOMEM, "out of memory (stream)");
  }
  s->alloc = alloc;
  s->t = t;
  s->o = *opts;
  s->o.resume_offset = NULL;
  s->cdf = opts->change_data_feed != 0;
  s->init = init;
  s->starting_option = opts->start == DK_STREAM_FROM_VERSION ||
                       opts->start == DK_STREAM_FROM_TIMESTAMP;
  dk__arena_init(&s->meta_ar, alloc, 0);
  const dk_metadata *md = dk_snapshot_metadata(init);
  s->table_id = dk__strdup(alloc, md->id ? md->id : "");
  dk_status st = s->table_id ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory (stream)");
  if (!st) st = dk_changes__meta_of(&s->init_meta, md, &s->meta_ar, err);
  if (!st && opts->exclude_regex) st = compile_exclude(s, opts->exclude_regex, err);
  if (!st)
    st = dk_changes__reader_new(&s->reader, init, opts->columns, opts->n_columns, opts->filter,
                                s->cdf, opts->batch_size, 0, err);
  if (!st && opts->resume_offset) {
    st = dk_stream_offset_parse(&s->start, opts->resume_offset, strlen(opts->resume_offset),
                                s->table_id, err);
    if (!st && (s->start.index == DK_STREAM_INDEX_METADATA_CHANGE ||
                s->start.index == DK_STREAM_INDEX_POST_METADATA_CHANGE))
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "stream: the offset is at a schema change barrier of a schema "
                         "tracking log, which dk does not keep");
  } else if (!st) {
    st = resolve_start(s, err);
  }
  if (st) {
    dk_stream_free(s);
    return st;
  }
  s->offset = s->start;
  s->cdf_checked = -1;
  *out = s;
  return DK_OK;
}

static dk_changes__limits stream_limits(const dk_stream *s, int64_t max_files,
                                        int64_t max_bytes) {
  dk_changes__limits lim = {max_files > 0 ? max_files : s->o.max_files,
                            max_bytes > 0 ? max_bytes : s->o.max_bytes, s->cdf};
  return lim;
}

/* The offset after the batch that starts after `from` (within `lim`, NULL: all available). */
static dk_status next_offset(dk_stream_offset *out, bool *has, dk_stream *s,
                             const dk_stream_offset *from, const dk_changes__limits *lim,
                             dk_error *err) {
  *has = false;
  seqv q = {.alloc = s->alloc};
  size_t taken = 0;
  const dk_stream_offset *bound = s->avail_done && s->avail_has ? &s->avail_end : NULL;
  dk_status st = DK_OK;
  if (s->avail_done && !s->avail_has) goto done; /* available now: nothing was there */
  st = enumerate(s, &q, from, bound, lim, &taken, err);
  if (!st && taken > 0) {
    st = check_start(s, from->version, err);
    if (!st) {
      dk_changes__offset_after(out, &q.ix[taken - 1], from->is_initial_snapshot, from->version);
      *has = true;
    }
  }
done:
  seqv_dispose(&q);
  return st;
}

static dk_status init_available_now(dk_stream *s, dk_error *err) {
  if (!s->o.available_now || s->avail_done) return DK_OK;
  bool has = false;
  dk_stream_offset e;
  DK_RETURN_NOT_OK(next_offset(&e, &has, s, &s->offset, NULL, err));
  s->avail_done = true;
  s->avail_has = has;
  if (has) s->avail_end = e;
  return DK_OK;
}

dk_status dk_stream_latest_offset(dk_stream_offset *out, int *has, dk_stream *s,
                                  const dk_stream_offset *start, int64_t max_files,
                                  int64_t max_bytes, dk_error *err) {
  *has = 0;
  DK_RETURN_NOT_OK(init_available_now(s, err));
  dk_changes__limits lim = stream_limits(s, max_files, max_bytes);
  bool h = false;
  DK_RETURN_NOT_OK(next_offset(out, &h, s, start ? start : &s->start,
                               max_files < 0 && max_bytes < 0 ? NULL : &lim, err));
  *has = h;
  return DK_OK;
}

/* ---- batches ------------------------------------------------------------------------------ */

void dk_stream_batch_free(dk_stream_batch *b) {
  if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  dk_changes__reader_free(b->reader);
  dk_changes__files_dispose(&b->files);
  dk__free(b->alloc, b);
}

static void batch_unref(void *p) { dk_stream_batch_free(p); }

void dk_stream_batch_start(dk_stream_offset *out, const dk_stream_batch *b) { *out = b->start; }
void dk_stream_batch_end(dk_stream_offset *out, const dk_stream_batch *b) { *out = b->end; }
int64_t dk_stream_batch_num_files(const dk_stream_batch *b) { return (int64_t)b->files.n; }

dk_status dk_stream_batch_file(dk_change_file *out, const dk_stream_batch *b, int64_t i,
                               dk_error *err) {
  return dk_changes__files_get(out, &b->files, i, "stream: batch", err);
}

dk_status dk_stream_batch_read_files(struct ArrowArrayStream *out, dk_stream_batch *b,
                                     int64_t first, int64_t n, dk_error *err) {
  return dk_changes__files_read(out, b->reader, &b->files, first, n, &b->refs, batch_unref, b,
                                "stream: batch", err);
}

dk_status dk_stream_batch_read(struct ArrowArrayStream *out, dk_stream_batch *b,
                               dk_error *err) {
  return dk_stream_batch_read_files(out, b, 0, (int64_t)b->files.n, err);
}

/* The files of positions q[0..n): added files, or a change data feed's change files planned
** commit by commit from the positions admitted (delta-spark changesToDF over them). */
static dk_status batch_files(dk_stream *s, dk_stream_batch *b, const seqv *q, size_t n,
                             dk_error *err) {
  dk_status st = DK_OK;
  if (!s->cdf) {
    for (size_t i = 0; i < n && !st; i++) {
      const spos *p = &q->v[i];
      if (p->ix.slot != DK_CHANGES__FILE) continue;
      if (excluded(s, p->act.entry.path)) continue;
      dk_change_file f;
      memset(&f, 0, sizeof f);
      f.commit_version = p->ix.version;
      f.commit_timestamp = p->ts;
      f.entry = p->act.entry;
      st = dk_changes__files_push(&b->files, &f, "stream", err);
    }
    return st;
  }
  dk_changes__action *acts = NULL;
  size_t cap = 0;
  for (size_t i = 0; i < n && !st;) {
    int64_t v = q->v[i].ix.version, ts = q->v[i].ts;
    size_t na = 0, j = i;
    for (; j < n && q->v[j].ix.version == v; j++) {
      if (q->v[j].ix.slot != DK_CHANGES__FILE) continue;
      if (na == cap) {
        size_t nc = cap ? 2 * cap : 64;
        dk_changes__action *p = dk__realloc(s->alloc, acts, nc * sizeof *p);
        if (!p) {
          st = dk__error_set(err, DK_NOMEM, "out of memory (stream)");
          break;
        }
        acts = p;
        cap = nc;
      }
      acts[na++] = q->v[j].act;
      ts = q->v[j].ts;
    }
    dk_changes__planned *pl = NULL;
    size_t npl = 0;
    if (!st && na) st = dk_changes__plan_commit(&pl, &npl, acts, na, 0, v, s->alloc, err);
    for (size_t k = 0; k < npl && !st; k++) {
      dk_change_file f;
      dk_changes__file_of_planned(&f, &pl[k], v, ts);
      st = dk_changes__files_push(&b->files, &f, "stream", err);
    }
    dk__free(s->alloc, pl);
    i = j;
  }
  dk__free(s->alloc, acts);
  return st;
}

/* A change data feed batch reads from a version whose metadata records change data
** (delta-spark CDCReader.changesToDF checks the batch's start version only: metadata actions
** inside a streamed range are not looked at). */
static dk_status check_cdf_at(dk_stream *s, int64_t v, dk_error *err) {
  if (!s->cdf || s->cdf_checked == v) return DK_OK;
  dk_snapshot *snap = NULL;
  dk_status st = open_meta(&snap, s->t, v, err);
  if (st) {
    dk__error_prefix(err, "stream: version %" PRId64, v);
    return st;
  }
  dk_changes__meta m;
  st = dk_changes__meta_of(&m, dk_snapshot_metadata(snap), &s->meta_ar, err);
  dk_snapshot_free(snap);
  if (!st && !m.cdf)
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "stream: no change data is recorded for version %" PRId64
                       " (delta.enableChangeDataFeed is off there) (DELTA_MISSING_CHANGE_DATA)",
                       v);
  if (!st) s->cdf_checked = v;
  return st;
}

dk_status dk_stream_batch_between(dk_stream_batch **out, dk_stream *s,
                                  const dk_stream_offset *start, const dk_stream_offset *end,
                                  dk_error *err) {
  *out = NULL;
  if (!start) start = &s->start;
  DK_RETURN_IF(!end, DK_INVALID, err, "stream: a batch needs an end offset");
  if (dk_stream_offset_compare(start, end) < 0) DK_RETURN_NOT_OK(check_cdf_at(s, start->version, err));
  dk_stream_batch *b = dk__calloc(s->alloc, 1, sizeof *b);
  DK_RETURN_IF(!b, DK_NOMEM, err, "out of memory (stream)");
  b->alloc = s->alloc;
  b->refs = 1;
  b->reader = dk_changes__reader_ref(s->reader);
  b->start = *start;
  b->end = *end;
  dk_changes__files_init(&b->files, s->alloc);
  seqv q = {.alloc = s->alloc};
  size_t taken = 0;
  dk_status st = DK_OK;
  if (dk_stream_offset_compare(start, end) < 0) {
    st = enumerate(s, &q, start, end, NULL, &taken, err);
    if (!st) st = batch_files(s, b, &q, taken, err);
  }
  seqv_dispose(&q);
  if (st) {
    dk_stream_batch_free(b);
    return st;
  }
  *out = b;
  return DK_OK;
}

dk_status dk_stream_next(dk_stream_batch **out, dk_stream *s, dk_error *err) {
  *out = NULL;
  DK_RETURN_NOT_OK(init_available_now(s, err));
  dk_changes__limits lim = stream_limits(s, 0, 0);
  dk_stream_offset end;
  bool has = false;
  DK_RETURN_NOT_OK(next_offset(&end, &has, s, &s->offset, &lim, err));
  if (!has || dk_stream_offset_compare(&end, &s->offset) == 0) return DK_OK;
  DK_RETURN_NOT_OK(dk_stream_batch_between(out, s, &s->offset, &end, err));
  s->offset = end;
  return DK_OK;
}
