/*
** commit.c — reading commit files: the log file reader, the scanner for newline-delimited
** actions, commitInfo (from a commit's first 64 KiB when it is there), and the pipelined
** replay of a run of commits (worker threads read and parse ahead, the calling thread applies
** strictly in order).
**
** Follows PROTOCOL.md "Delta Log Entries" (one JSON action per line), "Commit Provenance
** Information" (commitInfo) and "In-Commit Timestamps" (commitInfo.inCommitTimestamp).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "log/commit.h"
#include "log/paths.h"

dk_status dk_log__read_file(const dk__log *lg, const dk__logfile *lf, uint8_t **data,
                            size_t *len, dk_error *err) {
  *data = NULL;
  *len = 0;
  dk_buf key;
  dk__buf_init(&key, lg->alloc);
  dk_status st = dk_log__file_key(&key, lg->root, lf->name, err);
  if (!st) {
    st = lg->sto->read(lg->sto, key.data, data, len, err);
    if (st != DK_OK) {
      dk__error_prefix(err, "%s", key.data);
    } else if (lf->size > 0 && (uint64_t)*len != (uint64_t)lf->size) {
      /* log files are immutable: a different length means a cut-short read (or a file
       * replaced under us), which must not pass for a commit with fewer actions */
      st = dk__error_set(err, DK_CORRUPT,
                         "%s: read %zu bytes, but the listing gave %lld (the read was cut short "
                         "or the file changed)", key.data, *len, (long long)lf->size);
      lg->sto->free_buf(lg->sto, *data);
      *data = NULL;
      *len = 0;
    }
  }
  dk__buf_dispose(&key);
  return st;
}

/* A commit read and parsed (on the executor, or inline), waiting to be applied. Each slot owns
 * an arena holding the parsed lines. */
typedef struct commit_slot {
  const dk__logfile *lf;
  dk_arena ar;
  dk_json_value **lines;
  size_t n_lines, cap_lines;
  dk_status st;
  dk_error err;
  size_t bad_line, bad_off;
} commit_slot;

dk_status dk_log__scan_lines(const char *text, size_t len, bool complete_only, dk_arena *ar,
                             dk__line_fn fn, void *payload, size_t *bad_line, size_t *bad_off,
                             dk_error *err) {
  size_t pos = 0, lineno = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    if (!nl && complete_only) break; /* the line goes on past the prefix */
    size_t end = nl ? (size_t)(nl - text) : len;
    lineno++;
    size_t a = pos;
    while (a < end && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
    if (a < end) {
      dk_json_value *v;
      dk_status st = dk__json_parse(&v, ar, text + a, end - a, err);
      if (st != DK_OK) {
        *bad_line = lineno;
        *bad_off = a;
        return st;
      }
      if (!fn(v, payload)) break;
    }
    pos = end + 1;
  }
  return DK_OK;
}

/* Appends a parsed line to the slot (false, with s->st set, when out of memory). */
static bool keep_line(const dk_json_value *line, void *payload) {
  commit_slot *s = payload;
  if (s->n_lines == s->cap_lines) {
    size_t nc = s->cap_lines ? s->cap_lines * 2 : 16;
    dk_json_value **p = dk__arena_alloc(&s->ar, nc * sizeof *p, &s->err);
    if (!p) {
      s->st = DK_NOMEM;
      return false;
    }
    if (s->n_lines) memcpy(p, s->lines, s->n_lines * sizeof *p);
    s->lines = p;
    s->cap_lines = nc;
  }
  s->lines[s->n_lines++] = (dk_json_value *)(uintptr_t)line;
  return true;
}

static void parse_slot(const dk__log *lg, commit_slot *s) {
  uint8_t *data = NULL;
  size_t len = 0, bad_line, bad_off;
  s->st = dk_log__read_file(lg, s->lf, &data, &len, &s->err);
  if (s->st != DK_OK) return;
  dk_status st = dk_log__scan_lines((const char *)data, len, false, &s->ar, keep_line, s,
                                    &bad_line, &bad_off, &s->err);
  if (st != DK_OK) {
    s->st = st;
    dk__error_prefix(&s->err, "%s/_delta_log/%s: line %zu (byte offset %zu)", lg->root,
                     s->lf->name, bad_line, bad_off);
  }
  lg->sto->free_buf(lg->sto, data);
}

/* Commits parsed ahead on the executor's workers beside the applying (calling) thread: one
 * fewer than its threads, so that the two together do not oversubscribe the machine, and at
 * most half the commits; 0 (parse inline) for a few commits or a one-thread executor. */
