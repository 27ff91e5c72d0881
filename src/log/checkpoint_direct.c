/*
** checkpoint_direct.c — a Parquet checkpoint's add and remove rows applied straight from the
** Parquet leaves (checkpoint.h dk_log__direct_*), used by checkpoint_parquet.c.
**
** Follows PROTOCOL.md "Checkpoint Schema": add (path, partitionValues, size,
** modificationTime, tags, deletionVector, baseRowId, defaultRowCommitVersion) and remove
** (path, deletionTimestamp, dataChange, size, deletionVector), located in the Parquet schema
** by name (maps by position, as Parquet's MAP backward-compatibility rules allow other names
** for their groups) and read with the leaf reader of codec/parquet/pages.h: Dremel levels and
** dense values per batch, no Arrow arrays. The two columns hold nearly every row of a
** checkpoint. A layout it does not expect makes dk_log__direct_open fail with DK_UNSUPPORTED
** before a row is applied, and the caller reads the columns through Arrow instead. Rows go
** through dk_log__apply_add_in / dk_log__apply_remove_in, the rules commit files follow.
*/
#include <inttypes.h>
#include <stdio.h>

#include "codec/parquet/metadata.h"
#include "codec/parquet/pages.h"
#include "log/checkpoint.h"


#define DIRECT_BATCH 16384

typedef struct leafc { /* one leaf and its cursors within the current batch */
  dk_pq__leaf *l;      /* NULL: the file has no such leaf (always null) */
  dk_pq__leaf_data d;  /* the batch being applied */
  dk_pq__leaf_data dd[2]; /* decoded batches (alternating slots) */
  int type, max_def;
  int64_t li, vi;      /* next level, next dense value */
} leafc;

typedef struct map_leaves { /* map<string, string>: key and value leaves */
  leafc k, v;
  int map_def;   /* def level at which the map is non-null */
  int entry_def; /* ... and holds an entry */
} map_leaves;

typedef struct dv_leaves {
  leafc type, path, off, size, card;
  int def; /* def level at which the deletionVector struct is non-null */
} dv_leaves;

struct dk__direct {
  leafc add_path, add_size, add_mtime, add_brid, add_drcv;
  map_leaves add_pv, add_tags;
  dv_leaves add_dv;
  int add_def;
  leafc rm_path, rm_ts, rm_dc, rm_size;
  dv_leaves rm_dv;
  int rm_def;
  int has_rm;
  const dk_allocator *alloc;
  dk_str *kv, *tkv; /* map entries of the current row: partitionValues, tags */
  size_t kv_cap, tkv_cap;
  dk_buf tags, dvpath;
};

typedef dk__direct direct;

static inline uint32_t lc_def(const leafc *c, int64_t i) {
  return c->d.def ? c->d.def[i] : (uint32_t)c->max_def;
}

/* The k-th dense BYTE_ARRAY value of c's batch. */
static inline dk_str lc_view(const leafc *c, int64_t k) {
  dk_str v;
  int32_t lo = c->d.offs[k], hi = c->d.offs[k + 1];
  v.ptr = c->d.data ? (const char *)c->d.data + lo : "";
  v.len = c->d.data ? (size_t)(hi - lo) : 0;
  return v;
}

/* Flat leaves: one level per row. Each takes row r's value, when there is one, and must be
 * called for every row whose parent struct is present (rows without it hold no values).
 * lc_take: the dense index of row r's value, or -1 when it is null. */
static inline int64_t lc_take(leafc *c, int64_t r) {
  if (!c->l || c->vi >= c->d.n_dense || lc_def(c, r) != (uint32_t)c->max_def) return -1;
  return c->vi++;
}

static bool lc_str(leafc *c, int64_t r, dk_str *out) {
  int64_t k = lc_take(c, r);
  if (k < 0) return false;
  *out = lc_view(c, k);
  return true;
}

static bool lc_int(leafc *c, int64_t r, int64_t *out) {
  int64_t k = lc_take(c, r);
  if (k < 0) return false;
  if (c->type == PQ_INT64) {
    memcpy(out, c->d.vals + 8 * k, 8);
  } else {
    int32_t v;
    memcpy(&v, c->d.vals + 4 * k, 4);
    *out = v;
  }
  return true;
}

