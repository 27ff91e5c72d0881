/*
** read.c — reading change files (and a stream's added files) into Arrow batches through the
** library's file reader (src/scan/file_reader.h): the table's columns under the read schema,
** then the change data feed's metadata columns (PROTOCOL.md "Change Data Files"; delta-spark
** CDCReader.cdcReadSchema and CDCReadFunction): `_change_type` from a cdc file's own column,
** else constant per file ("insert" for an added file or rows a DV difference restores,
** "delete" for a removed file or rows a newer DV deletes), `_commit_version` and
** `_commit_timestamp` constant per file. The metadata columns are the file reader's extra
** columns, so projection, filtering (rows, row groups, pages) and file pruning treat them as
** they treat partition columns.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "arrow/array.h"
#include "changes/changes_int.h"
#include "scan/file_reader.h"
#include "snapshot/access.h"
#include "util/exec.h"

static const dk_type STRING_T = {.id = DK_TYPE_STRING};
static const dk_type LONG_T = {.id = DK_TYPE_LONG};
static const dk_type TIMESTAMP_T = {.id = DK_TYPE_TIMESTAMP};

#define N_META 3
static const char *const META_NAMES[N_META] = {"_change_type", "_commit_version",
                                               "_commit_timestamp"};

struct dk_changes__reader {
  int refs; /* atomic */
  const dk_allocator *alloc;
  bool cdf;
  dk_field meta[N_META];
  dk_scan__file_reader *plain; /* added/removed files: every metadata column constant */
  dk_scan__file_reader *cdc;   /* cdc files: _change_type read from the file (cdf only) */
  int64_t *perm;               /* output child i is child perm[i] of a cdc reader batch */
  int64_t n_out;
  struct ArrowSchema schema;
  dk__exec *exec; /* the table's (borrowed: the file readers keep the table) */
};

const char *dk_change_source_type(dk_change_source s) {
  switch (s) {
    case DK_CHANGE_ADDED:
    case DK_CHANGE_DV_RESTORED: return "insert";
    case DK_CHANGE_REMOVED:
    case DK_CHANGE_DV_DELETED: return "delete";
    default: return NULL;
  }
}

void dk_changes__entry_of_action(dk_file_entry *out, const dk_action_file *f) {
  memset(out, 0, sizeof *out);
  out->version = DK_FILE_ENTRY_VERSION;
  out->path = f->path;
  out->size = f->size;
  out->modification_time = f->modification_time;
  out->n_partition_values = f->n_partition_values;
  out->partition_kv = f->partition_kv;
  out->stats = f->stats;
  out->tags_json = f->tags_json;
  out->dv = f->dv;
  out->has_base_row_id = f->has_base_row_id;
  out->base_row_id = f->base_row_id;
  out->has_default_row_commit_version = f->has_default_row_commit_version;
  out->default_row_commit_version = f->default_row_commit_version;
  out->index = -1;
}

static const char *astr(dk_arena *ar, const char *s, dk_error *err, dk_status *st) {
  if (!s || *st) return NULL;
  char *c = dk__arena_strndup(ar, s, strlen(s), err);
  if (!c) *st = DK_NOMEM;
  return c;
}

const dk_dv_descriptor *dk_changes__dv_copy(const dk_dv_descriptor *dv, dk_arena *ar,
                                            dk_error *err) {
  if (!dv) return NULL;
  dk_dv_descriptor *d = dk__arena_alloc(ar, sizeof *d, err);
  if (!d) return NULL;
  *d = *dv;
  dk_status st = DK_OK;
  d->path_or_inline_dv = astr(ar, dv->path_or_inline_dv, err, &st);
  return st ? NULL : d;
}