static size_t parse_ahead(const dk__log *lg, size_t n_items) {
  if (n_items < 4) return 0;
  size_t th = (size_t)dk__exec_threads(lg->exec) - 1; /* the calling thread applies */
  return DK_MIN(th, n_items / 2);
}

/* The key an action reconciles under (PROTOCOL.md "Action Reconciliation"): files by (path,
 * deletionVector unique id), txn by appId, domainMetadata by domain, one metaData and one
 * protocol; false for actions that are not reconciled (commitInfo, cdc, unknown ones). */
static dk_status action_key(dk_buf *k, bool *keyed, const dk__log *lg, dk_arena *ar,
                            const char *kind, const dk_json_value *a, dk_error *err) {
  size_t n;
  const char *p;
  dk__buf_clear(k);
  *keyed = true;
  if (!strcmp(kind, "add") || !strcmp(kind, "remove")) {
    p = dk__json_as_str(dk__json_get(a, "path"), &n);
    DK_RETURN_NOT_OK(dk__buf_putc(k, 'f', err));
    if (p) { /* the path as reconciliation compares it (one file, several spellings) */
      DK_RETURN_NOT_OK(dk_log__canonical_path(&p, &n, ar, lg->root, strlen(lg->root), p, n, err));
      DK_RETURN_NOT_OK(dk__buf_append(k, p, n, err));
    }
    const dk_json_value *dv = dk__json_get(a, "deletionVector");
    if (dv && dv->type == DK_JSON_OBJECT) {
      DK_RETURN_NOT_OK(dk__buf_putc(k, 0, err));
      p = dk__json_as_str(dk__json_get(dv, "storageType"), &n);
      if (p) DK_RETURN_NOT_OK(dk__buf_append(k, p, n, err));
      p = dk__json_as_str(dk__json_get(dv, "pathOrInlineDv"), &n);
      if (p) DK_RETURN_NOT_OK(dk__buf_append(k, p, n, err));
      int64_t off;
      if (dk__json_as_i64(dk__json_get(dv, "offset"), &off))
        DK_RETURN_NOT_OK(dk__buf_printf(k, err, "@%lld", (long long)off));
    }
  } else if (!strcmp(kind, "txn") || !strcmp(kind, "domainMetadata")) {
    p = dk__json_as_str(dk__json_get(a, kind[0] == 't' ? "appId" : "domain"), &n);
    DK_RETURN_NOT_OK(dk__buf_putc(k, kind[0], err));
    if (p) DK_RETURN_NOT_OK(dk__buf_append(k, p, n, err));
  } else if (!strcmp(kind, "metaData") || !strcmp(kind, "protocol")) {
    DK_RETURN_NOT_OK(dk__buf_putc(k, kind[0], err));
  } else {
    *keyed = false;
  }
  return DK_OK;
}

/* Whether a parsed compaction file is reconciled, as PROTOCOL.md "Log Compaction Files"
 * requires: at most one action per reconciliation key. Some writers instead list every action
 * of the range, newest first, so that a file added and then removed appears twice; applied in
 * file order such a file would come back as live. */
static dk_status is_reconciled(bool *out, const dk__log *lg, const commit_slot *c,
                               dk_error *err) {
  dk_hmap seen;
  dk_buf k;
  dk_arena ar;
  dk__hmap_init(&seen, lg->alloc);
  dk__buf_init(&k, lg->alloc);
  dk__arena_init(&ar, lg->alloc, 16 * 1024);
  dk_status s = DK_OK;
  *out = true;
  for (size_t i = 0; i < c->n_lines && *out && s == DK_OK; i++) {
    const dk_json_value *line = c->lines[i];
    for (uint32_t m = 0; line->type == DK_JSON_OBJECT && m < line->len && *out; m++) {
      const dk_json_member *mb = &line->u.members[m];
      if (mb->value.type != DK_JSON_OBJECT) continue;
      bool keyed;
      uint64_t *slot;
      bool ins;
      s = action_key(&k, &keyed, lg, &ar, mb->key, &mb->value, err);
      if (s == DK_OK && keyed) s = dk__hmap_upsert(&seen, k.data, k.len, &slot, &ins, err);
      if (s != DK_OK) break;
      if (keyed && !ins) *out = false;
    }
  }
  dk__arena_dispose(&ar);
  dk__buf_dispose(&k);
  dk__hmap_dispose(&seen);
  return s;
}