static bool lc_bool(leafc *c, int64_t r, bool *out) {
  int64_t k = lc_take(c, r);
  if (k < 0) return false;
  *out = c->d.vals[k] != 0;
  return true;
}

/* Consumes row r's levels of a map; kv receives 2 * *n views (key, value; value.ptr NULL =
 * null) and *present whether the map is non-null. */
static dk_status map_row(map_leaves *m, const dk_allocator *a, dk_str **kv, size_t *cap,
                         size_t *n, bool *present, dk_error *err) {
  *n = 0;
  *present = false;
  if (!m->k.l) return DK_OK;
  leafc *k = &m->k, *v = &m->v;
  int64_t i = k->li, end = k->d.n_levels;
  if (i >= end || i >= v->d.n_levels)
    return dk__error_set(err, DK_CORRUPT, "checkpoint: map levels end before the rows");
  *present = lc_def(k, i) >= (uint32_t)m->map_def;
  do {
    uint32_t kd = lc_def(k, i);
    if (kd >= (uint32_t)m->entry_def) {
      if (kd != (uint32_t)k->max_def || k->vi >= k->d.n_dense)
        return dk__error_set(err, DK_CORRUPT, "checkpoint: null map key");
      if (2 * (*n + 1) > *cap) {
        size_t nc = 2 * (*n + 1) + 16;
        dk_str *p = dk__realloc(a, *kv, nc * sizeof *p);
        if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
        *kv = p;
        *cap = nc;
      }
      dk_str *e = *kv + 2 * *n;
      e[0] = lc_view(k, k->vi++);
      e[1].ptr = NULL;
      e[1].len = 0;
      if (i < v->d.n_levels && lc_def(v, i) == (uint32_t)v->max_def && v->vi < v->d.n_dense)
        e[1] = lc_view(v, v->vi++);
      (*n)++;
    }
    i++;
  } while (i < end && k->d.rep[i] != 0);
  k->li = v->li = i;
  return DK_OK;
}

/* Checks an opened leaf (c->l); want: bit mask of accepted physical types. A leaf of another
 * layout (type, repetition, depth) is DK_UNSUPPORTED. */
static dk_status lc_check(leafc *c, unsigned want, int max_rep, int depth) {
  c->type = dk_pq__leaf_type(c->l);
  c->max_def = dk_pq__leaf_max_def(c->l);
  if (!(want & (1u << c->type)) || dk_pq__leaf_max_rep(c->l) != max_rep ||
      dk_pq__leaf_def_at(c->l, depth) < 0 || dk_pq__leaf_def_at(c->l, depth + 1) >= 0)
    return DK_UNSUPPORTED;
  return DK_OK;
}

/* Opens one leaf by path and checks it (lc_check). A missing leaf is fine unless required. */
static dk_status lc_open(leafc *c, dk_parquet_file *pf, const char *path, unsigned want,
                         int max_rep, int depth, bool required, dk_error *err) {
  memset(c, 0, sizeof *c);
  dk_error e;
  dk_error_init(&e);
  dk_status s = dk_pq__leaf_open(&c->l, pf, path, &e);
  if (s == DK_NOT_FOUND && !required) return DK_OK;
  if (s != DK_OK) return s == DK_NOMEM ? dk__error_set(err, DK_NOMEM, "out of memory") : DK_UNSUPPORTED;
  return lc_check(c, want, max_rep, depth);
}

#define T_STR (1u << PQ_BYTE_ARRAY)
#define T_INT ((1u << PQ_INT64) | (1u << PQ_INT32))
#define T_BOOL (1u << PQ_BOOLEAN)

/* The key and value leaves of a map<string, string> field, found by position (the Parquet
 * names of its repeated group and fields vary between writers); no field: no leaves. */