dk_status dk_changes__entry_copy(dk_file_entry *out, const dk_file_entry *in, bool with_stats,
                                 dk_arena *ar, dk_error *err) {
  *out = *in;
  dk_status st = DK_OK;
  out->path = astr(ar, in->path, err, &st);
  out->stats = with_stats ? astr(ar, in->stats, err, &st) : NULL;
  out->tags_json = astr(ar, in->tags_json, err, &st);
  if (!st && in->n_partition_values) {
    const char **kv = dk__arena_alloc(ar, 2 * in->n_partition_values * sizeof *kv, err);
    if (!kv) return DK_NOMEM;
    for (size_t i = 0; i < 2 * in->n_partition_values; i++)
      kv[i] = astr(ar, in->partition_kv[i], err, &st);
    out->partition_kv = kv;
  }
  if (!st && in->dv) {
    out->dv = dk_changes__dv_copy(in->dv, ar, err);
    if (!out->dv) st = DK_NOMEM;
  }
  return st;
}

/* ---- lists of change files -------------------------------------------------------------- */

void dk_changes__files_init(dk_changes__files *l, const dk_allocator *alloc) {
  memset(l, 0, sizeof *l);
  l->alloc = alloc;
  dk__arena_init(&l->ar, alloc, 0);
}

void dk_changes__files_dispose(dk_changes__files *l) {
  dk__free(l->alloc, l->v);
  dk__arena_dispose(&l->ar);
  memset(l, 0, sizeof *l);
}

dk_status dk_changes__files_push(dk_changes__files *l, const dk_change_file *f,
                                 const char *what, dk_error *err) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 64;
    dk_change_file *p = dk__realloc(l->alloc, l->v, nc * sizeof *p);
    DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory (%s)", what);
    l->v = p;
    l->cap = nc;
  }
  dk_change_file *d = &l->v[l->n];
  *d = *f;
  DK_RETURN_NOT_OK(dk_changes__entry_copy(&d->entry, &f->entry, false, &l->ar, err));
  if (f->keep_dv) {
    d->keep_dv = dk_changes__dv_copy(f->keep_dv, &l->ar, err);
    if (!d->keep_dv) return DK_NOMEM;
  }
  l->n++;
  return DK_OK;
}

dk_status dk_changes__files_get(dk_change_file *out, const dk_changes__files *l, int64_t i,
                                const char *what, dk_error *err) {
  DK_RETURN_IF(i < 0 || (size_t)i >= l->n, DK_INVALID, err, "%s: file %" PRId64 " out of range",
               what, i);
  *out = l->v[i];
  return DK_OK;
}

dk_status dk_changes__files_read(struct ArrowArrayStream *out, dk_changes__reader *r,
                                 const dk_changes__files *l, int64_t first, int64_t n,
                                 int *refs, void (*release)(void *owner), void *owner,
                                 const char *what, dk_error *err) {
  DK_RETURN_IF(first < 0 || n < 0 || (size_t)first > l->n || (size_t)n > l->n - (size_t)first,
               DK_INVALID, err, "%s: files [%" PRId64 ", +%" PRId64 ") out of range", what, first,
               n);
  __atomic_add_fetch(refs, 1, __ATOMIC_RELAXED);
  return dk_changes__read(out, r, l->v + first, (size_t)n, release, owner, err);
}

/* ---- the reader ------------------------------------------------------------------------- */

dk_changes__reader *dk_changes__reader_ref(dk_changes__reader *r) {
  __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
  return r;
}

void dk_changes__reader_free(dk_changes__reader *r) {
  if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  dk_scan__file_reader_free(r->plain);
  dk_scan__file_reader_free(r->cdc);
  dk__schema_release(&r->schema);
  dk__free(r->alloc, r->perm);
  dk__free(r->alloc, r);
}

dk_status dk_changes__reader_schema(struct ArrowSchema *out, const dk_changes__reader *r,
                                    dk_error *err) {
  return dk__schema_copy(out, &r->schema, err);
}

