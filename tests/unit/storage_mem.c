/*
** storage_mem.c — the in-memory dk_storage of storage_mem.h (tests only): a sorted array of
** files holding reference-counted blobs (a mapping keeps its blob alive after the file is
** replaced), per-operation call counters, injected failures and short reads, paginated and
** slowed-down listing. Listing semantics follow the local backend (src/storage/local.c):
** names >= start_name in strcmp order, sub-"directories" reported with is_dir = 1,
** DK_NOT_FOUND when nothing lies below the directory.
*/
#include "storage_mem.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

typedef struct blob {
  int refs;
  size_t len;
  uint8_t data[];
} blob;

typedef struct mem_file {
  char *key;
  blob *b;
  int64_t mtime;
} mem_file;

typedef struct mem_impl {
  pthread_mutex_t mu;
  mem_file *files;       /* sorted by key (strcmp) */
  size_t n, cap;
  int64_t fail_seen;     /* counted calls of the armed operation */
  unsigned version;
} mem_impl;

static const char *const OP_NAMES[DK_MEM_N_OPS] = {
    "list_from", "list page", "read", "read_range", "stat", "write", "put_if_absent", "remove",
    "open_write", "writer write", "writer commit", "read_ranges", "map"};

const char *dk_mem_op_name(int op) {
  return op >= 0 && op < DK_MEM_N_OPS ? OP_NAMES[op] : "any operation";
}

static void blob_unref(blob *b) {
  if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) free(b);
}

/* Counts a call of op and decides whether it fails (status returned, message set). */
static dk_status hit(dk_mem_storage *m, int op, const char *key, dk_error *err) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  m->calls[op]++;
  m->total_calls++;
  bool fail = false;
  int64_t nth = 0;
  if (m->fail_at > 0 && (m->fail_op == DK_MEM_ANY || m->fail_op == op)) {
    nth = ++im->fail_seen;
    fail = nth == m->fail_at || (m->fail_persist && nth > m->fail_at);
    if (fail) m->injected++;
  }
  dk_status st = m->fail_status ? m->fail_status : DK_IO;
  pthread_mutex_unlock(&im->mu);
  if (!fail) return DK_OK;
  return dk__error_set(err, st, "mem: %s %s: injected failure (call %lld)", OP_NAMES[op],
                       key ? key : "", (long long)nth);
}

/* Whether this read-type call is the armed short read. */
static bool short_now(dk_mem_storage *m) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  bool s = m->short_at > 0 && ++m->read_calls == m->short_at;
  pthread_mutex_unlock(&im->mu);
  return s;
}