static dk_status apply_lines(const dk__log *lg, dk__state *st, const commit_slot *c,
                             dk_error *err) {
  st->cur_version = c->lf->version_hi; /* a compaction file ends at version_hi */
  st->last_ict = -1;
  st->last_commit_info_ts = -1;
  for (size_t k = 0; k < c->n_lines; k++) {
    dk_status s = dk_log__apply_action(st, c->lines[k], 0, err);
    if (s != DK_OK) {
      dk__error_prefix(err, "%s/_delta_log/%s: action %zu", lg->root, c->lf->name, k + 1);
      return s;
    }
  }
  return DK_OK;
}

/* Applies the commits x..y a compaction file stands for, one by one (they are all present:
 * dk_log__segment_build requires them). */
static dk_status apply_covered(const dk__log *lg, dk__state *st, const dk__logfile *cf,
                               dk_error *err) {
  commit_slot c;
  memset(&c, 0, sizeof c);
  dk__arena_init(&c.ar, lg->alloc, 64 * 1024);
  dk_status s = DK_OK;
  for (int64_t v = cf->version; v <= cf->version_hi && s == DK_OK; v++) {
    char name[32];
    snprintf(name, sizeof name, "%020" PRId64 ".json", v);
    dk__logfile lf;
    memset(&lf, 0, sizeof lf);
    lf.name = name;
    lf.version = lf.version_hi = v;
    lf.kind = DK__LF_COMMIT;
    c.lf = &lf;
    parse_slot(lg, &c);
    s = c.st != DK_OK ? (err && err->code == DK_OK ? (*err = c.err, c.st) : c.st)
                      : apply_lines(lg, st, &c, err);
    dk__arena_dispose(&c.ar);
    memset(&c, 0, sizeof c);
    dk__arena_init(&c.ar, lg->alloc, 64 * 1024);
  }
  dk__arena_dispose(&c.ar);
  return s;
}

static dk_status apply_slot(const dk__log *lg, dk__state *st, commit_slot *c, dk_error *err) {
  if (c->st != DK_OK) {
    if (err && err->code == DK_OK) *err = c->err;
    return c->st;
  }
  if (c->lf->kind == DK__LF_COMPACTION) {
    bool ok;
    DK_RETURN_NOT_OK(is_reconciled(&ok, lg, c, err));
    if (!ok) return apply_covered(lg, st, c->lf, err);
  }
  return apply_lines(lg, st, c, err);
}

static void slot_reset(const dk__log *lg, commit_slot *c) {
  dk__arena_dispose(&c->ar);
  memset(c, 0, sizeof *c);
  dk__arena_init(&c->ar, lg->alloc, 64 * 1024);
}

/* One commit being read and parsed on the executor. */
typedef struct parse_job {
  const dk__log *lg;
  commit_slot *c;
  const int *stop; /* set once the result would not be used */
} parse_job;

static void parse_task(void *arg) {
  parse_job *j = arg;
  if (!__atomic_load_n(j->stop, __ATOMIC_RELAXED)) parse_slot(j->lg, j->c);
}

/* Applies commits[0..n) in order. With several commits and a multi-threaded executor, up to
 * `ahead` of them are read and parsed on its workers (a ring of slots, which bounds memory)
 * while this thread applies them strictly in order. */
