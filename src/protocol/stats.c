/*
** stats.c — a data file's Delta statistics (`add.stats`, PROTOCOL.md "Per-file Statistics")
** computed the way delta-spark's StatisticsCollection does, from the per-field statistics a
** Parquet writer keeps (dk_parquet_writer_field_stats): the codec knows nothing of Delta.
**
**  - columns: delta.dataSkippingStatsColumns (case-insensitive dotted names, schema order; a
**    struct name takes the whole struct) else the first delta.dataSkippingNumIndexedCols leaf
**    columns depth-first (default 32, -1 all; lists, maps and variants count as one leaf);
**  - numRecords; nullCount for every selected column (rows where it or an enclosing struct is
**    null); minValues/maxValues only for numbers, decimals, dates, timestamps and strings;
**  - Spark's to_json drops nulls: an all-null column has no min/max entry, a struct whose
**    eligible fields are all null is {}, and a struct without eligible fields is left out;
**  - doubles: NaN is the largest value (max NaN when present; min NaN only when all are NaN),
**    written as the string "NaN" as Jackson does; floats print as float32;
**  - strings: the min is cut to the first 32 code points; a longer max is cut to 32 UTF-16
**    units and followed by U+007F or U+10FFFF, extended up to 64 units, else left out
**    (truncateMaxStringAgg);
**  - timestamps: "yyyy-MM-dd'T'HH:mm:ss.SSS" + "Z" (UTC; no zone for timestamp_ntz), the min
**    cut to milliseconds, the max cut too (delta-spark) or rounded up (timestamp_max_ceil).
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "codec/parquet/write/writer.h"
#include "protocol/values.h"
#include "util/util.h"

typedef struct sfield {
  dk_parquet_field_stats st;
  int selected;          /* in the stats schema */
  int is_struct;         /* a plain struct (recursed into) */
  int eligible;          /* min/max type */
} sfield;

typedef struct sctx {
  sfield *f;
  int n;
  const dk_delta_stats_options *o;
  int prefix;
  int64_t num_records;
  dk_buf *b;
  dk_error *err;
} sctx;

static int is_eligible(const char *fmt) {
  static const char *ok[] = {"c", "s", "i", "l", "f", "g", "tdD", "u", "U", "vu"};
  for (size_t i = 0; i < DK_ARRAY_LEN(ok); i++)
    if (!strcmp(fmt, ok[i])) return 1;
  return (fmt[0] == 'd' && fmt[1] == ':') || (fmt[0] == 't' && fmt[1] == 's');
}

/* ---- column selection -------------------------------------------------------------------- */

/* Selects the first `left` leaves under parent (depth-first); returns leaves taken. */
static int take_leaves(sctx *c, int parent, int left) {
  int taken = 0;
  for (int i = 0; i < c->n && taken < left; i++) {
    if (c->f[i].st.parent != parent) continue;
    c->f[i].selected = 1;
    if (c->f[i].is_struct) taken += take_leaves(c, i, left - taken);
    else taken++;
  }
  return taken;
}

static void select_all(sctx *c, int parent) {
  for (int i = 0; i < c->n; i++)
    if (c->f[i].st.parent == parent) {
      c->f[i].selected = 1;
      if (c->f[i].is_struct) select_all(c, i);
    }
}

static int name_eq(const char *a, const char *b, size_t bn) {
  size_t an = strlen(a);
  if (an != bn) return 0;
  for (size_t i = 0; i < an; i++)
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
  return 1;
}

