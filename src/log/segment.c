/*
** segment.c — listing `_delta_log` and choosing the files that build one version.
**
** Follows PROTOCOL.md "Delta Log Entries" (commit files N.json), "Checkpoints" (classic
** N.checkpoint.parquet, multi-part N.checkpoint.i.n.parquet — incomplete sets are ignored —
** and V2 N.checkpoint.<uuid>.json|parquet), "Log Compaction Files" (x.y.compacted.json: read
** in place of the commits x..y it reconciles when it lies inside the segment), "Version Checksum File" (N.crc) and
** "Last Checkpoint File" (_last_checkpoint is only a hint: when it is missing, empty, corrupt
** — its checksum, when present, does not match — or names a checkpoint that does not exist,
** the whole log is listed instead).
** The newest complete checkpoint at or below the target version is used, then every commit
** after it up to the target; a gap in those versions is DK_CORRUPT naming the missing ones.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "log/lastcp.h"
#include "log/paths.h"

typedef struct list_ctx {
  dk__segment *seg;
  size_t cap;
  dk_error *err;
} list_ctx;

static dk_status on_entry(const dk_file_info *info, void *payload) {
  list_ctx *c = payload;
  const char *slash = strrchr(info->path, '/');
  const char *name = slash ? slash + 1 : info->path;
  dk__logfile lf;
  if (!dk_log__parse_name(name, &lf)) {
    if (dk_log__name_version_overflows(name))
      return dk__error_set(c->err, DK_CORRUPT,
                           "log: %s: the version in the file name does not fit in 64 bits",
                           info->path);
    return DK_OK;
  }
  if (info->is_dir)
    return dk__error_set(c->err, DK_CORRUPT, "log: %s is a directory, not a log file",
                         info->path);
  dk__segment *seg = c->seg;
  if (seg->n_all == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 256;
    dk__logfile *p = dk__realloc(seg->alloc, seg->all, nc * sizeof *p);
    if (!p) return dk__error_set(c->err, DK_NOMEM, "log: out of memory listing _delta_log");
    seg->all = p;
    c->cap = nc;
  }
  lf.name = dk__arena_strndup(&seg->names, name, strlen(name), c->err);
  if (!lf.name) return DK_NOMEM;
  lf.size = info->size;
  lf.mtime = info->mtime_ms;
  seg->all[seg->n_all++] = lf;
  return DK_OK;
}

static int cmp_logfile(const void *a, const void *b) {
  const dk__logfile *x = a, *y = b;
  if (x->version != y->version) return x->version < y->version ? -1 : 1;
  return strcmp(x->name, y->name);
}

static dk_status list_log(dk__segment *seg, dk_storage *sto, const char *logdir,
                          const char *start, dk_error *err) {
  seg->n_all = 0;
  list_ctx c = {seg, 0, err};
  dk__free(seg->alloc, seg->all);
  seg->all = NULL;
  dk_status st = sto->list_from(sto, logdir, start, on_entry, &c, err);
  if (st == DK_NOT_FOUND) {
    if (err) {
      err->code = DK_OK;
      err->message[0] = 0;
    }
    return dk__error_set(err, DK_NOT_FOUND, "not a Delta table: %s does not exist", logdir);
  }
  DK_RETURN_NOT_OK(st);
  if (seg->n_all > 1) qsort(seg->all, seg->n_all, sizeof *seg->all, cmp_logfile);
  return DK_OK;
}

/* Reads _last_checkpoint; returns its version or -1 when absent/unusable (never an error). */
static int64_t read_hint(dk_storage *sto, const char *root, const dk_allocator *alloc) {
  dk_buf key;
  dk__buf_init(&key, alloc);
  uint8_t *data = NULL;
  size_t len = 0;
  dk_error e = {0};
  dk_status st = dk_log__file_key(&key, root, DK_LOG__LAST_CHECKPOINT, &e);
  if (!st) st = sto->read(sto, key.data, &data, &len, &e);
  dk__buf_dispose(&key);
  if (st != DK_OK) return -1;
  int64_t v = -1;
  dk_arena ar;
  dk__arena_init(&ar, alloc, 4096);
  dk_json_value *j;
  if (len && dk__json_parse(&j, &ar, (const char *)data, len, &e) == DK_OK) {
    if (!dk__json_as_i64(dk__json_get(j, "version"), &v) || v < 0) v = -1;
    /* a checksum that does not match (or duplicate keys) makes the file corrupt: list the log
     * instead, as delta-spark does */
    const dk_json_value *sum = dk__json_get(j, "checksum");
    char want[33];
    if (v >= 0 && sum && (sum->type != DK_JSON_STRING ||
                          dk_log__last_checkpoint_checksum(want, j, alloc, &e) != DK_OK ||
                          strcmp(want, sum->u.str)))
      v = -1;
  }
  dk__arena_dispose(&ar);
  sto->free_buf(sto, data);
  return v;
}