dk_status dk_changes__reader_new(dk_changes__reader **out, dk_snapshot *snap,
                                 const char *const *columns, size_t n_columns,
                                 const dk_expr *filter, bool cdf, int64_t batch_size,
                                 unsigned metadata_fields, dk_error *err) {
  *out = NULL;
  const dk_allocator *alloc = dk_snapshot__allocator(snap);
  dk_changes__reader *r = dk__calloc(alloc, 1, sizeof *r);
  DK_RETURN_IF(!r, DK_NOMEM, err, "out of memory (change data feed)");
  r->refs = 1;
  r->alloc = alloc;
  r->cdf = cdf;
  r->exec = dk_snapshot__exec(snap);
  const dk_type *types[N_META] = {&STRING_T, &LONG_T, &TIMESTAMP_T};
  for (int i = 0; i < N_META; i++) {
    r->meta[i].name = META_NAMES[i];
    r->meta[i].physical_name = META_NAMES[i];
    r->meta[i].type = types[i];
    r->meta[i].nullable = 1;
    r->meta[i].metadata_json = "{}";
    r->meta[i].column_mapping_id = -1;
  }
  static const bool all_constant[N_META] = {true, true, true};
  static const bool cdc_constant[N_META] = {false, true, true};
  dk_scan__file_reader_options o;
  memset(&o, 0, sizeof o);
  o.columns = columns;
  o.n_columns = n_columns;
  o.predicate = filter;
  o.batch_size = batch_size;
  o.metadata_fields = metadata_fields;
  if (cdf) {
    o.extra_columns = r->meta;
    o.n_extra_columns = N_META;
    o.extra_constant = all_constant;
  }
  struct ArrowSchema cs;
  cs.release = NULL;
  dk_status st = dk_scan__file_reader_new(&r->plain, snap, &o, err);
  if (!st) st = dk_scan__file_reader_schema(&r->schema, r->plain, err);
  if (!st && cdf) {
    o.extra_constant = cdc_constant;
    st = dk_scan__file_reader_new(&r->cdc, snap, &o, err);
    if (!st) st = dk_scan__file_reader_schema(&cs, r->cdc, err);
  }
  if (!st && cdf) {
    /* the two readers order `_change_type` apart when it is not requested by name (a read
    ** column of the cdc reader, a per-file one of the other): match them by name */
    r->n_out = r->schema.n_children;
    r->perm = dk__calloc(alloc, (size_t)(r->n_out ? r->n_out : 1), sizeof *r->perm);
    if (!r->perm) st = dk__error_set(err, DK_NOMEM, "out of memory (change data feed)");
    for (int64_t i = 0; !st && i < r->n_out; i++) {
      int64_t j = 0;
      while (j < cs.n_children && strcmp(cs.children[j]->name, r->schema.children[i]->name)) j++;
      if (j == cs.n_children || cs.n_children != r->n_out)
        st = dk__error_set(err, DK_INTERNAL, "change data feed: reader schemas differ");
      r->perm[i] = j;
    }
  }
  dk__schema_release(&cs);
  if (st) {
    dk_changes__reader_free(r);
    return st;
  }
  *out = r;
  return DK_OK;
}

/* The texts of a file's constant metadata columns (those of its reader, in order). */
typedef struct constants {
  char version[24], timestamp[40];
  const char *v[N_META];
} constants;

static void fill_constants(constants *c, const dk_changes__reader *r, const dk_change_file *f) {
  snprintf(c->version, sizeof c->version, "%" PRId64, f->commit_version);
  int64_t ms = f->commit_timestamp;
  time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int64_t frac = ms - (int64_t)secs * 1000;
  struct tm tm;
  if (gmtime_r(&secs, &tm))
    snprintf(c->timestamp, sizeof c->timestamp, "%04d-%02d-%02d %02d:%02d:%02d.%03d000",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)frac);
  else
    c->timestamp[0] = 0; /* out of range: null */
  int k = 0;
  if (f->source != DK_CHANGE_CDC) c->v[k++] = dk_change_source_type(f->source);
  c->v[k++] = c->version;
  c->v[k++] = c->timestamp;
  (void)r;
}

static const dk_scan__file_reader *reader_for(const dk_changes__reader *r,
                                              const dk_change_file *f) {
  return r->cdf && f->source == DK_CHANGE_CDC ? r->cdc : r->plain;
}

dk_status dk_changes__reader_prunes(bool *out, const dk_changes__reader *r,
                                    const dk_change_file *f, dk_error *err) {
  constants c;
  fill_constants(&c, r, f);
  return dk_scan__file_prunes(out, reader_for(r, f), &f->entry, r->cdf ? c.v : NULL, err);
}

