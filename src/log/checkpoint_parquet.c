/*
** checkpoint_parquet.c — reading Parquet checkpoints (classic, multi-part parts, V2 top-level
** files and V2 sidecars) through dk's Parquet reader (include/dk/parquet.h).
**
** Follows PROTOCOL.md "Checkpoints" / "Checkpoint Schema" and "V2 Checkpoint": each row has
** one non-null action column (add, remove, metaData, protocol, txn, domainMetadata, sidecar,
** checkpointMetadata), applied through the same reconciliation code as commit files. Three
** readers share the work:
** - add and remove rows straight from their leaves (checkpoint_direct.c), with a second
**   thread decoding ahead; the other action columns are scanned for presence and read below
**   only up to their last row;
** - the Arrow path, for what the direct one does not take: add rows through add_row, other
**   rows rendered as the equivalent JSON action. The Arrow walk handles struct children,
**   utf8/binary offsets, map = list<struct<key,value>>, lists, integers, booleans and
**   validity bitmaps; stats_parsed/partitionValues_parsed are skipped (the text stats are kept);
** - add.stats kept as its stored (compressed) pages, decoded when a file's stats are asked for.
*/
#include <inttypes.h>
#include <stdio.h>

#include "arrow/array.h"
#include "codec/parquet/metadata.h"
#include "codec/parquet/open.h"
#include "codec/parquet/pages.h"
#include "dk/parquet.h"
#include "log/checkpoint.h"

static const char *const action_columns[] = {"add",  "remove",          "metaData",
                                             "protocol", "txn",         "domainMetadata",
                                             "sidecar",  "checkpointMetadata"};

static bool is_valid(const struct ArrowArray *a, int64_t i) {
  if (a->null_count == 0 || a->n_buffers == 0 || !a->buffers[0]) return true;
  int64_t j = i + a->offset;
  return (((const uint8_t *)a->buffers[0])[j >> 3] >> (j & 7)) & 1;
}

static dk_status render(dk_buf *b, const struct ArrowSchema *s, const struct ArrowArray *a,
                        int64_t i, int depth, dk_error *err);

static dk_status render_struct(dk_buf *b, const struct ArrowSchema *s, const struct ArrowArray *a,
                               int64_t i, int depth, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
  bool first = true;
  for (int64_t c = 0; c < s->n_children && c < a->n_children; c++) {
    const struct ArrowSchema *cs = s->children[c];
    const struct ArrowArray *ca = a->children[c];
    const char *nm = cs->name ? cs->name : "";
    if (!strcmp(nm, "stats_parsed") || !strcmp(nm, "partitionValues_parsed")) continue;
    int64_t ci = i + a->offset;
    if (ci >= ca->length) {
      return dk__error_set(err, DK_CORRUPT, "checkpoint: child '%s' shorter than its parent", nm);
    }
    if (!is_valid(ca, ci)) continue;
    if (!first) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
    first = false;
    DK_RETURN_NOT_OK(dk__json_write_str(b, nm, strlen(nm), err));
    DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
    DK_RETURN_NOT_OK(render(b, cs, ca, ci, depth + 1, err));
  }
  return dk__buf_putc(b, '}', err);
}

static dk_status offsets(const struct ArrowArray *a, int64_t i, bool large, int64_t *lo,
                         int64_t *hi, dk_error *err) {
  int64_t j = i + a->offset;
  if (a->n_buffers < 2 || !a->buffers[1])
    return dk__error_set(err, DK_CORRUPT, "checkpoint: array without offsets");
  if (large) {
    const int64_t *o = a->buffers[1];
    *lo = o[j];
    *hi = o[j + 1];
  } else {
    const int32_t *o = a->buffers[1];
    *lo = o[j];
    *hi = o[j + 1];
  }
  if (*lo < 0 || *hi < *lo) return dk__error_set(err, DK_CORRUPT, "checkpoint: bad offsets");
  return DK_OK;
}