static dk_status map_open(map_leaves *m, dk_parquet_file *pf, const char *base, dk_error *err) {
  memset(m, 0, sizeof *m);
  dk_error e;
  dk_error_init(&e);
  dk_status s = dk_pq__leaf_open_map(&m->k.l, &m->v.l, pf, base, &e);
  if (s == DK_NOT_FOUND) return DK_OK;
  if (s != DK_OK) return s == DK_NOMEM ? dk__error_set(err, DK_NOMEM, "out of memory") : DK_UNSUPPORTED;
  DK_RETURN_NOT_OK(lc_check(&m->k, T_STR, 1, 3));
  DK_RETURN_NOT_OK(lc_check(&m->v, T_STR, 1, 3));
  m->map_def = dk_pq__leaf_def_at(m->k.l, 1);
  m->entry_def = dk_pq__leaf_def_at(m->k.l, 2);
  /* key_value is a repeated group: an entry adds one level */
  return m->entry_def == m->map_def + 1 ? DK_OK : DK_UNSUPPORTED;
}

static dk_status dv_open(dv_leaves *d, dk_parquet_file *pf, const char *base, dk_error *err) {
  char p[96];
  memset(d, 0, sizeof *d);
  snprintf(p, sizeof p, "%s.storageType", base);
  DK_RETURN_NOT_OK(lc_open(&d->type, pf, p, T_STR, 0, 2, false, err));
  snprintf(p, sizeof p, "%s.pathOrInlineDv", base);
  DK_RETURN_NOT_OK(lc_open(&d->path, pf, p, T_STR, 0, 2, d->type.l != NULL, err));
  snprintf(p, sizeof p, "%s.offset", base);
  DK_RETURN_NOT_OK(lc_open(&d->off, pf, p, T_INT, 0, 2, false, err));
  snprintf(p, sizeof p, "%s.sizeInBytes", base);
  DK_RETURN_NOT_OK(lc_open(&d->size, pf, p, T_INT, 0, 2, false, err));
  snprintf(p, sizeof p, "%s.cardinality", base);
  DK_RETURN_NOT_OK(lc_open(&d->card, pf, p, T_INT, 0, 2, false, err));
  /* a deletionVector without storageType is not a layout this path reads */
  if (!d->type.l) return (d->path.l || d->off.l || d->size.l || d->card.l) ? DK_UNSUPPORTED : DK_OK;
  d->def = dk_pq__leaf_def_at(d->type.l, 1);
  return DK_OK;
}

/* Every leaf of d, for reading and freeing in one loop. */
static size_t direct_leaves(direct *d, leafc **out) {
  leafc *all[] = {&d->add_path,    &d->add_size,    &d->add_mtime,   &d->add_brid,
                  &d->add_drcv,    &d->add_pv.k,    &d->add_pv.v,    &d->add_tags.k,
                  &d->add_tags.v,  &d->add_dv.type, &d->add_dv.path, &d->add_dv.off,
                  &d->add_dv.size, &d->add_dv.card, &d->rm_path,     &d->rm_ts,
                  &d->rm_dc,       &d->rm_size,     &d->rm_dv.type,  &d->rm_dv.path,
                  &d->rm_dv.off,   &d->rm_dv.size,  &d->rm_dv.card};
  size_t n = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(all); i++)
    if (all[i]->l) out[n++] = all[i];
  return n;
}

void dk_log__direct_free(dk__direct *d) {
  if (!d) return;
  leafc *ls[32];
  size_t n = direct_leaves(d, ls);
  for (size_t i = 0; i < n; i++) dk_pq__leaf_free(ls[i]->l);
  const dk_allocator *alloc = d->alloc;
  dk__free(alloc, d->kv);
  dk__free(alloc, d->tkv);
  dk__buf_dispose(&d->tags);
  dk__buf_dispose(&d->dvpath);
  dk__free(alloc, d);
}