/* Index of key, or of where it would go (*found tells). Caller holds the mutex. */
static size_t find(mem_impl *im, const char *key, bool *found) {
  size_t lo = 0, hi = im->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(im->files[mid].key, key);
    if (c == 0) {
      *found = true;
      return mid;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  *found = false;
  return lo;
}

/* A new reference to the blob of key, or NULL. */
static blob *get_blob(mem_impl *im, const char *key, int64_t *mtime) {
  pthread_mutex_lock(&im->mu);
  bool found;
  size_t i = find(im, key, &found);
  blob *b = NULL;
  if (found) {
    b = im->files[i].b;
    __atomic_add_fetch(&b->refs, 1, __ATOMIC_ACQ_REL);
    if (mtime) *mtime = im->files[i].mtime;
  }
  pthread_mutex_unlock(&im->mu);
  return b;
}

static dk_status put_blob(mem_impl *im, const char *key, blob *b, int64_t mtime, bool if_absent,
                          dk_error *err) {
  pthread_mutex_lock(&im->mu);
  bool found;
  size_t i = find(im, key, &found);
  dk_status st = DK_OK;
  if (found && if_absent) {
    st = dk__error_set(err, DK_CONFLICT, "mem: create %s: file already exists", key);
  } else if (found) {
    blob_unref(im->files[i].b);
    im->files[i].b = b;
    im->files[i].mtime = mtime;
    b = NULL;
  } else {
    if (im->n == im->cap) {
      size_t nc = im->cap ? im->cap * 2 : 64;
      mem_file *p = realloc(im->files, nc * sizeof *p);
      if (!p) st = dk__error_set(err, DK_NOMEM, "mem: out of memory");
      else im->files = p, im->cap = nc;
    }
    char *k = st ? NULL : strdup(key);
    if (!st && !k) st = dk__error_set(err, DK_NOMEM, "mem: out of memory");
    if (!st) {
      memmove(&im->files[i + 1], &im->files[i], (im->n - i) * sizeof *im->files);
      im->files[i] = (mem_file){k, b, mtime};
      im->n++;
      b = NULL;
    }
  }
  pthread_mutex_unlock(&im->mu);
  blob_unref(b); /* not stored */
  return st;
}

static blob *blob_new(const void *data, size_t len) {
  blob *b = malloc(sizeof *b + (len ? len : 1));
  if (!b) return NULL;
  b->refs = 1;
  b->len = len;
  if (len) memcpy(b->data, data, len);
  return b;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- list ------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct listed {
  char *name;
  int is_dir;
  int64_t size, mtime;
} listed;

static int cmp_listed(const void *a, const void *b) {
  return strcmp(((const listed *)a)->name, ((const listed *)b)->name);
}

static dk_status mem_list_from(dk_storage *s, const char *dir, const char *start_name,
                               dk_list_cb cb, void *payload, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  mem_impl *im = m->impl;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_LIST, dir, err));
  size_t dl = strlen(dir);
  while (dl > 1 && dir[dl - 1] == '/') dl--;
  /* collect the names below dir under the lock; call back without it */
  listed *v = NULL;
  size_t nv = 0, cv = 0;
  bool any = false;
  dk_status st = DK_OK;
  pthread_mutex_lock(&im->mu);
  for (size_t i = 0; i < im->n && !st; i++) {
    const char *k = im->files[i].key;
    if (strncmp(k, dir, dl) || k[dl] != '/') continue;
    any = true;
    const char *rest = k + dl + 1;
    const char *slash = strchr(rest, '/');
    size_t nl = slash ? (size_t)(slash - rest) : strlen(rest);
    if (!nl) continue;
    if (slash && nv && v[nv - 1].is_dir && strlen(v[nv - 1].name) == nl &&
        !memcmp(v[nv - 1].name, rest, nl))
      continue; /* the same sub-directory as the previous key */
    if (nv == cv) {
      cv = cv ? cv * 2 : 64;
      listed *p = realloc(v, cv * sizeof *v);
      if (!p) {
        st = dk__error_set(err, DK_NOMEM, "mem: out of memory");
        break;
      }
      v = p;
    }
    v[nv].name = strndup(rest, nl);
    if (!v[nv].name) {
      st = dk__error_set(err, DK_NOMEM, "mem: out of memory");
      break;
    }
    v[nv].is_dir = slash != NULL;
    v[nv].size = slash ? 0 : (int64_t)im->files[i].b->len;
    v[nv].mtime = slash ? 0 : im->files[i].mtime;
    nv++;
  }
  pthread_mutex_unlock(&im->mu);
  if (!st && !any) st = dk__error_set(err, DK_NOT_FOUND, "mem: list %.*s: no such directory", (int)dl, dir);
  if (!st && nv > 1) {
    qsort(v, nv, sizeof *v, cmp_listed);
    size_t k = 1; /* drop a sub-directory listed twice (keys of other names between) */
    for (size_t i = 1; i < nv; i++) {
      if (v[i].is_dir && v[k - 1].is_dir && !strcmp(v[i].name, v[k - 1].name)) {
        free(v[i].name);
        continue;
      }
      v[k++] = v[i];
    }
    nv = k;
  }
  if (!st && start_name) { /* like ListObjectsV2 start-after: filtered before pagination */
    size_t k = 0;
    for (size_t i = 0; i < nv; i++) {
      if (strcmp(v[i].name, start_name) < 0) free(v[i].name);
      else v[k++] = v[i];
    }
    nv = k;
  }
  dk_buf path;
  dk__buf_init(&path, NULL);
  size_t page = m->list_page > 0 ? (size_t)m->list_page : (nv ? nv : 1);
  for (size_t i = 0; !st && i < nv; i++) {
    if (i % page == 0) {
      if (m->list_delay_us > 0) usleep((useconds_t)m->list_delay_us);
      st = hit(m, DK_MEM_LIST_PAGE, dir, err);
      if (st) break;
    }
    dk__buf_clear(&path);
    st = dk__buf_append(&path, dir, dl, err);
    if (!st && !(dl == 1 && dir[0] == '/')) st = dk__buf_putc(&path, '/', err);
    if (!st) st = dk__buf_puts(&path, v[i].name, err);
    if (st) break;
    dk_file_info info = {path.data, v[i].size, v[i].mtime, v[i].is_dir};
    st = cb(&info, payload);
  }
  if (!st && nv == 0) st = hit(m, DK_MEM_LIST_PAGE, dir, err);
  dk__buf_dispose(&path);
  for (size_t i = 0; i < nv; i++) free(v[i].name);
  free(v);
  return st;
}