static dk_status render(dk_buf *b, const struct ArrowSchema *s, const struct ArrowArray *a,
                        int64_t i, int depth, dk_error *err) {
  if (depth > 32) return dk__error_set(err, DK_CORRUPT, "checkpoint: nesting too deep");
  const char *f = s->format;
  int64_t j = i + a->offset;
  if (!is_valid(a, i)) return dk__buf_puts(b, "null", err);
  switch (f[0]) {
    case '+':
      if (f[1] == 's') return render_struct(b, s, a, i, depth, err);
      if ((f[1] == 'm' || f[1] == 'l' || f[1] == 'L') && s->n_children == 1 && a->n_children == 1) {
        int64_t lo, hi;
        DK_RETURN_NOT_OK(offsets(a, i, f[1] == 'L', &lo, &hi, err));
        const struct ArrowSchema *es = s->children[0];
        const struct ArrowArray *ea = a->children[0];
        if (hi > ea->length)
          return dk__error_set(err, DK_CORRUPT, "checkpoint: list offsets past the child");
        if (f[1] == 'm') {
          if (es->n_children != 2 || ea->n_children != 2)
            return dk__error_set(err, DK_CORRUPT, "checkpoint: malformed map");
          DK_RETURN_NOT_OK(dk__buf_putc(b, '{', err));
          for (int64_t k = lo; k < hi; k++) {
            if (k > lo) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
            const struct ArrowArray *ka = ea->children[0], *va = ea->children[1];
            int64_t kk = k + ea->offset;
            /* keys are strings in every checkpoint map */
            dk_buf kb;
            dk__buf_init(&kb, b->alloc);
            dk_status st = render(&kb, es->children[0], ka, kk, depth + 1, err);
            if (st == DK_OK) {
              if (kb.len && kb.data[0] == '"')
                st = dk__buf_append(b, kb.data, kb.len, err);
              else
                st = dk__json_write_str(b, kb.data ? kb.data : "", kb.len, err);
            }
            dk__buf_dispose(&kb);
            DK_RETURN_NOT_OK(st);
            DK_RETURN_NOT_OK(dk__buf_putc(b, ':', err));
            DK_RETURN_NOT_OK(render(b, es->children[1], va, kk, depth + 1, err));
          }
          return dk__buf_putc(b, '}', err);
        }
        DK_RETURN_NOT_OK(dk__buf_putc(b, '[', err));
        for (int64_t k = lo; k < hi; k++) {
          if (k > lo) DK_RETURN_NOT_OK(dk__buf_putc(b, ',', err));
          DK_RETURN_NOT_OK(render(b, es, ea, k, depth + 1, err));
        }
        return dk__buf_putc(b, ']', err);
      }
      break;
    case 'u':
    case 'U':
    case 'z':
    case 'Z': {
      int64_t lo, hi;
      bool large = f[0] == 'U' || f[0] == 'Z';
      DK_RETURN_NOT_OK(offsets(a, i, large, &lo, &hi, err));
      if (a->n_buffers < 3 || (!a->buffers[2] && hi > lo))
        return dk__error_set(err, DK_CORRUPT, "checkpoint: string array without data");
      const char *d = a->buffers[2];
      return dk__json_write_str(b, d ? d + lo : "", (size_t)(hi - lo), err);
    }
    case 'b': {
      const uint8_t *bits = a->buffers[1];
      return dk__buf_puts(b, ((bits[j >> 3] >> (j & 7)) & 1) ? "true" : "false", err);
    }
    case 'c': return dk__buf_printf(b, err, "%d", (int)((const int8_t *)a->buffers[1])[j]);
    case 's': return dk__buf_printf(b, err, "%d", (int)((const int16_t *)a->buffers[1])[j]);
    case 'i': return dk__buf_printf(b, err, "%" PRId32, ((const int32_t *)a->buffers[1])[j]);
    case 'l': return dk__buf_printf(b, err, "%" PRId64, ((const int64_t *)a->buffers[1])[j]);
    case 't': /* timestamps/dates: their integer value */
      if (f[1] == 'd' && f[2] == 'D')
        return dk__buf_printf(b, err, "%" PRId32, ((const int32_t *)a->buffers[1])[j]);
      return dk__buf_printf(b, err, "%" PRId64, ((const int64_t *)a->buffers[1])[j]);
    case 'f': return dk__json_write_float(b, ((const float *)a->buffers[1])[j], err);
    case 'g': return dk__json_write_double(b, ((const double *)a->buffers[1])[j], err);
    case 'n': return dk__buf_puts(b, "null", err);
    default: break;
  }
  return dk__error_set(err, DK_UNSUPPORTED, "checkpoint: unexpected Arrow format '%s'", f);
}

/* ---- direct add path: Arrow columns -> dk__add, no JSON round trip ------------------- */

typedef struct add_cols {
  const struct ArrowSchema *s;
  const struct ArrowArray *a;
  int path, pv, size, mtime, stats, tags, dv, brid, drcv;
  int dv_type, dv_path, dv_off, dv_size, dv_card;
} add_cols;