/* "<root>/_delta_log", kept in the segment's arena. */
static const char *log_dir(dk__segment *seg, const char *root, dk_error *err) {
  dk_buf key;
  dk__buf_init(&key, seg->alloc);
  const char *d = NULL;
  if (dk_log__dir_key(&key, root, err) == DK_OK)
    d = dk__arena_strndup(&seg->names, key.data, key.len, err);
  dk__buf_dispose(&key);
  return d;
}

/* Finds the newest complete checkpoint with version in [lo, hi]; fills seg->cp_*. */
static dk_status pick_checkpoint(dk__segment *seg, int64_t lo, int64_t hi, dk_error *err) {
  seg->cp_version = -1;
  seg->n_cp = 0;
  for (size_t e = seg->n_all; e-- > 0;) {
    dk__logfile *f = &seg->all[e];
    if (f->version > hi || f->version < lo) continue;
    if (f->kind == DK__LF_CP_CLASSIC || f->kind == DK__LF_CP_V2_JSON ||
        f->kind == DK__LF_CP_V2_PARQUET) {
      seg->cp_version = f->version;
      seg->cp_files = f;
      seg->n_cp = 1;
      return DK_OK;
    }
    if (f->kind == DK__LF_CP_MULTI) {
      /* gather parts 1..nparts of this version and part count */
      int n = f->nparts;
      dk__logfile **parts = dk__calloc(seg->alloc, (size_t)n, sizeof *parts);
      if (!parts) return dk__error_set(err, DK_NOMEM, "log: out of memory");
      int have = 0;
      for (size_t j = 0; j < seg->n_all; j++) {
        dk__logfile *g = &seg->all[j];
        if (g->version == f->version && g->kind == DK__LF_CP_MULTI && g->nparts == n &&
            !parts[g->part - 1]) {
          parts[g->part - 1] = g;
          have++;
        }
      }
      if (have == n) {
        /* copy the parts, in order, into a fresh array owned by the segment's arena */
        dk__logfile *arr = dk__arena_alloc(&seg->names, sizeof *arr * (size_t)n, err);
        if (!arr) {
          dk__free(seg->alloc, parts);
          return DK_NOMEM;
        }
        for (int k = 0; k < n; k++) arr[k] = *parts[k];
        dk__free(seg->alloc, parts);
        seg->cp_version = f->version;
        seg->cp_files = arr;
        seg->n_cp = (size_t)n;
        return DK_OK;
      }
      dk__free(seg->alloc, parts); /* incomplete set: ignored */
    }
  }
  return DK_OK;
}

dk_status dk_log__list_all(dk__segment *seg, dk_storage *sto, const char *root,
                           const dk_allocator *alloc, dk_error *err) {
  memset(seg, 0, sizeof *seg);
  seg->alloc = alloc;
  seg->cp_version = -1;
  dk__arena_init(&seg->names, alloc, 16 * 1024);
  const char *logdir = log_dir(seg, root, err);
  if (!logdir) return DK_NOMEM;
  return list_log(seg, sto, logdir, NULL, err);
}

void dk_log__segment_dispose(dk__segment *seg) {
  if (!seg) return;
  dk__free(seg->alloc, seg->all);
  dk__free(seg->alloc, seg->commits);
  dk__arena_dispose(&seg->names);
  memset(seg, 0, sizeof *seg);
}