/* ---- read ------------------------------------------------------------------------------ */

static dk_status not_found(dk_error *err, const char *op, const char *key) {
  return dk__error_set(err, DK_NOT_FOUND, "mem: %s %s: no such file", op, key);
}

static dk_status mem_read(dk_storage *s, const char *path, uint8_t **out, size_t *len,
                          dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  *out = NULL;
  *len = 0;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_READ, path, err));
  blob *b = get_blob(m->impl, path, NULL);
  if (!b) return not_found(err, "read", path);
  size_t n = short_now(m) ? b->len / 2 : b->len;
  uint8_t *p = malloc(n + 1);
  if (!p) {
    blob_unref(b);
    return dk__error_set(err, DK_NOMEM, "mem: read %s: out of memory", path);
  }
  memcpy(p, b->data, n);
  p[n] = 0;
  blob_unref(b);
  *out = p;
  *len = n;
  return DK_OK;
}

/* Copies [off, off + len) of b into buf; a range past the end (or a short read) is DK_CORRUPT. */
static dk_status copy_range(dk_mem_storage *m, const blob *b, const char *path, int64_t off,
                            void *buf, size_t len, dk_error *err) {
  DK_RETURN_IF(off < 0, DK_INVALID, err, "mem: read %s: negative offset", path);
  size_t have = (uint64_t)off >= b->len ? 0 : b->len - (size_t)off;
  if (short_now(m)) {
    size_t half = len / 2;
    if (half && half <= have) memcpy(buf, b->data + off, half);
    return dk__error_set(err, DK_CORRUPT, "mem: read %s: short read (%zu of %zu bytes at %lld)",
                         path, half, len, (long long)off);
  }
  DK_RETURN_IF(len > have, DK_CORRUPT, err,
               "mem: read %s: file ends at byte %zu, inside the range [%lld, %lld)", path, b->len,
               (long long)off, (long long)(off + (int64_t)len));
  if (len) memcpy(buf, b->data + off, len);
  return DK_OK;
}

static dk_status mem_read_range(dk_storage *s, const char *path, int64_t offset, void *buf,
                                size_t len, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_READ_RANGE, path, err));
  blob *b = get_blob(m->impl, path, NULL);
  if (!b) return not_found(err, "read", path);
  dk_status st = copy_range(m, b, path, offset, buf, len, err);
  blob_unref(b);
  return st;
}

static dk_status mem_read_ranges(dk_storage *s, const char *path, const dk_byte_range *r,
                                 size_t n, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_READ_RANGES, path, err));
  blob *b = get_blob(m->impl, path, NULL);
  if (!b) return not_found(err, "read", path);
  dk_status st = DK_OK;
  for (size_t i = 0; i < n && !st; i++) st = copy_range(m, b, path, r[i].offset, r[i].buf, r[i].len, err);
  blob_unref(b);
  return st;
}