static int child_index(const struct ArrowSchema *s, const char *name) {
  for (int64_t i = 0; i < s->n_children; i++)
    if (s->children[i]->name && !strcmp(s->children[i]->name, name)) return (int)i;
  return -1;
}

static bool fmt_is(const struct ArrowSchema *s, const char *f) { return !strcmp(s->format, f); }

static bool get_utf8(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i,
                     dk_str *out) {
  if (!is_valid(a, i)) return false;
  int64_t j = i + a->offset, lo, hi;
  if (s->format[0] == 'u') { /* utf8: 32-bit offsets */
    lo = ((const int32_t *)a->buffers[1])[j];
    hi = ((const int32_t *)a->buffers[1])[j + 1];
  } else if (s->format[0] == 'U') { /* large_utf8: 64-bit offsets */
    lo = ((const int64_t *)a->buffers[1])[j];
    hi = ((const int64_t *)a->buffers[1])[j + 1];
  } else {
    return false;
  }
  if (lo < 0 || hi < lo) return false;
  out->len = (size_t)(hi - lo);
  if (!a->buffers[2]) {
    out->ptr = "";
    return out->len == 0;
  }
  out->ptr = (const char *)a->buffers[2] + lo;
  return true;
}

static bool get_int(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i,
                    int64_t *out) {
  if (!is_valid(a, i)) return false;
  int64_t j = i + a->offset;
  if (fmt_is(s, "l")) *out = ((const int64_t *)a->buffers[1])[j];
  else if (fmt_is(s, "i")) *out = ((const int32_t *)a->buffers[1])[j];
  else return false;
  return true;
}

/* Validates the add struct's layout once per batch; false = use the generic JSON path. */
static bool add_cols_bind(add_cols *c, const struct ArrowSchema *s, const struct ArrowArray *a) {
  memset(c, 0, sizeof *c);
  c->s = s;
  c->a = a;
  if (!fmt_is(s, "+s") || s->n_children != a->n_children) return false;
  c->path = child_index(s, "path");
  c->pv = child_index(s, "partitionValues");
  c->size = child_index(s, "size");
  c->mtime = child_index(s, "modificationTime");
  c->stats = child_index(s, "stats");
  c->tags = child_index(s, "tags");
  c->dv = child_index(s, "deletionVector");
  c->brid = child_index(s, "baseRowId");
  c->drcv = child_index(s, "defaultRowCommitVersion");
  if (c->path < 0 || c->size < 0) return false;
  const char *pf = s->children[c->path]->format;
  if (strcmp(pf, "u") && strcmp(pf, "U")) return false;
  if (c->stats >= 0 && strcmp(s->children[c->stats]->format, "u") &&
      strcmp(s->children[c->stats]->format, "U"))
    return false;
  if (c->pv >= 0) {
    const struct ArrowSchema *m = s->children[c->pv];
    if (!fmt_is(m, "+m") || m->n_children != 1 || m->children[0]->n_children != 2) return false;
    const struct ArrowSchema *k = m->children[0]->children[0], *v = m->children[0]->children[1];
    if ((strcmp(k->format, "u") && strcmp(k->format, "U")) ||
        (strcmp(v->format, "u") && strcmp(v->format, "U")))
      return false;
  }
  if (c->dv >= 0) {
    const struct ArrowSchema *d = s->children[c->dv];
    if (!fmt_is(d, "+s")) return false;
    c->dv_type = child_index(d, "storageType");
    c->dv_path = child_index(d, "pathOrInlineDv");
    c->dv_off = child_index(d, "offset");
    c->dv_size = child_index(d, "sizeInBytes");
    c->dv_card = child_index(d, "cardinality");
    if (c->dv_type < 0 || c->dv_path < 0) return false;
  }
  return true;
}