/* Marks the column at dotted path p[0..n) (backticks quote a part) and its ancestors. */
static dk_status select_path(sctx *c, const char *p, size_t n) {
  int parent = -1;
  size_t i = 0;
  while (i < n) {
    char part[512];
    size_t k = 0;
    if (p[i] == '`') {
      i++;
      while (i < n && k < sizeof part - 1) {
        if (p[i] == '`') {
          if (i + 1 < n && p[i + 1] == '`') {
            part[k++] = '`';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        part[k++] = p[i++];
      }
    } else {
      while (i < n && p[i] != '.' && k < sizeof part - 1) part[k++] = p[i++];
    }
    part[k] = 0;
    if (i < n && p[i] == '.') i++;
    int found = -1;
    for (int j = 0; j < c->n; j++)
      if (c->f[j].st.parent == parent && name_eq(c->f[j].st.name, part, k)) {
        found = j;
        break;
      }
    if (found < 0) return DK_OK; /* Spark ignores names the file does not have */
    if (i < n && !c->f[found].is_struct) return DK_OK;
    c->f[found].selected = 1;
    parent = found;
  }
  if (parent >= 0 && c->f[parent].is_struct) select_all(c, parent);
  return DK_OK;
}

static dk_status select_columns(sctx *c) {
  const dk_delta_stats_options *o = c->o;
  if (o->stats_columns) {
    const char *s = o->stats_columns;
    while (*s) {
      while (*s == ' ' || *s == ',') s++;
      const char *e = s;
      int q = 0;
      while (*e && (q || *e != ',')) {
        if (*e == '`') q = !q;
        e++;
      }
      size_t n = (size_t)(e - s);
      while (n && s[n - 1] == ' ') n--;
      if (n) DK_RETURN_NOT_OK(select_path(c, s, n));
      s = e;
    }
    return DK_OK;
  }
  long num = 32;
  if (o->num_indexed_cols) {
    char *end;
    num = strtol(o->num_indexed_cols, &end, 10);
    if (*end || end == o->num_indexed_cols || num < -1)
      return dk__error_set(c->err, DK_INVALID,
                           "delta.dataSkippingNumIndexedCols must be an integer >= -1, not '%s'",
                           o->num_indexed_cols);
  }
  if (num < 0) select_all(c, -1);
  else take_leaves(c, -1, (int)DK_MIN(num, (long)INT32_MAX));
  return DK_OK;
}

/* ---- value formatting -------------------------------------------------------------------- */

static int64_t ld64(const void *p, size_t n) {
  if (n == 4) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static dk_status put_timestamp(sctx *c, int64_t us, int is_max, int utc) {
  int64_t ms = us / 1000;
  if (us % 1000 < 0) ms--;
  if (is_max && c->o->timestamp_max_ceil && ms * 1000 != us) ms++;
  int64_t secs = ms / 1000, frac = ms % 1000;
  if (frac < 0) frac += 1000, secs--;
  int64_t days = secs / 86400, sod = secs % 86400;
  if (sod < 0) sod += 86400, days--;
  char date[48];
  dk__format_date(date, sizeof date, days);
  return dk__buf_printf(c->b, c->err, "\"%sT%02d:%02d:%02d.%03d%s\"", date, (int)(sod / 3600),
                        (int)(sod / 60 % 60), (int)(sod % 60), (int)frac, utc ? "Z" : "");
}

/* UTF-8 decoding of valid input (the writer's strings are what the caller gave: invalid
** sequences are taken byte by byte). */
static size_t cp_at(const uint8_t *p, size_t n, uint32_t *cp) {
  uint8_t c0 = p[0];
  size_t l = c0 < 0x80 ? 1 : (c0 >> 5) == 6 ? 2 : (c0 >> 4) == 14 ? 3 : (c0 >> 3) == 30 ? 4 : 1;
  if (l > n) l = 1;
  uint32_t v = l == 1 ? c0 : l == 2 ? (c0 & 0x1fu) : l == 3 ? (c0 & 0x0fu) : (c0 & 0x07u);
  for (size_t i = 1; i < l; i++) v = (v << 6) | (p[i] & 0x3fu);
  *cp = v;
  return l;
}

static dk_status put_str(sctx *c, const uint8_t *p, size_t n, int is_max, int *omitted) {
  size_t prefix = (size_t)c->prefix;
  if (!is_max) { /* substring(min, 0, prefix): the first `prefix` code points */
    size_t i = 0, k = 0;
    while (i < n && k < prefix) {
      uint32_t cp;
      i += cp_at(p + i, n - i, &cp);
      k++;
    }
    return dk__json_write_str(c->b, (const char *)p, i, c->err);
  }
  /* truncateMaxStringAgg over UTF-16 units: u16 offsets of each code point */
  size_t units = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += cp_at(p + i, n - i, &cp);
    units += cp >= 0x10000 ? 2 : 1;
  }
  if (units <= prefix) return dk__json_write_str(c->b, (const char *)p, n, c->err);
  size_t max_len = 2 * prefix;
  /* walk to `prefix` units, never splitting a surrogate pair */
  size_t i = 0, u = 0;
  while (i < n && u < prefix) {
    uint32_t cp;
    size_t l = cp_at(p + i, n - i, &cp);
    size_t w = cp >= 0x10000 ? 2 : 1;
    if (u + w > prefix && w == 2) {
      /* the pair straddles the cut: truncateMin keeps it whole */
      i += l, u += w;
      break;
    }
    i += l, u += w;
  }
  while (u <= max_len) {
    if (i >= n) return dk__json_write_str(c->b, (const char *)p, n, c->err);
    uint32_t cp;
    size_t l = cp_at(p + i, n - i, &cp);
    if (cp == 0x10ffff) {
      i += l, u += 2;
      continue;
    }
    /* charAt(currLen) < U+007F: the UTF-16 unit there (a high surrogate for cp >= 0x10000) */
    const char *tail = cp < 0x7f ? "\x7f" : "\xf4\x8f\xbf\xbf";
    size_t tl = strlen(tail);
    char *tmp = dk__malloc(NULL, i + tl);
    if (!tmp) return dk__error_set(c->err, DK_NOMEM, "out of memory");
    memcpy(tmp, p, i);
    memcpy(tmp + i, tail, tl);
    dk_status st = dk__json_write_str(c->b, tmp, i + tl, c->err);
    dk__free(NULL, tmp);
    return st;
  }
  *omitted = 1;
  return DK_OK;
}

/* Writes the min (is_max 0) or max of field f as a JSON value; *omitted when Spark's value
** would be null. */
static dk_status put_bound(sctx *c, const sfield *f, int is_max, int *omitted) {
  const dk_parquet_field_stats *s = &f->st;
  const char *fmt = s->format;
  *omitted = 0;
  int is_float = !strcmp(fmt, "f"), is_double = !strcmp(fmt, "g");
  if (is_float || is_double) {
    int all_nan = !s->has_min_max && s->nan_count > 0;
    if (all_nan || (is_max && s->nan_count > 0))
      return dk__buf_puts(c->b, "\"NaN\"", c->err);
  }
  if (!s->has_min_max) {
    *omitted = 1;
    return DK_OK;
  }
  const void *p = is_max ? s->max : s->min;
  size_t n = is_max ? s->max_len : s->min_len;
  if (is_float) {
    float v;
    memcpy(&v, p, 4);
    return dk__json_write_float(c->b, v, c->err);
  }
  if (is_double) {
    double v;
    memcpy(&v, p, 8);
    return dk__json_write_double(c->b, v, c->err);
  }
  if (!strcmp(fmt, "tdD")) {
    char d[48];
    dk__format_date(d, sizeof d, ld64(p, 4));
    return dk__buf_printf(c->b, c->err, "\"%s\"", d);
  }
  if (fmt[0] == 't' && fmt[1] == 's') return put_timestamp(c, ld64(p, 8), is_max, fmt[4] != 0);
  if (fmt[0] == 'd') {
    dk_i128 v;
    if (s->physical_type == 7) { /* FLBA big-endian */
      const uint8_t *q = p;
      v = (q[0] & 0x80) ? -1 : 0;
      for (size_t i = 0; i < n; i++) v = (dk_i128)(((unsigned __int128)v << 8) | q[i]);
    } else {
      v = ld64(p, n);
    }
    char buf[96];
    dk__format_decimal(buf, sizeof buf, v, s->scale);
    return dk__buf_puts(c->b, buf, c->err);
  }
  if (fmt[0] == 'u' || fmt[0] == 'U' || fmt[0] == 'v') return put_str(c, p, n, is_max, omitted);
  return dk__buf_printf(c->b, c->err, "%lld", (long long)ld64(p, n));
}

/* ---- the JSON ---------------------------------------------------------------------------- */

static dk_status put_key(sctx *c, int *first, const char *name) {
  if (!*first) DK_RETURN_NOT_OK(dk__buf_putc(c->b, ',', c->err));
  *first = 0;
  DK_RETURN_NOT_OK(dk__json_write_str(c->b, name, strlen(name), c->err));
  return dk__buf_putc(c->b, ':', c->err);
}

/* Does the struct at `parent` (or the root, -1) have a selected min/max-eligible column? */
static int has_eligible(const sctx *c, int parent) {
  for (int i = 0; i < c->n; i++) {
    if (c->f[i].st.parent != parent || !c->f[i].selected) continue;
    if (c->f[i].is_struct ? has_eligible(c, i) : c->f[i].eligible) return 1;
  }
  return 0;
}

/* kind 0 min, 1 max, 2 nullCount: the object of the struct at `parent`. */
static dk_status put_object(sctx *c, int parent, int kind) {
  DK_RETURN_NOT_OK(dk__buf_putc(c->b, '{', c->err));
  int first = 1;
  for (int i = 0; i < c->n; i++) {
    const sfield *f = &c->f[i];
    if (f->st.parent != parent || !f->selected) continue;
    if (f->is_struct) {
      if (kind < 2 && !has_eligible(c, i)) continue;
      DK_RETURN_NOT_OK(put_key(c, &first, f->st.name));
      DK_RETURN_NOT_OK(put_object(c, i, kind));
      continue;
    }
    if (kind == 2) {
      DK_RETURN_NOT_OK(put_key(c, &first, f->st.name));
      DK_RETURN_NOT_OK(dk__buf_printf(c->b, c->err, "%lld", (long long)f->st.null_rows));
      continue;
    }
    if (!f->eligible) continue;
    /* write into a scratch position; drop the key when the value is null */
    size_t mark = c->b->len;
    int was_first = first;
    DK_RETURN_NOT_OK(put_key(c, &first, f->st.name));
    int omitted = 0;
    DK_RETURN_NOT_OK(put_bound(c, f, kind, &omitted));
    if (omitted) {
      c->b->len = mark;
      c->b->data[mark] = 0;
      first = was_first;
    }
  }
  return dk__buf_putc(c->b, '}', c->err);
}

dk_status dk_parquet_writer_delta_stats(char **out, const dk_parquet_writer *w,
                                        const dk_delta_stats_options *opts, dk_error *err) {
  DK_RETURN_IF(!out || !w, DK_INVALID, err, "delta stats: no output or writer");
  *out = NULL;
  DK_RETURN_IF(!dk_pqw__writer_closed(w), DK_INVALID, err,
               "delta stats: the Parquet writer is not closed");
  dk_delta_stats_options def;
  memset(&def, 0, sizeof def);
  def.version = DK_DELTA_STATS_OPTIONS_VERSION;
  if (!opts) opts = &def;
  DK_RETURN_IF(opts->version < 1 || opts->version > DK_DELTA_STATS_OPTIONS_VERSION, DK_INVALID,
               err, "delta stats: options version %u is not supported", opts->version);
  DK_RETURN_IF(opts->string_prefix_length < 0, DK_INVALID, err,
               "delta stats: negative string prefix length");
  int n = dk_parquet_writer_num_fields(w);
  sfield *f = dk__calloc(NULL, (size_t)n + 1, sizeof *f);
  if (!f) return dk__error_set(err, DK_NOMEM, "out of memory");
  dk_buf b;
  dk__buf_init(&b, NULL);
  sctx c = {f, n, opts, opts->string_prefix_length ? opts->string_prefix_length : 32,
            dk_pqw__writer_num_rows(w), &b, err};
  dk_status st = DK_OK;
  for (int i = 0; i < n; i++) {
    DK_CHECK_GOTO(dk_parquet_writer_field_stats(&f[i].st, w, i, err));
    f[i].is_struct = !strcmp(f[i].st.format, "+s") && !f[i].st.is_variant;
    f[i].eligible = !f[i].is_struct && is_eligible(f[i].st.format);
  }
  /* only the Delta-visible columns: nothing below a list, map or variant */
  for (int i = 0; i < n; i++) {
    int p = f[i].st.parent;
    if (p >= 0 && (!f[p].is_struct || f[p].st.in_list)) f[i].st.parent = -2;
    if (f[i].st.in_list) f[i].st.parent = -2;
  }
  DK_CHECK_GOTO(select_columns(&c));
  DK_CHECK_GOTO(dk__buf_printf(&b, err, "{\"numRecords\":%lld", (long long)c.num_records));
  int any = 0;
  for (int i = 0; i < n; i++) any |= f[i].selected && f[i].st.parent == -1;
  if (any && has_eligible(&c, -1)) {
    DK_CHECK_GOTO(dk__buf_puts(&b, ",\"minValues\":", err));
    DK_CHECK_GOTO(put_object(&c, -1, 0));
    DK_CHECK_GOTO(dk__buf_puts(&b, ",\"maxValues\":", err));
    DK_CHECK_GOTO(put_object(&c, -1, 1));
  }
  if (any) {
    DK_CHECK_GOTO(dk__buf_puts(&b, ",\"nullCount\":", err));
    DK_CHECK_GOTO(put_object(&c, -1, 2));
  }
  if (opts->tight_bounds) DK_CHECK_GOTO(dk__buf_puts(&b, ",\"tightBounds\":true", err));
  DK_CHECK_GOTO(dk__buf_putc(&b, '}', err));
  *out = dk__buf_detach(&b);
cleanup:
  dk__buf_dispose(&b);
  dk__free(NULL, f);
  return st;
}