/* ---- the stream ------------------------------------------------------------------------- */

/* With a table executor of several threads the stream reads ahead: up to READ_AHEAD files
** after the one being handed out are read whole, each by a task of the executor, into their
** slot's batches (files of at most READ_AHEAD_BYTES; a bigger one is read batch by batch when
** its turn comes). Batches still come out file by file in order. */
#define READ_AHEAD 4
#define READ_AHEAD_BYTES (64 << 20)

typedef struct read_state read_state;

typedef struct slot {
  read_state *s;
  size_t file;            /* index into files */
  int busy;               /* submitted, not joined */
  dk__task task;
  struct ArrowArray *batches;
  size_t n, cap, next;
  dk_status st;
  dk_error err;
} slot;

struct read_state {
  dk_changes__reader *r;
  const dk_change_file *files;
  size_t n, next;
  void (*release_owner)(void *);
  void *owner;
  dk_scan__file *cur;
  const dk_change_file *cur_file;
  constants c;
  dk__exec *ex;            /* NULL: no read-ahead */
  slot slots[READ_AHEAD];  /* slots[i % READ_AHEAD] holds file i */
  size_t ahead;            /* files [next, ahead) are in slots */
};

static dk_status rs_schema(void *p, struct ArrowSchema *out, dk_error *err) {
  read_state *s = p;
  return dk__schema_copy(out, &s->r->schema, err);
}

static void slot_clear(slot *sl) {
  for (size_t i = sl->next; i < sl->n; i++) dk__array_release(&sl->batches[i]);
  dk__free(sl->s->r->alloc, sl->batches);
  sl->batches = NULL;
  sl->n = sl->cap = sl->next = 0;
}

static void rs_release(void *p) {
  read_state *s = p;
  for (int i = 0; i < READ_AHEAD; i++) {
    if (s->slots[i].busy) dk__exec_join(s->ex, &s->slots[i].task);
    if (s->slots[i].s) slot_clear(&s->slots[i]);
  }
  dk_scan__file_close(s->cur);
  if (s->release_owner) s->release_owner(s->owner);
  const dk_allocator *a = s->r->alloc;
  dk_changes__reader_free(s->r);
  dk__free(a, s);
}

static dk_status name_file(dk_status st, const dk_change_file *f, dk_error *err) {
  if (st && f->commit_version >= 0)
    dk__error_prefix(err, "change data feed: version %" PRId64, f->commit_version);
  return st;
}

/* Opens file f (*out = NULL when the filter prunes it); c holds its constants. */
static dk_status open_file(dk_scan__file **out, const dk_changes__reader *r,
                           const dk_change_file *f, constants *c, dk_error *err) {
  *out = NULL;
  bool pruned = false;
  dk_status st = dk_changes__reader_prunes(&pruned, r, f, err);
  if (st || pruned) return st;
  fill_constants(c, r, f);
  return dk_scan__file_open_selected(out, reader_for(r, f), &f->entry, f->keep_dv,
                                     r->cdf ? c->v : NULL, err);
}

/* A batch of file f in the output's column order (the cdc reader's order is permuted). */
static dk_status conform_batch(const dk_changes__reader *r, const dk_change_file *f,
                               struct ArrowArray *out, dk_error *err) {
  if (!r->cdf || f->source != DK_CHANGE_CDC) return DK_OK;
  struct ArrowArray *tmp[64], **ch = out->children;
  struct ArrowArray **buf =
      r->n_out <= 64 ? tmp : dk__malloc(r->alloc, (size_t)r->n_out * sizeof *buf);
  if (!buf) {
    dk__array_release(out);
    return dk__error_set(err, DK_NOMEM, "out of memory (change data feed)");
  }
  for (int64_t i = 0; i < r->n_out; i++) buf[i] = ch[r->perm[i]];
  memcpy(ch, buf, (size_t)r->n_out * sizeof *ch);
  if (buf != tmp) dk__free(r->alloc, buf);
  return DK_OK;
}