dk_status dk_log__apply_commits(const dk__log *lg, dk__state *st, const dk__logfile *commits,
                                size_t n, dk_error *err) {
  if (!n) return DK_OK;
  size_t ahead = parse_ahead(lg, n);
  if (ahead < 1) {
    commit_slot c;
    memset(&c, 0, sizeof c);
    dk__arena_init(&c.ar, lg->alloc, 64 * 1024);
    dk_status s = DK_OK;
    for (size_t i = 0; i < n && s == DK_OK; i++) {
      c.lf = &commits[i];
      parse_slot(lg, &c);
      s = apply_slot(lg, st, &c, err);
      slot_reset(lg, &c);
    }
    dk__arena_dispose(&c.ar);
    return s;
  }
  size_t ring = ahead + 1;
  commit_slot *slots = dk__calloc(lg->alloc, ring, sizeof *slots);
  parse_job *jobs = dk__calloc(lg->alloc, ring, sizeof *jobs);
  dk__task *tasks = dk__calloc(lg->alloc, ring, sizeof *tasks);
  if (!slots || !jobs || !tasks) {
    dk__free(lg->alloc, slots);
    dk__free(lg->alloc, jobs);
    dk__free(lg->alloc, tasks);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  int stop = 0;
  for (size_t i = 0; i < ring; i++) {
    dk__arena_init(&slots[i].ar, lg->alloc, 64 * 1024);
    jobs[i] = (parse_job){lg, &slots[i], &stop};
  }
  size_t submitted = 0;
  for (; submitted < n && submitted < ring; submitted++) {
    slots[submitted].lf = &commits[submitted];
    dk__exec_submit(lg->exec, &tasks[submitted], parse_task, &jobs[submitted]);
  }
  dk_status s = DK_OK;
  size_t i = 0;
  for (; i < n && s == DK_OK; i++) {
    size_t k = i % ring;
    dk__exec_join(lg->exec, &tasks[k]);
    s = apply_slot(lg, st, &slots[k], err);
    slot_reset(lg, &slots[k]);
    if (s == DK_OK && submitted < n) {
      slots[k].lf = &commits[submitted++];
      dk__exec_submit(lg->exec, &tasks[k], parse_task, &jobs[k]);
    }
  }
  /* after a failure: the commits still in flight are dropped (joined, not applied) */
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  for (; i < submitted; i++) dk__exec_join(lg->exec, &tasks[i % ring]);
  for (size_t k = 0; k < ring; k++) dk__arena_dispose(&slots[k].ar);
  dk__free(lg->alloc, slots);
  dk__free(lg->alloc, jobs);
  dk__free(lg->alloc, tasks);
  return s;
}

/* Parses one commit file; calls `fn` for each action line until it returns false. */
dk_status dk_log__scan_commit(const dk__log *lg, const dk__logfile *lf, dk_arena *ar,
                              dk__line_fn fn, void *payload, dk_error *err) {
  uint8_t *data;
  size_t len, bad_line, bad_off;
  DK_RETURN_NOT_OK(dk_log__read_file(lg, lf, &data, &len, err));
  dk_status st = dk_log__scan_lines((const char *)data, len, false, ar, fn, payload, &bad_line,
                                    &bad_off, err);
  if (st != DK_OK)
    dk__error_prefix(err, "%s/_delta_log/%s: line %zu (byte offset %zu)", lg->root, lf->name,
                     bad_line, bad_off);
  lg->sto->free_buf(lg->sto, data);
  return st;
}

typedef struct ci_find {
  const dk_json_value *ci;
} ci_find;

static bool find_ci(const dk_json_value *line, void *payload) {
  ci_find *f = payload;
  const dk_json_value *ci = dk__json_get(line, "commitInfo");
  if (ci && ci->type == DK_JSON_OBJECT) {
    f->ci = ci;
    return false;
  }
  return true;
}

/* commitInfo is by convention the first action of a commit, and a commit can be hundreds of
 * megabytes: the complete lines in its first CI_PREFIX bytes are looked at first, and the
 * whole file is read only when commitInfo is not among them (or they do not parse, so that
 * the full read reports the error). */
#define CI_PREFIX ((size_t)64 * 1024)

dk_status dk_log__commit_info(const dk_json_value **ci, const dk__log *lg, const dk__logfile *lf,
                              dk_arena *ar, dk_error *err) {
  ci_find fc = {NULL}, *f = &fc;
  *ci = NULL;
  if (lf->size > (int64_t)CI_PREFIX) {
    dk_buf key;
    dk__buf_init(&key, lg->alloc);
    char *buf = dk__malloc(lg->alloc, CI_PREFIX);
    dk_error pe;
    dk_error_init(&pe);
    size_t bad_line, bad_off;
    if (buf && dk_log__file_key(&key, lg->root, lf->name, &pe) == DK_OK &&
        lg->sto->read_range(lg->sto, key.data, 0, buf, CI_PREFIX, &pe) == DK_OK)
      (void)dk_log__scan_lines(buf, CI_PREFIX, true, ar, find_ci, f, &bad_line, &bad_off, &pe);
    dk__free(lg->alloc, buf);
    dk__buf_dispose(&key);
    if (f->ci) {
      *ci = f->ci;
      return DK_OK;
    }
  }
  dk_status st = dk_log__scan_commit(lg, lf, ar, find_ci, f, err);
  *ci = f->ci;
  return st;
}

dk_status dk_log__commit_ict(const dk__log *lg, const dk__logfile *lf, int64_t *out,
                             dk_error *err) {
  dk_arena ar;
  dk__arena_init(&ar, lg->alloc, 16 * 1024);
  const dk_json_value *ci;
  dk_status st = dk_log__commit_info(&ci, lg, lf, &ar, err);
  if (st == DK_OK && !dk__json_as_i64(dk__json_get(ci, "inCommitTimestamp"), out))
    st = dk__error_set(err, DK_CORRUPT,
                       "%s/_delta_log/%s: in-commit timestamps are enabled but the commit has no "
                       "commitInfo.inCommitTimestamp",
                       lg->root, lf->name);
  dk__arena_dispose(&ar);
  return st;
}