static dk_status add_row(dk__state *st, const add_cols *c, int64_t i, dk_buf *tags,
                         dk_str **pvbuf, size_t *pvcap, dk_error *err) {
  const struct ArrowSchema *s = c->s;
  const struct ArrowArray *a = c->a;
  int64_t ci = i + a->offset; /* children are indexed through the parent's offset */
  dk__add in;
  memset(&in, 0, sizeof in);
  if (!get_utf8(s->children[c->path], a->children[c->path], ci, &in.path))
    return dk__error_set(err, DK_CORRUPT, "checkpoint add row without a path");
  if (!get_int(s->children[c->size], a->children[c->size], ci, &in.size))
    return dk__error_set(err, DK_CORRUPT, "checkpoint add row without a size");
  if (c->mtime >= 0) get_int(s->children[c->mtime], a->children[c->mtime], ci, &in.mtime);
  if (c->stats >= 0 && !get_utf8(s->children[c->stats], a->children[c->stats], ci, &in.stats))
    in.stats.ptr = NULL;
  if (c->pv >= 0 && is_valid(a->children[c->pv], ci)) {
    const struct ArrowArray *m = a->children[c->pv];
    int64_t lo, hi;
    DK_RETURN_NOT_OK(offsets(m, ci, false, &lo, &hi, err));
    const struct ArrowArray *e = m->children[0];
    const struct ArrowSchema *es = s->children[c->pv]->children[0];
    if (hi > e->length) return dk__error_set(err, DK_CORRUPT, "checkpoint: map offsets past entries");
    /* a damaged file can decode to key or value columns shorter than the entries */
    if (e->n_children < 2 || e->children[0]->length < hi + e->offset ||
        e->children[1]->length < hi + e->offset)
      return dk__error_set(err, DK_CORRUPT, "checkpoint: map keys or values shorter than entries");
    size_t n = (size_t)(hi - lo);
    if (2 * n > *pvcap) {
      size_t nc = 2 * n + 16;
      dk_str *p = dk__realloc(st->alloc, *pvbuf, nc * sizeof *p);
      if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
      *pvbuf = p;
      *pvcap = nc;
    }
    for (int64_t k = lo; k < hi; k++) {
      int64_t kk = k + e->offset;
      dk_str *kv = *pvbuf + 2 * (k - lo);
      if (!get_utf8(es->children[0], e->children[0], kk, &kv[0]))
        return dk__error_set(err, DK_CORRUPT, "checkpoint: null partition key");
      if (!get_utf8(es->children[1], e->children[1], kk, &kv[1])) kv[1].ptr = NULL, kv[1].len = 0;
    }
    in.n_pv = n;
    in.pv = *pvbuf;
  }
  if (c->tags >= 0 && is_valid(a->children[c->tags], ci)) {
    dk__buf_clear(tags);
    DK_RETURN_NOT_OK(render(tags, s->children[c->tags], a->children[c->tags], ci, 0, err));
    in.tags_json.ptr = tags->data;
    in.tags_json.len = tags->len;
  }
  if (c->dv >= 0 && is_valid(a->children[c->dv], ci)) {
    const struct ArrowSchema *ds = s->children[c->dv];
    const struct ArrowArray *da = a->children[c->dv];
    int64_t di = ci + da->offset;
    dk_str t;
    if (!get_utf8(ds->children[c->dv_type], da->children[c->dv_type], di, &t) || t.len != 1 ||
        !get_utf8(ds->children[c->dv_path], da->children[c->dv_path], di, &in.dv_path))
      return dk__error_set(err, DK_CORRUPT, "checkpoint: malformed deletionVector");
    in.has_dv = 1;
    in.dv_type = t.ptr[0];
    int64_t x;
    in.dv_offset = -1;
    if (c->dv_off >= 0 && get_int(ds->children[c->dv_off], da->children[c->dv_off], di, &x) &&
        x >= 0 && x <= INT32_MAX)
      in.dv_offset = (int32_t)x;
    if (c->dv_size >= 0 && get_int(ds->children[c->dv_size], da->children[c->dv_size], di, &x) &&
        x >= 0 && x <= INT32_MAX)
      in.dv_size = (int32_t)x;
    in.dv_card = -1; /* absent: refused (log/actions.c) */
    if (c->dv_card >= 0 && get_int(ds->children[c->dv_card], da->children[c->dv_card], di, &x))
      in.dv_card = x;
  }
  if (c->brid >= 0) in.has_brid = get_int(s->children[c->brid], a->children[c->brid], ci, &in.brid);
  if (c->drcv >= 0) in.has_drcv = get_int(s->children[c->drcv], a->children[c->drcv], ci, &in.drcv);
  return dk_log__apply_add_in(st, &in, err);
}

/* One read of the checkpoint. Pass 1 applies the actions of `cols` (recording in rowmap, when
 * given, where each add row went); pass 2 (stats_pass) reads only add.stats and attaches it to
 * those entries. Splitting the stats off halves what the Parquet reader holds at once. */