dk_status dk_log__segment_build(dk__segment *seg, dk_storage *sto, const char *root,
                                int64_t version, int64_t min_version,
                                const dk_allocator *alloc, dk_error *err) {
  memset(seg, 0, sizeof *seg);
  seg->alloc = alloc;
  seg->cp_version = -1;
  dk__arena_init(&seg->names, alloc, 16 * 1024);
  const char *logdir = log_dir(seg, root, err);
  if (!logdir) return DK_NOMEM;

  int64_t hint = -1;
  if (min_version < 0 && version < 0) hint = read_hint(sto, root, alloc);
  char start[32];
  dk_status st;
  bool listed_all = true;
  if (min_version >= 0) {
    snprintf(start, sizeof start, "%020" PRId64, min_version + 1);
    st = list_log(seg, sto, logdir, start, err);
    listed_all = false;
  } else if (hint >= 0) {
    snprintf(start, sizeof start, "%020" PRId64, hint);
    st = list_log(seg, sto, logdir, start, err);
    listed_all = false;
  } else {
    st = list_log(seg, sto, logdir, NULL, err);
  }
  DK_RETURN_NOT_OK(st);

  /* newest version present */
  int64_t latest = -1, earliest_commit = -1;
  for (size_t i = 0; i < seg->n_all; i++) {
    dk__logfile *f = &seg->all[i];
    if (f->kind == DK__LF_COMPACTION || f->kind == DK__LF_CRC) continue;
    if (f->version > latest) latest = f->version;
    if (f->kind == DK__LF_COMMIT && earliest_commit < 0) earliest_commit = f->version;
  }
  if (min_version >= 0) {
    if (latest < 0 || latest <= min_version) {
      seg->version = min_version;
      seg->latest_version = min_version;
      return DK_OK; /* nothing new */
    }
  } else if (hint >= 0) {
    /* the hint must name a complete checkpoint that exists; otherwise list everything */
    DK_RETURN_NOT_OK(pick_checkpoint(seg, hint, INT64_MAX, err));
    if (seg->cp_version < 0) {
      DK_RETURN_NOT_OK(list_log(seg, sto, logdir, NULL, err));
      listed_all = true;
      latest = -1;
      earliest_commit = -1;
      for (size_t i = 0; i < seg->n_all; i++) {
        dk__logfile *f = &seg->all[i];
        if (f->kind == DK__LF_COMPACTION || f->kind == DK__LF_CRC) continue;
        if (f->version > latest) latest = f->version;
        if (f->kind == DK__LF_COMMIT && earliest_commit < 0) earliest_commit = f->version;
      }
    }
  }
  if (latest < 0)
    return dk__error_set(err, DK_NOT_FOUND, "not a Delta table: %s has no commit or checkpoint",
                         logdir);
  int64_t target = version < 0 ? latest : version;
  seg->latest_version = latest;
  seg->version = target;
  if (target > latest)
    return dk__error_set(err, DK_NOT_FOUND, "version %" PRId64 " does not exist (latest is %" PRId64 ")",
                         target, latest);

  int64_t first_needed;
  if (min_version >= 0) {
    seg->cp_version = -1;
    seg->n_cp = 0;
    first_needed = min_version + 1;
  } else {
    DK_RETURN_NOT_OK(pick_checkpoint(seg, 0, target, err));
    first_needed = seg->cp_version + 1;
    /* earliest recreatable version: 0 if commit 0 exists, else the oldest complete checkpoint */
    if (listed_all) {
      if (earliest_commit == 0) {
        seg->earliest_version = 0;
      } else {
        int64_t oldest = -1;
        for (size_t i = 0; i < seg->n_all; i++) {
          dk__logfile *f = &seg->all[i];
          if (f->kind == DK__LF_CP_CLASSIC || f->kind == DK__LF_CP_V2_JSON ||
              f->kind == DK__LF_CP_V2_PARQUET || f->kind == DK__LF_CP_MULTI) {
            dk__segment p2 = *seg;
            DK_RETURN_NOT_OK(pick_checkpoint(&p2, f->version, f->version, err));
            if (p2.cp_version >= 0) {
              oldest = f->version;
              break;
            }
          }
        }
        seg->earliest_version = oldest >= 0 ? oldest : earliest_commit;
      }
      if (seg->cp_version < 0 && earliest_commit != 0) {
        if (version >= 0 && seg->earliest_version > target)
          return dk__error_set(err, DK_OUT_OF_RANGE,
                               "version %" PRId64 " is before the earliest recreatable version %" PRId64,
                               target, seg->earliest_version);
        return dk__error_set(err, DK_CORRUPT,
                             "cannot recreate version %" PRId64 ": no checkpoint at or below it and "
                             "commit 0 is missing (earliest commit is %" PRId64 ")",
                             target, earliest_commit);
      }
    }
  }

  /* collect commits first_needed..target and check contiguity */
  size_t want = (size_t)(target - first_needed + 1);
  if (target >= first_needed) {
    if (want > seg->n_all + 1)
      want = seg->n_all + 1; /* cannot have more commits than files; gaps found below */
    seg->commits = dk__malloc(alloc, sizeof *seg->commits * (want ? want : 1));
    if (!seg->commits) return dk__error_set(err, DK_NOMEM, "log: out of memory");
  }
  int64_t expect = first_needed;
  dk_buf missing;
  dk__buf_init(&missing, alloc);
  size_t n_missing = 0;
  for (size_t i = 0; i < seg->n_all && expect <= target; i++) {
    dk__logfile *f = &seg->all[i];
    if (f->kind != DK__LF_COMMIT || f->version < first_needed || f->version > target) continue;
    if (f->version < expect) continue; /* duplicate name cannot happen, be safe */
    while (expect < f->version) {
      if (n_missing < 20) dk__buf_printf(&missing, NULL, "%s%" PRId64, n_missing ? ", " : "", expect);
      n_missing++;
      expect++;
    }
    if (seg->n_commits < want) seg->commits[seg->n_commits++] = *f;
    expect++;
  }
  while (expect <= target) {
    if (n_missing < 20) dk__buf_printf(&missing, NULL, "%s%" PRId64, n_missing ? ", " : "", expect);
    n_missing++;
    expect++;
  }
  if (n_missing) {
    st = dk__error_set(err, DK_CORRUPT,
                       "versions not contiguous in %s: missing commit file(s) for version(s) %s%s "
                       "(needed %" PRId64 "..%" PRId64 ")",
                       logdir, missing.data ? missing.data : "", n_missing > 20 ? ", ..." : "",
                       first_needed, target);
    dk__buf_dispose(&missing);
    return st;
  }
  dk__buf_dispose(&missing);
  for (size_t i = 0; i < seg->n_all; i++)
    if (seg->all[i].kind == DK__LF_CRC && seg->all[i].version == target) seg->crc = &seg->all[i];
  /* Log compaction: a run of commits x..y inside the segment may be read from x.y.compacted.json
   * instead (it holds their reconciled actions). Greedy: at each position take the compaction
   * that starts there and reaches furthest. The commits themselves are still required above. */
  size_t k = 0;
  for (size_t i = 0; i < seg->n_commits;) {
    int64_t v = seg->commits[i].version;
    const dk__logfile *best = NULL;
    for (size_t j = 0; j < seg->n_all; j++) {
      const dk__logfile *f = &seg->all[j];
      if (f->kind == DK__LF_COMPACTION && f->version == v && f->version_hi <= target &&
          f->version_hi > v && (!best || f->version_hi > best->version_hi))
        best = f;
    }
    if (best) {
      seg->commits[k++] = *best;
      i += (size_t)(best->version_hi - v + 1);
    } else {
      seg->commits[k++] = seg->commits[i++];
    }
  }
  seg->n_commits = k;
  return DK_OK;
}

/* Commit files of a listing, ascending (pointers into seg->all). */
dk_status dk_log__commit_list(const dk__segment *seg, const dk__logfile ***out, size_t *n,
                              const dk_allocator *alloc, dk_error *err) {
  size_t k = 0;
  for (size_t i = 0; i < seg->n_all; i++) k += seg->all[i].kind == DK__LF_COMMIT;
  const dk__logfile **arr = dk__malloc(alloc, (k ? k : 1) * sizeof *arr);
  if (!arr) return dk__error_set(err, DK_NOMEM, "out of memory");
  k = 0;
  for (size_t i = 0; i < seg->n_all; i++)
    if (seg->all[i].kind == DK__LF_COMMIT) arr[k++] = &seg->all[i];
  *out = arr;
  *n = k;
  return DK_OK;
}