static dk_status mem_stat(dk_storage *s, const char *path, dk_file_info *out, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  mem_impl *im = m->impl;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_STAT, path, err));
  memset(out, 0, sizeof *out);
  out->path = path;
  pthread_mutex_lock(&im->mu);
  bool found;
  size_t i = find(im, path, &found);
  size_t pl = strlen(path);
  while (pl > 1 && path[pl - 1] == '/') pl--;
  if (found) {
    out->size = (int64_t)im->files[i].b->len;
    out->mtime_ms = im->files[i].mtime;
  } else {
    /* a directory: some key continues path with '/' (they sort right after path + "/") */
    for (size_t k = i; k < im->n; k++) {
      const char *key = im->files[k].key;
      if (strncmp(key, path, pl)) break;
      if (key[pl] == '/') {
        out->is_dir = 1;
        break;
      }
    }
  }
  pthread_mutex_unlock(&im->mu);
  if (!found && !out->is_dir) return not_found(err, "stat", path);
  return DK_OK;
}

typedef struct mem_map {
  blob *b;
} mem_map;

static dk_status mem_map_file(dk_storage *s, const char *path, const void **addr, size_t *len,
                              void **token, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  *addr = NULL;
  *len = 0;
  *token = NULL;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_MAP, path, err));
  blob *b = get_blob(m->impl, path, NULL);
  if (!b) return not_found(err, "map", path);
  mem_map *mm = malloc(sizeof *mm);
  if (!mm) {
    blob_unref(b);
    return dk__error_set(err, DK_NOMEM, "mem: map %s: out of memory", path);
  }
  mm->b = b;
  *addr = b->len ? b->data : NULL;
  *len = short_now(m) ? b->len / 2 : b->len;
  *token = mm;
  return DK_OK;
}

static void mem_unmap(dk_storage *s, void *token) {
  (void)s;
  mem_map *mm = token;
  if (!mm) return;
  blob_unref(mm->b);
  free(mm);
}

/* ---- write ----------------------------------------------------------------------------- */

static dk_status mem_write(dk_storage *s, const char *path, const void *data, size_t len,
                           dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_WRITE, path, err));
  blob *b = blob_new(data, len);
  DK_RETURN_IF(!b, DK_NOMEM, err, "mem: write %s: out of memory", path);
  return put_blob(m->impl, path, b, now_ms(), false, err);
}

static dk_status mem_put_if_absent(dk_storage *s, const char *path, const void *data,
                                   size_t len, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_PUT_IF_ABSENT, path, err));
  blob *b = blob_new(data, len);
  DK_RETURN_IF(!b, DK_NOMEM, err, "mem: create %s: out of memory", path);
  return put_blob(m->impl, path, b, now_ms(), true, err);
}

static dk_status mem_remove(dk_storage *s, const char *path, dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  mem_impl *im = m->impl;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_REMOVE, path, err));
  pthread_mutex_lock(&im->mu);
  bool found;
  size_t i = find(im, path, &found);
  if (found) {
    blob_unref(im->files[i].b);
    free(im->files[i].key);
    memmove(&im->files[i], &im->files[i + 1], (im->n - i - 1) * sizeof *im->files);
    im->n--;
  }
  pthread_mutex_unlock(&im->mu);
  return found ? DK_OK : not_found(err, "remove", path);
}

typedef struct mem_writer {
  dk_storage_writer w; /* first */
  dk_mem_storage *m;
  char *path;
  dk_buf bytes;
  int failed;
} mem_writer;

static void mw_free(mem_writer *mw) {
  dk__buf_dispose(&mw->bytes);
  free(mw->path);
  free(mw);
}

static dk_status mw_write(dk_storage_writer *w, const void *data, size_t len, dk_error *err) {
  mem_writer *mw = (mem_writer *)w;
  DK_RETURN_IF(mw->failed, DK_INVALID, err, "mem: write %s: an earlier write failed", mw->path);
  dk_status st = hit(mw->m, DK_MEM_WRITER_WRITE, mw->path, err);
  if (!st) st = dk__buf_append(&mw->bytes, data, len, err);
  if (st) mw->failed = 1;
  return st;
}