static dk_status read_pass(dk__state *st, dk_parquet_file *pf, const char *const *cols,
                           size_t n_cols, int stats_pass, uint32_t *rowmap, int64_t nrows,
                           int64_t row_limit, dk_error *err) {
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof stream);
  dk_parquet_read_options ro;
  memset(&ro, 0, sizeof ro);
  ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
  ro.columns = cols;
  ro.n_columns = n_cols;
  ro.batch_size = 16384;
  dk_status s = dk_parquet_read(&stream, pf, &ro, err);
  if (s != DK_OK) return s;
  dk_buf line, tagbuf;
  dk__buf_init(&line, st->alloc);
  dk__buf_init(&tagbuf, st->alloc);
  dk_str *pvbuf = NULL;
  size_t pvcap = 0;
  dk_arena ar;
  dk__arena_init(&ar, st->alloc, 64 * 1024);
  struct ArrowSchema bs;
  memset(&bs, 0, sizeof bs);
  if (stream.get_schema(&stream, &bs) != 0)
    s = dk__error_set(err, DK_CORRUPT, "cannot get the checkpoint batch schema");
  int64_t row_base = 0;
  while (s == DK_OK && row_base < row_limit) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    int rc = stream.get_next(&stream, &batch);
    if (rc != 0) {
      const char *m = stream.get_last_error ? stream.get_last_error(&stream) : NULL;
      dk_status why = dk__stream_status(&stream, rc);
      s = dk__error_set(err, why == DK_IO || why == DK_NOMEM ? why : DK_CORRUPT,
                        "reading checkpoint rows failed: %s", m ? m : "?");
      break;
    }
    if (!batch.release) break; /* end of stream */
    if (batch.n_children != bs.n_children) {
      s = dk__error_set(err, DK_CORRUPT, "checkpoint batch has %" PRId64 " columns, expected %" PRId64,
                        batch.n_children, bs.n_children);
    }
    if (s == DK_OK && stats_pass) {
      /* one column: add, a struct holding stats */
      const struct ArrowSchema *as = bs.children[0];
      const struct ArrowArray *aa = batch.children[0];
      int si = child_index(as, "stats");
      if (si < 0 || (strcmp(as->children[si]->format, "u") && strcmp(as->children[si]->format, "U")))
        s = dk__error_set(err, DK_CORRUPT, "checkpoint: add.stats is not a string column");
      for (int64_t r = 0; s == DK_OK && r < batch.length; r++) {
        int64_t ri = r + batch.offset, row = row_base + r;
        if (ri >= aa->length) {
          s = dk__error_set(err, DK_CORRUPT, "checkpoint column shorter than its batch");
          break;
        }
        if (!is_valid(aa, ri) || row >= nrows || rowmap[row] == UINT32_MAX) continue;
        dk_str t;
        if (get_utf8(as->children[si], aa->children[si], ri + aa->offset, &t))
          s = dk_log__set_stats(st, rowmap[row], t.ptr, t.len, err);
      }
    } else if (s == DK_OK) {
      /* the add column, when laid out as expected, is applied without a JSON round trip */
      add_cols ac;
      int add_col = -1;
      for (int64_t c = 0; c < batch.n_children; c++)
        if (bs.children[c]->name && !strcmp(bs.children[c]->name, "add") &&
            add_cols_bind(&ac, bs.children[c], batch.children[c]))
          add_col = (int)c;
      for (int64_t r = 0; s == DK_OK && r < batch.length; r++) {
        for (int64_t c = 0; s == DK_OK && c < batch.n_children; c++) {
          const struct ArrowArray *ca = batch.children[c];
          int64_t ri = r + batch.offset;
          if (ri >= ca->length) {
            s = dk__error_set(err, DK_CORRUPT, "checkpoint column shorter than its batch");
            break;
          }
          if (!is_valid(ca, ri)) continue;
          const char *nm = bs.children[c]->name;
          bool is_add = nm && !strcmp(nm, "add");
          if (c == add_col) {
            s = add_row(st, &ac, ri, &tagbuf, &pvbuf, &pvcap, err);
          } else {
            dk__buf_clear(&line);
            s = dk__buf_putc(&line, '{', err);
            if (s == DK_OK) s = dk__json_write_str(&line, nm, strlen(nm), err);
            if (s == DK_OK) s = dk__buf_putc(&line, ':', err);
            if (s == DK_OK) s = render(&line, bs.children[c], ca, ri, 0, err);
            if (s == DK_OK) s = dk__buf_putc(&line, '}', err);
            dk_json_value *v;
            if (s == DK_OK) s = dk__json_parse(&v, &ar, line.data, line.len, err);
            if (s == DK_OK) s = dk_log__apply_action(st, v, DK__FROM_CHECKPOINT, err);
          }
          if (s == DK_OK && is_add && rowmap && row_base + r < nrows)
            rowmap[row_base + r] = (uint32_t)st->last_pos;
          if (s != DK_OK) dk__error_prefix(err, "row %" PRId64, row_base + r);
        }
        if (ar.total > (8u << 20)) {
          dk__arena_dispose(&ar);
          dk__arena_init(&ar, st->alloc, 64 * 1024);
        }
      }
    }
    row_base += batch.length;
    batch.release(&batch);
  }
  if (bs.release) bs.release(&bs);
  if (stream.release) stream.release(&stream);
  dk__arena_dispose(&ar);
  dk__buf_dispose(&line);
  dk__buf_dispose(&tagbuf);
  dk__free(st->alloc, pvbuf);
  return s;
}

