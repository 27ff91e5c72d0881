/*
** sink.c — the buffered byte sink of io/sink.h over a dk_storage_writer (dk/sys/storage.h,
** version 2) or memory. A backend older than version 2 (no open_write) gets the whole file
** in one write/put_if_absent at commit, which keeps it correct but not memory-bounded.
*/
#include "io/sink.h"

#define SINK_CHUNK ((size_t)1 << 20)

typedef struct v1_writer {
  dk_storage_writer w;
  dk_storage *s;
  char *path;
  dk_buf all;
} v1_writer;

static dk_status v1_write(dk_storage_writer *w, const void *data, size_t len, dk_error *err) {
  return dk__buf_append(&((v1_writer *)w)->all, data, len, err);
}

static void v1_free(v1_writer *v) {
  const dk_allocator *a = v->all.alloc;
  dk__buf_dispose(&v->all);
  dk__free(a, v->path);
  dk__free(a, v);
}

static dk_status v1_commit(dk_storage_writer *w, int if_absent, dk_error *err) {
  v1_writer *v = (v1_writer *)w;
  dk_status st = if_absent ? v->s->put_if_absent(v->s, v->path, v->all.data, v->all.len, err)
                           : v->s->write(v->s, v->path, v->all.data, v->all.len, err);
  v1_free(v);
  return st;
}

static void v1_abort(dk_storage_writer *w) {
  if (w) v1_free((v1_writer *)w);
}

static dk_status open_v1(dk_storage_writer **out, dk_storage *s, const char *path,
                         const dk_allocator *alloc, dk_error *err) {
  v1_writer *v = dk__calloc(alloc, 1, sizeof *v);
  char *p = dk__strdup(alloc, path);
  if (!v || !p) {
    dk__free(alloc, v);
    dk__free(alloc, p);
    return dk__error_set(err, DK_NOMEM, "out of memory (write %s)", path);
  }
  v->s = s;
  v->path = p;
  dk__buf_init(&v->all, alloc);
  v->w.ctx = v;
  v->w.write = v1_write;
  v->w.commit = v1_commit;
  v->w.abort = v1_abort;
  *out = &v->w;
  return DK_OK;
}

dk_status dk_io__sink_open(dk__sink *s, dk_storage *storage, const char *path,
                           const dk_allocator *alloc, dk_error *err) {
  memset(s, 0, sizeof *s);
  dk__buf_init(&s->buf, alloc);
  s->chunk = SINK_CHUNK;
  DK_RETURN_IF(!storage || !path, DK_INVALID, err, "sink: no storage or path");
  DK_RETURN_IF(storage->version < 1, DK_INVALID, err, "sink: storage version %u is not valid",
               storage->version);
  dk_status st;
  if (storage->version >= 2 && storage->open_write)
    st = storage->open_write(storage, path, &s->w, err);
  else
    st = open_v1(&s->w, storage, path, alloc, err);
  if (st != DK_OK) s->failed = st;
  return st;
}

void dk_io__sink_mem(dk__sink *s, const dk_allocator *alloc) {
  memset(s, 0, sizeof *s);
  dk__buf_init(&s->buf, alloc);
  s->chunk = SIZE_MAX;
}

static dk_status flush(dk__sink *s, dk_error *err) {
  if (!s->w || s->buf.len == 0) return DK_OK;
  dk_status st = s->w->write(s->w, s->buf.data, s->buf.len, err);
  if (st != DK_OK) return s->failed = st;
  dk__buf_clear(&s->buf);
  return DK_OK;
}

dk_status dk_io__sink_write(dk__sink *s, const void *p, size_t n, dk_error *err) {
  if (s->failed) return dk__error_set(err, s->failed, "write after a failed write");
  if (n == 0) return DK_OK;
  if (s->w && n >= s->chunk) { /* large pieces go straight through */
    DK_RETURN_NOT_OK(flush(s, err));
    dk_status st = s->w->write(s->w, p, n, err);
    if (st != DK_OK) return s->failed = st;
  } else {
    dk_status st = dk__buf_append(&s->buf, p, n, err);
    if (st != DK_OK) return s->failed = st;
    if (s->buf.len >= s->chunk) DK_RETURN_NOT_OK(flush(s, err));
  }
  s->pos += (int64_t)n;
  return DK_OK;
}

dk_status dk_io__sink_commit(dk__sink *s, int if_absent, dk_error *err) {
  if (s->failed) {
    dk_status st = dk__error_set(err, s->failed, "commit after a failed write");
    dk_io__sink_abort(s);
    return st;
  }
  if (!s->w) return DK_OK; /* memory sink: the caller takes s->buf */
  dk_status st = flush(s, err);
  if (st != DK_OK) {
    dk_io__sink_abort(s);
    return st;
  }
  dk_storage_writer *w = s->w;
  s->w = NULL;
  st = w->commit(w, if_absent, err);
  dk__buf_dispose(&s->buf);
  s->failed = st != DK_OK ? st : DK_INVALID; /* ended: no more writes */
  return st;
}

void dk_io__sink_abort(dk__sink *s) {
  if (s->w) s->w->abort(s->w);
  s->w = NULL;
  dk__buf_dispose(&s->buf);
  if (!s->failed) s->failed = DK_INVALID;
}