static dk_status mw_commit(dk_storage_writer *w, int if_absent, dk_error *err) {
  mem_writer *mw = (mem_writer *)w;
  dk_status st = mw->failed ? dk__error_set(err, DK_INVALID, "mem: commit %s: an earlier write failed", mw->path)
                            : hit(mw->m, DK_MEM_WRITER_COMMIT, mw->path, err);
  if (!st) {
    blob *b = blob_new(mw->bytes.data, mw->bytes.len);
    st = b ? put_blob(mw->m->impl, mw->path, b, now_ms(), if_absent, err)
           : dk__error_set(err, DK_NOMEM, "mem: commit %s: out of memory", mw->path);
  }
  mw_free(mw);
  return st;
}

static void mw_abort(dk_storage_writer *w) {
  if (w) mw_free((mem_writer *)w);
}

static dk_status mem_open_write(dk_storage *s, const char *path, dk_storage_writer **out,
                                dk_error *err) {
  dk_mem_storage *m = (dk_mem_storage *)s;
  *out = NULL;
  DK_RETURN_NOT_OK(hit(m, DK_MEM_OPEN_WRITE, path, err));
  mem_writer *mw = calloc(1, sizeof *mw);
  char *p = strdup(path);
  if (!mw || !p) {
    free(mw);
    free(p);
    return dk__error_set(err, DK_NOMEM, "mem: write %s: out of memory", path);
  }
  mw->m = m;
  mw->path = p;
  dk__buf_init(&mw->bytes, NULL);
  mw->w.ctx = mw;
  mw->w.write = mw_write;
  mw->w.commit = mw_commit;
  mw->w.abort = mw_abort;
  *out = &mw->w;
  return DK_OK;
}

/* ---- lifetime ---------------------------------------------------------------------------- */

static void mem_free_buf(dk_storage *s, void *p) {
  (void)s;
  free(p);
}

static void mem_free(dk_storage *s) { dk_mem_free((dk_mem_storage *)s); }

void dk_mem_apply(dk_mem_storage *m) {
  mem_impl *im = m->impl;
  dk_storage *s = &m->base;
  bool v2 = im->version >= 2;
  s->open_write = v2 ? mem_open_write : NULL;
  s->read_ranges = v2 ? mem_read_ranges : NULL;
  s->map = v2 && !m->no_map ? mem_map_file : NULL;
  s->unmap = v2 && !m->no_map ? mem_unmap : NULL;
}

dk_status dk_mem_new_version(dk_mem_storage **out, unsigned version, dk_error *err) {
  *out = NULL;
  dk_mem_storage *m = calloc(1, sizeof *m);
  mem_impl *im = calloc(1, sizeof *im);
  if (!m || !im) {
    free(m);
    free(im);
    return dk__error_set(err, DK_NOMEM, "mem: out of memory");
  }
  pthread_mutex_init(&im->mu, NULL);
  im->version = version;
  m->impl = im;
  m->fail_op = DK_MEM_ANY;
  dk_storage *s = &m->base;
  s->version = version;
  s->ctx = m;
  s->list_from = mem_list_from;
  s->read = mem_read;
  s->read_range = mem_read_range;
  s->stat = mem_stat;
  s->write = mem_write;
  s->put_if_absent = mem_put_if_absent;
  s->remove = mem_remove;
  s->free_buf = mem_free_buf;
  s->free = mem_free;
  dk_mem_apply(m);
  *out = m;
  return DK_OK;
}

void dk_mem_free(dk_mem_storage *m) {
  if (!m) return;
  mem_impl *im = m->impl;
  for (size_t i = 0; i < im->n; i++) {
    free(im->files[i].key);
    blob_unref(im->files[i].b);
  }
  free(im->files);
  pthread_mutex_destroy(&im->mu);
  free(im);
  free(m);
}

dk_status dk_mem_put(dk_mem_storage *m, const char *key, const void *data, size_t len,
                     int64_t mtime_ms, dk_error *err) {
  blob *b = blob_new(data, len);
  DK_RETURN_IF(!b, DK_NOMEM, err, "mem: out of memory");
  return put_blob(m->impl, key, b, mtime_ms, false, err);
}

const uint8_t *dk_mem_get(dk_mem_storage *m, const char *key, size_t *len) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  bool found;
  size_t i = find(im, key, &found);
  const uint8_t *p = found ? im->files[i].b->data : NULL;
  if (found && len) *len = im->files[i].b->len;
  pthread_mutex_unlock(&im->mu);
  return p;
}