/* Task: reads the slot's file whole into its batches. */
static void slot_read(void *arg) {
  slot *sl = arg;
  const dk_changes__reader *r = sl->s->r;
  const dk_change_file *f = &sl->s->files[sl->file];
  constants c;
  dk_scan__file *fh = NULL;
  dk_status st = open_file(&fh, r, f, &c, &sl->err);
  while (!st && fh) {
    struct ArrowArray b;
    st = dk_scan__file_next(&b, fh, &sl->err);
    if (st || !b.release) break;
    st = conform_batch(r, f, &b, &sl->err);
    if (st) break;
    if (sl->n == sl->cap) {
      size_t nc = sl->cap ? 2 * sl->cap : 8;
      struct ArrowArray *p = dk__realloc(r->alloc, sl->batches, nc * sizeof *p);
      if (!p) {
        dk__array_release(&b);
        st = dk__error_set(&sl->err, DK_NOMEM, "out of memory (change data feed)");
        break;
      }
      sl->batches = p;
      sl->cap = nc;
    }
    dk__array_move(&b, &sl->batches[sl->n++]);
  }
  dk_scan__file_close(fh);
  sl->st = name_file(st, f, &sl->err);
}

/* Keeps the slots filled with the files after the current one that are small enough. */
static void read_ahead(read_state *s) {
  if (!s->ex) return;
  if (s->ahead < s->next) s->ahead = s->next;
  while (s->ahead < s->n && s->ahead < s->next + READ_AHEAD &&
         s->files[s->ahead].entry.size <= READ_AHEAD_BYTES) {
    slot *sl = &s->slots[s->ahead % READ_AHEAD];
    sl->s = s;
    sl->file = s->ahead++;
    sl->busy = 1;
    sl->st = DK_OK;
    dk_error_init(&sl->err);
    dk__exec_submit(s->ex, &sl->task, slot_read, sl);
  }
}

static dk_status rs_next(void *p, struct ArrowArray *out, dk_error *err) {
  read_state *s = p;
  out->release = NULL;
  for (;;) {
    if (!s->cur) {
      if (s->next >= s->n) return DK_OK;
      read_ahead(s);
      if (s->next < s->ahead) { /* the file was read ahead */
        slot *sl = &s->slots[s->next % READ_AHEAD];
        if (sl->busy) {
          dk__exec_join(s->ex, &sl->task);
          sl->busy = 0;
        }
        if (sl->st) {
          *err = sl->err;
          return sl->st;
        }
        if (sl->next < sl->n) {
          dk__array_move(&sl->batches[sl->next++], out);
          return DK_OK;
        }
        slot_clear(sl);
        s->next++;
        continue;
      }
      const dk_change_file *f = &s->files[s->next++];
      dk_status st = open_file(&s->cur, s->r, f, &s->c, err);
      if (st) return name_file(st, f, err);
      if (!s->cur) continue; /* pruned */
      s->cur_file = f;
    }
    dk_status st = dk_scan__file_next(out, s->cur, err);
    if (!st && out->release) st = conform_batch(s->r, s->cur_file, out, err);
    if (st) return name_file(st, s->cur_file, err);
    if (out->release) return DK_OK;
    dk_scan__file_close(s->cur);
    s->cur = NULL;
  }
}

dk_status dk_changes__read(struct ArrowArrayStream *out, dk_changes__reader *r,
                           const dk_change_file *files, size_t n, void (*release)(void *owner),
                           void *owner, dk_error *err) {
  read_state *s = dk__calloc(r->alloc, 1, sizeof *s);
  if (!s) {
    if (release) release(owner);
    return dk__error_set(err, DK_NOMEM, "out of memory (change data feed)");
  }
  s->r = dk_changes__reader_ref(r);
  s->files = files;
  s->n = n;
  s->release_owner = release;
  s->owner = owner;
  s->ex = n > 1 && dk__exec_threads(r->exec) > 1 ? r->exec : NULL;
  static const dk_stream_impl impl = {rs_schema, rs_next, rs_release};
  return dk__stream_init(out, &impl, s, r->alloc, err);
}
