/*
** checkpoint_parquet.c — reading Parquet checkpoints (classic, multi-part parts, V2 top-level
** files and V2 sidecars) through dk's Parquet reader (include/dk/parquet.h).
**
** Follows PROTOCOL.md "Checkpoints" / "Checkpoint Schema" and "V2 Checkpoint": each row has
** one non-null action column (add, remove, metaData, protocol, txn, domainMetadata, sidecar,
** checkpointMetadata). Rows are rendered as the equivalent JSON action and applied through
** the same reconciliation code as commit files, so both paths share one set of rules.
** The Arrow walk handles struct children, utf8/binary offsets, map = list<struct<key,value>>,
** lists, integers, booleans and validity bitmaps; stats_parsed/partitionValues_parsed are
** skipped (the text stats are kept).
*/
#include <inttypes.h>
#include <stdio.h>

#include "dk/parquet.h"
#include "log/log.h"

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
  DK_RETURN_NOT_OK(dk_buf_putc(b, '{', err));
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
    if (!first) DK_RETURN_NOT_OK(dk_buf_putc(b, ',', err));
    first = false;
    DK_RETURN_NOT_OK(dk_json_write_str(b, nm, strlen(nm), err));
    DK_RETURN_NOT_OK(dk_buf_putc(b, ':', err));
    DK_RETURN_NOT_OK(render(b, cs, ca, ci, depth + 1, err));
  }
  return dk_buf_putc(b, '}', err);
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
  if (!is_valid(a, i)) return dk_buf_puts(b, "null", err);
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
          DK_RETURN_NOT_OK(dk_buf_putc(b, '{', err));
          for (int64_t k = lo; k < hi; k++) {
            if (k > lo) DK_RETURN_NOT_OK(dk_buf_putc(b, ',', err));
            const struct ArrowArray *ka = ea->children[0], *va = ea->children[1];
            int64_t kk = k + ea->offset;
            /* keys are strings in every checkpoint map */
            dk_buf kb;
            dk_buf_init(&kb, b->alloc);
            dk_status st = render(&kb, es->children[0], ka, kk, depth + 1, err);
            if (st == DK_OK) {
              if (kb.len && kb.data[0] == '"')
                st = dk_buf_append(b, kb.data, kb.len, err);
              else
                st = dk_json_write_str(b, kb.data ? kb.data : "", kb.len, err);
            }
            dk_buf_dispose(&kb);
            DK_RETURN_NOT_OK(st);
            DK_RETURN_NOT_OK(dk_buf_putc(b, ':', err));
            DK_RETURN_NOT_OK(render(b, es->children[1], va, kk, depth + 1, err));
          }
          return dk_buf_putc(b, '}', err);
        }
        DK_RETURN_NOT_OK(dk_buf_putc(b, '[', err));
        for (int64_t k = lo; k < hi; k++) {
          if (k > lo) DK_RETURN_NOT_OK(dk_buf_putc(b, ',', err));
          DK_RETURN_NOT_OK(render(b, es, ea, k, depth + 1, err));
        }
        return dk_buf_putc(b, ']', err);
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
      return dk_json_write_str(b, d ? d + lo : "", (size_t)(hi - lo), err);
    }
    case 'b': {
      const uint8_t *bits = a->buffers[1];
      return dk_buf_puts(b, ((bits[j >> 3] >> (j & 7)) & 1) ? "true" : "false", err);
    }
    case 'c': return dk_buf_printf(b, err, "%d", (int)((const int8_t *)a->buffers[1])[j]);
    case 's': return dk_buf_printf(b, err, "%d", (int)((const int16_t *)a->buffers[1])[j]);
    case 'i': return dk_buf_printf(b, err, "%" PRId32, ((const int32_t *)a->buffers[1])[j]);
    case 'l': return dk_buf_printf(b, err, "%" PRId64, ((const int64_t *)a->buffers[1])[j]);
    case 't': /* timestamps/dates: their integer value */
      if (f[1] == 'd' && f[2] == 'D')
        return dk_buf_printf(b, err, "%" PRId32, ((const int32_t *)a->buffers[1])[j]);
      return dk_buf_printf(b, err, "%" PRId64, ((const int64_t *)a->buffers[1])[j]);
    case 'f': return dk_json_write_float(b, ((const float *)a->buffers[1])[j], err);
    case 'g': return dk_json_write_double(b, ((const double *)a->buffers[1])[j], err);
    case 'n': return dk_buf_puts(b, "null", err);
    default: break;
  }
  return dk__error_set(err, DK_UNSUPPORTED, "checkpoint: unexpected Arrow format '%s'", f);
}