dk_status dk_log__direct_open(dk__direct **out, dk_parquet_file *pf, const dk_allocator *alloc,
                              bool with_remove, dk_error *err) {
  *out = NULL;
  direct *d = dk__calloc(alloc, 1, sizeof *d);
  if (!d) return dk__error_set(err, DK_NOMEM, "out of memory");
  d->alloc = alloc;
  dk__buf_init(&d->tags, alloc);
  dk__buf_init(&d->dvpath, alloc);
  dk_status s = lc_open(&d->add_path, pf, "add.path", T_STR, 0, 1, true, err);
  if (s == DK_OK) s = lc_open(&d->add_size, pf, "add.size", T_INT, 0, 1, true, err);
  if (s == DK_OK) s = lc_open(&d->add_mtime, pf, "add.modificationTime", T_INT, 0, 1, false, err);
  if (s == DK_OK) s = lc_open(&d->add_brid, pf, "add.baseRowId", T_INT, 0, 1, false, err);
  if (s == DK_OK)
    s = lc_open(&d->add_drcv, pf, "add.defaultRowCommitVersion", T_INT, 0, 1, false, err);
  if (s == DK_OK) s = map_open(&d->add_pv, pf, "add.partitionValues", err);
  if (s == DK_OK) s = map_open(&d->add_tags, pf, "add.tags", err);
  if (s == DK_OK) s = dv_open(&d->add_dv, pf, "add.deletionVector", err);
  if (s == DK_OK) d->add_def = dk_pq__leaf_def_at(d->add_path.l, 0);
  if (s == DK_OK && with_remove) {
    d->has_rm = 1;
    s = lc_open(&d->rm_path, pf, "remove.path", T_STR, 0, 1, true, err);
    if (s == DK_OK) s = lc_open(&d->rm_ts, pf, "remove.deletionTimestamp", T_INT, 0, 1, false, err);
    if (s == DK_OK) s = lc_open(&d->rm_dc, pf, "remove.dataChange", T_BOOL, 0, 1, false, err);
    if (s == DK_OK) s = lc_open(&d->rm_size, pf, "remove.size", T_INT, 0, 1, false, err);
    if (s == DK_OK) s = dv_open(&d->rm_dv, pf, "remove.deletionVector", err);
    if (s == DK_OK) d->rm_def = dk_pq__leaf_def_at(d->rm_path.l, 0);
  }
  if (s != DK_OK) {
    dk_log__direct_free(d);
    return s;
  }
  *out = d;
  return DK_OK;
}