size_t dk_mem_num_files(dk_mem_storage *m) { return ((mem_impl *)m->impl)->n; }

size_t dk_mem_remove_prefix(dk_mem_storage *m, const char *prefix) {
  mem_impl *im = m->impl;
  size_t pl = strlen(prefix), k = 0, removed = 0;
  pthread_mutex_lock(&im->mu);
  for (size_t i = 0; i < im->n; i++) {
    if (!strncmp(im->files[i].key, prefix, pl)) {
      free(im->files[i].key);
      blob_unref(im->files[i].b);
      removed++;
    } else {
      im->files[k++] = im->files[i];
    }
  }
  im->n = k;
  pthread_mutex_unlock(&im->mu);
  return removed;
}

static dk_status load_rec(dk_mem_storage *m, dk_buf *local, dk_buf *key, dk_error *err) {
  DIR *d = opendir(local->data);
  if (!d) return dk__error_set(err, DK_IO, "mem: opendir %s: %s", local->data, strerror(errno));
  dk_status st = DK_OK;
  size_t ll = local->len, kl = key->len;
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **p = realloc(names, cap * sizeof *p);
      if (!p) break;
      names = p;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n && !st; i++) {
    local->len = ll;
    key->len = kl;
    st = dk__buf_printf(local, err, "/%s", names[i]);
    if (!st) st = dk__buf_printf(key, err, "/%s", names[i]);
    struct stat sb;
    if (!st && stat(local->data, &sb) != 0) st = dk__error_set(err, DK_IO, "mem: stat %s", local->data);
    if (st) break;
    if (S_ISDIR(sb.st_mode)) {
      st = load_rec(m, local, key, err);
    } else if (S_ISREG(sb.st_mode)) {
      char *text = NULL;
      size_t len = 0;
      FILE *f = fopen(local->data, "rb");
      if (!f) {
        st = dk__error_set(err, DK_IO, "mem: open %s", local->data);
        break;
      }
      text = malloc((size_t)sb.st_size + 1);
      len = text ? fread(text, 1, (size_t)sb.st_size, f) : 0;
      fclose(f);
      int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
      st = text ? dk_mem_put(m, key->data, text, len, mt, err)
                : dk__error_set(err, DK_NOMEM, "mem: out of memory");
      free(text);
    }
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  local->len = ll;
  key->len = kl;
  if (local->data) local->data[ll] = 0;
  if (key->data) key->data[kl] = 0;
  return st;
}

dk_status dk_mem_load_dir(dk_mem_storage *m, const char *local_dir, const char *prefix,
                          dk_error *err) {
  dk_buf local, key;
  dk__buf_init(&local, NULL);
  dk__buf_init(&key, NULL);
  size_t ll = strlen(local_dir), pl = strlen(prefix);
  while (ll > 1 && local_dir[ll - 1] == '/') ll--;
  while (pl > 1 && prefix[pl - 1] == '/') pl--;
  dk_status st = dk__buf_append(&local, local_dir, ll, err);
  if (!st) st = dk__buf_append(&key, prefix, pl, err);
  if (!st) st = load_rec(m, &local, &key, err);
  dk__buf_dispose(&local);
  dk__buf_dispose(&key);
  return st;
}

void dk_mem_fail(dk_mem_storage *m, int op, int64_t nth, dk_status st, int persist) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  m->fail_op = op;
  m->fail_at = nth;
  m->fail_status = st;
  m->fail_persist = persist;
  pthread_mutex_unlock(&im->mu);
  dk_mem_reset_counters(m);
}

void dk_mem_short_read(dk_mem_storage *m, int64_t nth) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  m->short_at = nth;
  m->read_calls = 0;
  pthread_mutex_unlock(&im->mu);
}

void dk_mem_reset_counters(dk_mem_storage *m) {
  mem_impl *im = m->impl;
  pthread_mutex_lock(&im->mu);
  memset(m->calls, 0, sizeof m->calls);
  m->total_calls = 0;
  m->injected = 0;
  m->read_calls = 0;
  im->fail_seen = 0;
  pthread_mutex_unlock(&im->mu);
}