dk_status dk_log__apply_parquet_checkpoint(dk__state *st, const char *path, dk_buf *sidecars,
                                           dk_error *err) {
  (void)sidecars;
  dk_parquet_file *pf = NULL;
  dk_parquet_open_options oo = {DK_PARQUET_OPEN_OPTIONS_VERSION, 0, st->alloc, 0};
  dk_status s = dk_parquet_open(&pf, path, &oo, err);
  if (s != DK_OK) {
    dk__error_prefix(err, "checkpoint %s", path);
    return s;
  }
  struct ArrowSchema fs;
  memset(&fs, 0, sizeof fs);
  s = dk_parquet_schema(&fs, pf, err);
  const char *cols[DK_ARRAY_LEN(action_columns)];
  size_t n_cols = 0;
  if (s == DK_OK) {
    for (size_t k = 0; k < DK_ARRAY_LEN(action_columns); k++)
      for (int64_t c = 0; c < fs.n_children; c++)
        if (fs.children[c]->name && !strcmp(fs.children[c]->name, action_columns[k])) {
          cols[n_cols++] = action_columns[k];
          break;
        }
    if (fs.release) fs.release(&fs);
  }
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof stream);
  if (s == DK_OK && n_cols) {
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.columns = cols;
    ro.n_columns = n_cols;
    s = dk_parquet_read(&stream, pf, &ro, err);
  }
  dk_buf line;
  dk_buf_init(&line, st->alloc);
  dk_arena ar;
  dk_arena_init(&ar, st->alloc, 64 * 1024);
  struct ArrowSchema bs;
  memset(&bs, 0, sizeof bs);
  if (s == DK_OK && n_cols) {
    if (stream.get_schema(&stream, &bs) != 0)
      s = dk__error_set(err, DK_CORRUPT, "cannot get the checkpoint batch schema");
    int64_t row_base = 0;
    while (s == DK_OK) {
      struct ArrowArray batch;
      memset(&batch, 0, sizeof batch);
      if (stream.get_next(&stream, &batch) != 0) {
        const char *m = stream.get_last_error ? stream.get_last_error(&stream) : NULL;
        s = dk__error_set(err, DK_CORRUPT, "reading checkpoint rows failed: %s", m ? m : "?");
        break;
      }
      if (!batch.release) break; /* end of stream */
      if (batch.n_children != bs.n_children) {
        s = dk__error_set(err, DK_CORRUPT, "checkpoint batch has %" PRId64 " columns, expected %" PRId64,
                          batch.n_children, bs.n_children);
      }
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
          dk_buf_clear(&line);
          s = dk_buf_putc(&line, '{', err);
          if (s == DK_OK) s = dk_json_write_str(&line, nm, strlen(nm), err);
          if (s == DK_OK) s = dk_buf_putc(&line, ':', err);
          if (s == DK_OK) s = render(&line, bs.children[c], ca, ri, 0, err);
          if (s == DK_OK) s = dk_buf_putc(&line, '}', err);
          dk_json_value *v;
          if (s == DK_OK) s = dk_json_parse(&v, &ar, line.data, line.len, err);
          if (s == DK_OK) s = dk_log__apply_action(st, v, DK__FROM_CHECKPOINT, err);
          if (s != DK_OK) dk__error_prefix(err, "row %" PRId64, row_base + r);
        }
        if (ar.total > (8u << 20)) {
          dk_arena_dispose(&ar);
          dk_arena_init(&ar, st->alloc, 64 * 1024);
        }
      }
      row_base += batch.length;
      batch.release(&batch);
    }
  }
  if (bs.release) bs.release(&bs);
  if (stream.release) stream.release(&stream);
  dk_arena_dispose(&ar);
  dk_buf_dispose(&line);
  dk_parquet_file_free(pf);
  if (s != DK_OK) dk__error_prefix(err, "checkpoint %s", path);
  return s;
}