/* Row r's deletionVector, when present: the views go to the caller's struct fields. */
static dk_status dv_row(dv_leaves *d, int64_t r, bool *has, char *type, dk_str *path,
                        int32_t *off, int32_t *size, int64_t *card, dk_error *err) {
  *has = false;
  if (!d->type.l || lc_def(&d->type, r) < (uint32_t)d->def) {
    /* a null struct: its leaves hold no values at r */
    return DK_OK;
  }
  dk_str t;
  int64_t x;
  if (!lc_str(&d->type, r, &t) || t.len != 1 || !lc_str(&d->path, r, path))
    return dk__error_set(err, DK_CORRUPT, "checkpoint: malformed deletionVector");
  *has = true;
  *type = t.ptr[0];
  *off = lc_int(&d->off, r, &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
  *size = lc_int(&d->size, r, &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : 0;
  *card = lc_int(&d->card, r, &x) ? x : -1; /* absent: refused for adds (log/actions.c) */
  return DK_OK;
}

static dk_status direct_add(dk__state *st, direct *d, int64_t r, dk_error *err) {
  dk__add in;
  memset(&in, 0, sizeof in);
  if (!lc_str(&d->add_path, r, &in.path))
    return dk__error_set(err, DK_CORRUPT, "checkpoint add row without a path");
  if (!lc_int(&d->add_size, r, &in.size))
    return dk__error_set(err, DK_CORRUPT, "checkpoint add row without a size");
  lc_int(&d->add_mtime, r, &in.mtime);
  bool present;
  DK_RETURN_NOT_OK(map_row(&d->add_pv, d->alloc, &d->kv, &d->kv_cap, &in.n_pv, &present, err));
  in.pv = d->kv;
  size_t nt;
  DK_RETURN_NOT_OK(map_row(&d->add_tags, d->alloc, &d->tkv, &d->tkv_cap, &nt, &present, err));
  if (present) { /* rendered as the JSON object a commit would hold */
    const dk_str *tkv = d->tkv;
    dk_buf *tags = &d->tags;
    dk_status s;
    dk__buf_clear(tags);
    s = dk__buf_putc(tags, '{', err);
    for (size_t i = 0; s == DK_OK && i < nt; i++) {
      if (i) s = dk__buf_putc(tags, ',', err);
      if (s == DK_OK) s = dk__json_write_str(tags, tkv[2 * i].ptr, tkv[2 * i].len, err);
      if (s == DK_OK) s = dk__buf_putc(tags, ':', err);
      if (s == DK_OK)
        s = tkv[2 * i + 1].ptr ? dk__json_write_str(tags, tkv[2 * i + 1].ptr, tkv[2 * i + 1].len, err)
                               : dk__buf_puts(tags, "null", err);
    }
    if (s == DK_OK) s = dk__buf_putc(tags, '}', err);
    DK_RETURN_NOT_OK(s);
    in.tags_json.ptr = tags->data;
    in.tags_json.len = tags->len;
  }
  bool has_dv;
  DK_RETURN_NOT_OK(dv_row(&d->add_dv, r, &has_dv, &in.dv_type, &in.dv_path, &in.dv_offset,
                          &in.dv_size, &in.dv_card, err));
  in.has_dv = has_dv;
  in.has_brid = lc_int(&d->add_brid, r, &in.brid);
  in.has_drcv = lc_int(&d->add_drcv, r, &in.drcv);
  return dk_log__apply_add_in(st, &in, err);
}

static dk_status direct_remove(dk__state *st, direct *d, int64_t r, dk_error *err) {
  dk__remove in;
  memset(&in, 0, sizeof in);
  if (!lc_str(&d->rm_path, r, &in.path))
    return dk__error_set(err, DK_CORRUPT, "checkpoint remove row without a path");
  if (!lc_int(&d->rm_ts, r, &in.deletion_timestamp)) in.deletion_timestamp = -1;
  if (!lc_int(&d->rm_size, r, &in.size)) in.size = -1;
  bool dc;
  in.data_change = lc_bool(&d->rm_dc, r, &dc) ? dc : 1;
  bool has_dv;
  dk_dv_descriptor dv;
  dk_str p;
  memset(&dv, 0, sizeof dv);
  DK_RETURN_NOT_OK(dv_row(&d->rm_dv, r, &has_dv, &dv.storage_type, &p, &dv.offset,
                          &dv.size_in_bytes, &dv.cardinality, err));
  if (has_dv) {
    if (dv.storage_type != 'u' && dv.storage_type != 'i' && dv.storage_type != 'p')
      return dk__error_set(err, DK_CORRUPT, "log: remove: unknown deletionVector storageType '%c'",
                           dv.storage_type);
    dk__buf_clear(&d->dvpath);
    DK_RETURN_NOT_OK(dk__buf_append(&d->dvpath, p.ptr, p.len, err));
    DK_RETURN_NOT_OK(dk__buf_putc(&d->dvpath, 0, err));
    dv.path_or_inline_dv = d->dvpath.data;
    in.dv = &dv;
  }
  return dk_log__apply_remove_in(st, &in, DK__FROM_CHECKPOINT, err);
}

/* Reads the next batch of every leaf into slot `k` (0 or 1) of its data; *got is its rows. */
static dk_status read_batch(leafc **ls, size_t nl, int k, int64_t *got, dk_error *err) {
  *got = -1;
  for (size_t i = 0; i < nl; i++) {
    int64_t g;
    DK_RETURN_NOT_OK(dk_pq__leaf_read(ls[i]->l, DIRECT_BATCH, &ls[i]->dd[k], &g, err));
    if (*got >= 0 && g != *got)
      return dk__error_set(err, DK_CORRUPT, "checkpoint columns of different lengths");
    *got = g;
  }
  if (*got < 0) *got = 0;
  return DK_OK;
}

/* Applies one decoded batch (slot k) whose first row is row_base. */
static dk_status apply_batch(dk__state *st, direct *d, leafc **ls, size_t nl, int k,
                             int64_t got, int64_t row_base, uint32_t *rowmap, int64_t nrows,
                             dk_error *err) {
  for (size_t i = 0; i < nl; i++) {
    ls[i]->d = ls[i]->dd[k];
    ls[i]->li = ls[i]->vi = 0;
  }
  for (int64_t r = 0; r < got; r++) {
    int64_t row = row_base + r;
    dk_status s;
    bool present;
    size_t n;
    if (lc_def(&d->add_path, r) >= (uint32_t)d->add_def) {
      s = direct_add(st, d, r, err);
      if (s == DK_OK && rowmap && row < nrows) rowmap[row] = (uint32_t)st->last_pos;
    } else {
      /* no add in this row: its maps still hold one (null) level each */
      s = map_row(&d->add_pv, d->alloc, &d->kv, &d->kv_cap, &n, &present, err);
      if (s == DK_OK) s = map_row(&d->add_tags, d->alloc, &d->tkv, &d->tkv_cap, &n, &present, err);
    }
    if (s == DK_OK && d->has_rm && lc_def(&d->rm_path, r) >= (uint32_t)d->rm_def)
      s = direct_remove(st, d, r, err);
    if (s != DK_OK) {
      dk__error_prefix(err, "row %" PRId64, row);
      return s;
    }
  }
  return DK_OK;
}

/* Reading ahead in a direct pass: batch b + 1 is read on the executor (into the other slot)
 * while the caller applies batch b; the task that finds no batch left runs the caller's
 * `after` job, which then overlaps the application of the last batch. */
typedef struct decoder {
  leafc **ls;
  size_t nl;
  int k;                    /* slot being read */
  int64_t got;              /* rows read; 0 = no batch left */
  dk_status st;
  dk_error err;
  void (*after)(void *);    /* run after the last batch when not NULL */
  void *after_arg;
  bool after_ran;
} decoder;

static void decode_task(void *arg) {
  decoder *dc = arg;
  dk_error_init(&dc->err);
  dc->st = read_batch(dc->ls, dc->nl, dc->k, &dc->got, &dc->err);
  if (dc->st == DK_OK && dc->got == 0 && dc->after) {
    dc->after(dc->after_arg);
    dc->after_ran = true;
  }
}

dk_status dk_log__direct_pass(dk__state *st, dk__direct *d, uint32_t *rowmap, int64_t nrows,
                              void (*after)(void *), void *after_arg, bool *after_ran,
                              dk_error *err) {
  leafc *ls[32];
  size_t nl = direct_leaves(d, ls);
  int64_t row_base = 0;
  *after_ran = false;
  if (dk__exec_threads(st->exec) == 1 || nrows <= DIRECT_BATCH) {
    dk_status s = DK_OK;
    for (int64_t b = 0; s == DK_OK; b++) {
      int64_t got;
      s = read_batch(ls, nl, (int)(b & 1), &got, err);
      if (s != DK_OK || got == 0) break;
      s = apply_batch(st, d, ls, nl, (int)(b & 1), got, row_base, rowmap, nrows, err);
      row_base += got;
    }
    return s;
  }
  decoder dc;
  memset(&dc, 0, sizeof dc);
  dc.ls = ls;
  dc.nl = nl;
  dc.after = after;
  dc.after_arg = after_arg;
  dk__task task;
  dk__exec_submit(st->exec, &task, decode_task, &dc);
  dk_status s = DK_OK;
  for (int64_t b = 0;; b++) {
    dk__exec_join(st->exec, &task);
    if (dc.st != DK_OK) {
      s = dc.st;
      if (err) *err = dc.err;
      break;
    }
    int64_t got = dc.got;
    if (got == 0) break;
    /* slot (b + 1) & 1 was applied at b - 1: the next batch can be read into it now */
    dc.k = (int)((b + 1) & 1);
    dk__exec_submit(st->exec, &task, decode_task, &dc);
    s = apply_batch(st, d, ls, nl, (int)(b & 1), got, row_base, rowmap, nrows, err);
    row_base += got;
    if (s != DK_OK) {
      dk__exec_join(st->exec, &task);
      break;
    }
  }
  *after_ran = dc.after_ran;
  return s;
}

