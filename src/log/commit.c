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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* Parallel prefetch: worker threads read and parse commit files; the caller applies them in
 * order. Each slot owns an arena holding the parsed lines. */
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

/* Pipelined replay: worker threads read and parse commits ahead (at most `ring` commits in
 * flight, which bounds memory) while the calling thread applies them strictly in order. */
typedef struct pipeline {
  const dk__log *lg;
  const dk__logfile *commits;
  size_t n, ring;
  commit_slot *slots;    /* ring of parsed commits */
  size_t *ready;         /* ready[i % ring] == i + 1 once commit i is parsed */
  size_t next;           /* next commit to parse */
  size_t consumed;       /* commits applied */
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} pipeline;

static void *pipeline_worker(void *arg) {
  pipeline *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->next < p->n && p->next >= p->consumed + p->ring)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop || p->next >= p->n) break;
    size_t i = p->next++;
    pthread_mutex_unlock(&p->mu);
    commit_slot *c = &p->slots[i % p->ring];
    c->lf = &p->commits[i];
    parse_slot(p->lg, c);
    pthread_mutex_lock(&p->mu);
    p->ready[i % p->ring] = i + 1;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Parsing threads beside the applying (calling) thread: one fewer than the table's threads
 * (default: the online CPUs, at most 8), so that the two together do not oversubscribe the
 * machine; 0 (parse inline) when the table's threads is 1, on one CPU, or for a few commits. */
static int parse_workers(const dk__log *lg, size_t n_items) {
  if (lg->threads == 1 || n_items < 4) return 0;
  int th = lg->threads;
  if (th <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    th = c > 0 ? (int)DK_MIN(c, 8) : 1;
  }
  th -= 1; /* the calling thread applies */
  if ((size_t)th > n_items / 2) th = (int)(n_items / 2);
  return th < 1 ? 0 : th;
}

static dk_status apply_slot(const dk__log *lg, dk__state *st, commit_slot *c, dk_error *err) {
  if (c->st != DK_OK) {
    if (err && err->code == DK_OK) *err = c->err;
    return c->st;
  }
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

static void slot_reset(const dk__log *lg, commit_slot *c) {
  dk__arena_dispose(&c->ar);
  memset(c, 0, sizeof *c);
  dk__arena_init(&c->ar, lg->alloc, 64 * 1024);
}

/* Applies commits[0..n) in order, parsing them on other threads when there are several. */
dk_status dk_log__apply_commits(const dk__log *lg, dk__state *st, const dk__logfile *commits,
                                size_t n, dk_error *err) {
  if (!n) return DK_OK;
  int th = parse_workers(lg, n);
  if (th < 1) {
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
  pipeline p;
  memset(&p, 0, sizeof p);
  p.lg = lg;
  p.commits = commits;
  p.n = n;
  p.ring = (size_t)th + 1; /* each parsed commit in flight costs memory */
  p.slots = dk__calloc(lg->alloc, p.ring, sizeof *p.slots);
  p.ready = dk__calloc(lg->alloc, p.ring, sizeof *p.ready);
  if (!p.slots || !p.ready) {
    dk__free(lg->alloc, p.slots);
    dk__free(lg->alloc, p.ready);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < p.ring; i++) dk__arena_init(&p.slots[i].ar, lg->alloc, 64 * 1024);
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  pthread_t tids[8];
  int started = 0;
  for (int i = 0; i < th && i < 8; i++)
    if (pthread_create(&tids[started], NULL, pipeline_worker, &p) == 0) started++;
  dk_status s = DK_OK;
  for (size_t i = 0; i < n && s == DK_OK; i++) {
    commit_slot *c = &p.slots[i % p.ring];
    pthread_mutex_lock(&p.mu);
    if (!started) {
      /* no worker could start: parse here */
      pthread_mutex_unlock(&p.mu);
      c->lf = &commits[i];
      parse_slot(lg, c);
    } else {
      while (p.ready[i % p.ring] != i + 1) pthread_cond_wait(&p.cv, &p.mu);
      pthread_mutex_unlock(&p.mu);
    }
    s = apply_slot(lg, st, c, err);
    slot_reset(lg, c);
    pthread_mutex_lock(&p.mu);
    p.ready[i % p.ring] = 0;
    p.consumed = i + 1;
    if (!started) p.next = i + 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
  }
  pthread_mutex_lock(&p.mu);
  p.stop = 1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  for (size_t i = 0; i < p.ring; i++) dk__arena_dispose(&p.slots[i].ar);
  pthread_mutex_destroy(&p.mu);
  pthread_cond_destroy(&p.cv);
  dk__free(lg->alloc, p.slots);
  dk__free(lg->alloc, p.ready);
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