/* ---- add.stats kept as stored pages ---------------------------------------------------- */

/* The stats pass without decoding: each add.stats page is kept compressed as a stats block
 * and decoded only when one of its files' stats is asked for. Collecting the pages touches
 * no state (it may run on another thread while the rows are applied); attaching them to the
 * files needs the rowmap of the applied rows. */
typedef struct page_run {
  dk__sblock *b;
  int64_t first_row, n; /* the rows of a data page; n = 0 for a dictionary page */
} page_run;

typedef struct page_ctx {
  const dk_allocator *alloc;
  int64_t nrows;
  const dk__sblock *dict;
  const char *src; /* the checkpoint path (state arena) */
  page_run *runs;
  size_t n_runs, cap_runs, n_adopted;
} page_ctx;

static dk_status on_page(void *ctx, const dk_pq__page *pg, int64_t first_row, dk_error *err) {
  page_ctx *pc = ctx;
  if (!pg->is_dict) {
    if (pg->encoding == PQ_ENC_PLAIN) {
      if (first_row >= pc->nrows) return DK_OK;
    } else if (!pc->dict) {
      return dk__error_set(err, DK_CORRUPT, "add.stats: dictionary-encoded page without a dictionary");
    }
  }
  if (pc->n_runs == pc->cap_runs) {
    size_t nc = pc->cap_runs ? 2 * pc->cap_runs : 64;
    page_run *p = dk__realloc(pc->alloc, pc->runs, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
    pc->runs = p;
    pc->cap_runs = nc;
  }
  const dk__sblock *dict = pg->is_dict || pg->encoding == PQ_ENC_PLAIN ? NULL : pc->dict;
  dk__sblock *b;
  DK_RETURN_NOT_OK(dk_log__page_block_new(&b, pc->alloc, pg, dict, pc->src, err));
  page_run *r = &pc->runs[pc->n_runs++];
  r->b = b;
  r->first_row = first_row;
  r->n = pg->is_dict ? 0 : DK_MIN((int64_t)pg->num_values, pc->nrows - first_row);
  if (pg->is_dict) pc->dict = b;
  return DK_OK;
}

/* Keeps add.stats as pages; DK_UNSUPPORTED when the column's layout needs the ordinary read. */
static dk_status stats_collect(dk_parquet_file *pf, page_ctx *pc, dk_error *err) {
  return dk_pq__walk_pages(pf, "add.stats", on_page, pc, err);
}

/* Hands the collected blocks to st and points each applied add row at its page. */
static dk_status stats_attach(dk__state *st, page_ctx *pc, const uint32_t *rowmap,
                              dk_error *err) {
  dk__sblock *prev = NULL; /* data pages are chained for readers (see dk__sblock.next) */
  for (; pc->n_adopted < pc->n_runs; pc->n_adopted++) {
    const page_run *r = &pc->runs[pc->n_adopted];
    DK_RETURN_NOT_OK(dk_log__adopt_block(st, r->b, err));
    if (r->n > 0) {
      if (prev) prev->next = r->b;
      prev = r->b;
    }
    for (int64_t k = 0; k < r->n; k++) {
      uint32_t pos = rowmap[r->first_row + k];
      if (pos == UINT32_MAX) continue;
      dk__file *f = &st->files[pos];
      f->sblk = r->b;
      f->soff = (uint32_t)k;
      f->slen = 0;
    }
  }
  return DK_OK;
}

static void stats_discard(page_ctx *pc) {
  for (size_t i = pc->n_adopted; i < pc->n_runs; i++) dk_log__page_block_free(pc->runs[i].b, pc->alloc);
  dk__free(pc->alloc, pc->runs);
  pc->runs = NULL;
  pc->n_runs = pc->n_adopted = 0;
}

typedef struct walker {
  dk_parquet_file *pf;
  page_ctx *pc;
  dk_status st;
  dk_error err;
} walker;

static void walker_run(void *arg) {
  walker *w = arg;
  w->st = stats_collect(w->pf, w->pc, &w->err);
}

/* After the direct pass, the other action columns (metaData, protocol, txn, ...) hold a few
 * rows among millions of nulls. One leaf of each tells in which rows its action is present:
 * columns without any are dropped from cols, and *row_limit becomes the row after the last
 * present one, where read_pass may stop. */
static dk_status other_rows(dk_parquet_file *pf, const char **cols, size_t *n_cols,
                           int64_t *row_limit, dk_error *err) {
  int64_t last = -1;
  size_t k = 0;
  for (size_t i = 0; i < *n_cols; i++) {
    dk_pq__leaf *l = NULL;
    dk_error e;
    dk_error_init(&e);
    dk_status s = strchr(cols[i], '.') ? DK_UNSUPPORTED : dk_pq__leaf_open_first(&l, pf, cols[i], &e);
    if (s != DK_OK) { /* keep the column whole */
      dk_pq__leaf_free(l);
      if (s == DK_NOMEM) return dk__error_set(err, DK_NOMEM, "out of memory");
      cols[k++] = cols[i];
      last = INT64_MAX - 1;
      continue;
    }
    uint32_t present = (uint32_t)dk_pq__leaf_def_at(l, 0);
    int64_t row = 0, col_last = -1, got;
    dk_pq__leaf_data d;
    while ((s = dk_pq__leaf_read(l, 1 << 16, &d, &got, err)) == DK_OK && got > 0) {
      if (!d.def) { /* every level at the maximum: present in each row */
        col_last = row + got - 1;
      } else if (!d.rep) {
        for (int64_t r = got - 1; r >= 0; r--)
          if (d.def[r] >= present) {
            col_last = row + r;
            break;
          }
      } else { /* repeated leaf: rows start where rep == 0 */
        int64_t r = -1;
        for (int64_t j = 0; j < d.n_levels; j++) {
          r += d.rep[j] == 0;
          if (d.def[j] >= present) col_last = row + r;
        }
      }
      row += got;
    }
    dk_pq__leaf_free(l);
    if (s != DK_OK) return s;
    if (col_last >= 0) {
      cols[k++] = cols[i];
      if (col_last > last) last = col_last;
    }
  }
  *n_cols = k;
  *row_limit = last + 1;
  return DK_OK;
}

dk_status dk_log__apply_parquet_checkpoint(dk__state *st, dk_storage *sto, const char *path,
                                           int64_t size, dk_buf *sidecars, dk_error *err) {
  (void)sidecars;
  dk_parquet_file *pf = NULL;
  dk_pq__open_opts oo = {.alloc = st->alloc, .size = size};
  dk_status s = dk_pq__open_storage(&pf, sto, path, &oo, err);
  if (s != DK_OK) {
    dk__error_prefix(err, "checkpoint"); /* the message names the file */
    return s;
  }
  struct ArrowSchema fs;
  memset(&fs, 0, sizeof fs);
  s = dk_parquet_schema(&fs, pf, err);
  /* column names: action columns; with add.stats present, add's other children by dotted
   * path in pass 1 and add.stats alone in pass 2 */
  const char *cols[DK_ARRAY_LEN(action_columns) + 64 + 8]; /* + remove.* */
  char names[64][80];
  size_t n_cols = 0;
  bool two_pass = false;
  if (s == DK_OK) {
    for (size_t k = 0; k < DK_ARRAY_LEN(action_columns); k++)
      for (int64_t c = 0; c < fs.n_children; c++) {
        const struct ArrowSchema *col = fs.children[c];
        if (!col->name || strcmp(col->name, action_columns[k])) continue;
        bool split = false;
        if (!strcmp(col->name, "add") && !strcmp(col->format, "+s") && col->n_children <= 64 &&
            child_index(col, "stats") >= 0) {
          size_t before = n_cols;
          split = true;
          for (int64_t i = 0; i < col->n_children; i++) {
            const char *cn = col->children[i]->name ? col->children[i]->name : "";
            if (!strcmp(cn, "stats") || !strcmp(cn, "stats_parsed") ||
                !strcmp(cn, "partitionValues_parsed") || !strcmp(cn, "dataChange"))
              continue; /* add.dataChange does not matter to a snapshot */
            if (strlen(cn) + 5 > sizeof names[0] || strchr(cn, '.')) {
              split = false;
              break;
            }
            snprintf(names[n_cols - before], sizeof names[0], "add.%s", cn);
            cols[n_cols] = names[n_cols - before];
            n_cols++;
          }
          if (!split) n_cols = before;
          two_pass = split;
        }
        if (!split && !strcmp(col->name, "remove") && !strcmp(col->format, "+s") &&
            child_index(col, "path") >= 0) {
          /* a tombstone keeps only these (partitionValues, tags, extendedFileMetadata and
           * row tracking fields of remove rows are not read) */
          static const char *const rm_keep[] = {"remove.path", "remove.deletionTimestamp",
                                                "remove.dataChange", "remove.size",
                                                "remove.deletionVector"};
          for (size_t i = 0; i < DK_ARRAY_LEN(rm_keep); i++)
            if (child_index(col, rm_keep[i] + 7) >= 0) cols[n_cols++] = rm_keep[i];
          split = true;
        }
        if (!split) cols[n_cols++] = action_columns[k];
        break;
      }
    if (fs.release) fs.release(&fs);
  }
  int64_t nrows = dk_parquet_num_rows(pf);
  uint32_t *rowmap = NULL;
  if (s == DK_OK && two_pass) {
    if (nrows < 0 || (uint64_t)nrows > UINT32_MAX) {
      two_pass = false; /* keep the single pass (and its stats) */
    } else {
      rowmap = dk__malloc(st->alloc, (size_t)(nrows ? nrows : 1) * sizeof *rowmap);
      if (!rowmap) s = dk__error_set(err, DK_NOMEM, "out of memory");
      else memset(rowmap, 0xff, (size_t)(nrows ? nrows : 1) * sizeof *rowmap);
    }
    if (!two_pass) {
      /* fall back: read "add" whole */
      size_t k = 0;
      for (size_t i = 0; i < n_cols; i++)
        if (strncmp(cols[i], "add.", 4)) cols[k++] = cols[i];
      cols[k++] = "add";
      n_cols = k;
    }
  }
  page_ctx pc;
  memset(&pc, 0, sizeof pc);
  pc.alloc = st->alloc;
  pc.nrows = nrows;
  walker w;
  memset(&w, 0, sizeof w);
  w.pf = pf;
  w.pc = &pc;
  dk_error_init(&w.err);
  bool walked = false, direct_done = false;
  if (s == DK_OK && two_pass) {
    pc.src = dk__arena_strndup(&st->arena, path, strlen(path), err);
    if (!pc.src) s = DK_NOMEM;
  }
  if (s == DK_OK && two_pass) {
    /* add and remove straight from their leaves (the decoding thread then collects the stats
     * pages), the other action columns through Arrow */
    bool with_remove = false;
    size_t k = 0;
    for (size_t i = 0; i < n_cols; i++)
      if (!strncmp(cols[i], "remove", 6)) with_remove = true;
    dk__direct *d;
    dk_status ds = dk_log__direct_open(&d, pf, st->alloc, with_remove, err);
    if (ds == DK_OK) {
      for (size_t i = 0; i < n_cols; i++)
        if (strncmp(cols[i], "add.", 4) && strncmp(cols[i], "remove", 6)) cols[k++] = cols[i];
      n_cols = k;
      s = dk_log__direct_pass(st, d, rowmap, nrows, walker_run, &w, &walked, err);
      dk_log__direct_free(d);
      direct_done = true;
    } else if (ds != DK_UNSUPPORTED) {
      s = ds;
    }
  }
  int64_t row_limit = INT64_MAX;
  if (s == DK_OK && direct_done) s = other_rows(pf, cols, &n_cols, &row_limit, err);
  if (s == DK_OK && n_cols) s = read_pass(st, pf, cols, n_cols, 0, rowmap, nrows, row_limit, err);
  if (two_pass && pc.src) {
    dk_status ps;
    dk_error pe;
    dk_error_init(&pe);
    if (walked) {
      ps = w.st;
      pe = w.err;
    } else {
      ps = s == DK_OK ? stats_collect(pf, &pc, &pe) : DK_OK;
    }
    if (s == DK_OK) {
      if (ps == DK_OK) {
        s = stats_attach(st, &pc, rowmap, err);
      } else if (ps == DK_UNSUPPORTED) {
        const char *stats_col[1] = {"add.stats"};
        s = read_pass(st, pf, stats_col, 1, 1, rowmap, nrows, INT64_MAX, err);
      } else {
        s = ps;
        if (err) *err = pe;
      }
    }
    stats_discard(&pc);
  }
  dk__free(st->alloc, rowmap);
  dk_parquet_file_free(pf);
  if (s != DK_OK) dk__error_prefix(err, "checkpoint %s", path);
  return s;
}
