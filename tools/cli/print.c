/*
** print.c — the CLI's row printer (print.h): JSON lines, CSV and aligned tables over the
** public dk_arrow_json encoder, one encoder per top-level column. Reads only what the Arrow C
** Data Interface makes public (formats, validity bitmaps, string offsets and bytes).
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dk/arrow_json.h"
#include "print.h"

#define TRY(x)                  \
  do {                          \
    dk_status try_ = (x);       \
    if (try_ != DK_OK) return try_; \
  } while (0)

static dk_status fail(dk_error *err, dk_status code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* A growable byte buffer (TABLE cells and their end offsets). */
typedef struct cbuf {
  char *p;
  size_t len, cap;
} cbuf;

static dk_status cbuf_put(cbuf *b, const void *s, size_t n, dk_error *err) {
  if (n > b->cap - b->len) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return fail(err, DK_NOMEM, "out of memory (printer)");
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  return DK_OK;
}

/* How a top-level column shows as a CSV/TABLE cell. */
enum { CELL_JSON = 0, CELL_STRING, CELL_UNQUOTE };

struct cli_printer {
  const struct ArrowSchema *schema;
  int format, header;
  FILE *out;
  int64_t nc;
  dk_arrow_json **enc; /* per column */
  int *cell;           /* CELL_* per column */
  size_t *widths;      /* TABLE column widths */
  cbuf cells;          /* TABLE: rendered cells of held rows */
  cbuf ends;           /* TABLE: size_t end offset of each held cell in cells */
  int64_t rows;        /* TABLE rows held */
};

static int cell_kind(const char *f) {
  if (!strcmp(f, "u")) return CELL_STRING;
  if (!strcmp(f, "z") || !strncmp(f, "w:", 2) || !strncmp(f, "d:", 2) || !strcmp(f, "tdD") ||
      !strncmp(f, "tt", 2) || !strncmp(f, "ts", 2))
    return CELL_UNQUOTE; /* JSON strings without escapes: base64, digits, ISO dates */
  return CELL_JSON;
}

static size_t utf8_width(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xc0) != 0x80;
  return w;
}

static int is_valid(const struct ArrowArray *a, int64_t i) {
  const uint8_t *v = a->n_buffers > 0 ? a->buffers[0] : NULL;
  int64_t j = a->offset + i;
  return !v || (v[j >> 3] >> (j & 7) & 1);
}

static const char *col_name(const cli_printer *p, int64_t k) {
  const char *n = p->schema->children[k]->name;
  return n ? n : "";
}

void cli_put_json_str(FILE *f, const char *s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '\r') fputs("\\r", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_csv_field(FILE *f, const char *s, size_t n) {
  int q = 0;
  for (size_t i = 0; i < n && !q; i++) q = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  if (!q) {
    fwrite(s, 1, n, f);
    return;
  }
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') fputc('"', f);
    fputc(s[i], f);
  }
  fputc('"', f);
}

/* The cell text of column k at row j of batch (j includes the batch's offset; the child's
** own offset applies on top, as for every child array) in s and n; n = SIZE_MAX for null.
** Borrowed until the next call. */
static dk_status cell_text(cli_printer *p, const struct ArrowArray *batch, int64_t k, int64_t j,
                           const char **s, size_t *n, dk_error *err) {
  const struct ArrowArray *a = batch->children[k];
  int64_t i = j;
  if (!is_valid(a, i)) {
    *s = "";
    *n = SIZE_MAX;
    return DK_OK;
  }
  if (p->cell[k] == CELL_STRING) {
    const int32_t *o = a->buffers[1];
    const char *d = a->buffers[2];
    int64_t x = a->offset + i;
    *s = d ? d + o[x] : "";
    *n = (size_t)(o[x + 1] - o[x]);
    return DK_OK;
  }
  dk_str t;
  TRY(dk_arrow_json_value(&t, p->enc[k], a, i, err));
  *s = t.ptr;
  *n = t.len;
  if (p->cell[k] == CELL_UNQUOTE && *n >= 2 && (*s)[0] == '"') {
    *s += 1;
    *n -= 2;
  }
  return DK_OK;
}

static void put_header(cli_printer *p) {
  for (int pass = 0; pass < (p->format == CLI_PRINT_TABLE ? 2 : 1); pass++) {
    for (int64_t k = 0; k < p->nc; k++) {
      const char *nm = col_name(p, k);
      if (p->format == CLI_PRINT_CSV) {
        if (k) fputc(',', p->out);
        put_csv_field(p->out, nm, strlen(nm));
        continue;
      }
      if (k) fputs(pass ? "-+-" : " | ", p->out);
      size_t w = pass ? 0 : utf8_width(nm, strlen(nm));
      if (!pass) fputs(nm, p->out);
      for (size_t x = w; x < p->widths[k]; x++) fputc(pass ? '-' : ' ', p->out);
    }
    fputc('\n', p->out);
  }
  p->header = 0;
}

dk_status cli_printer_new(cli_printer **out, const struct ArrowSchema *schema, int format,
                          FILE *f, dk_error *err) {
  *out = NULL;
  int fmt = format & 0xff;
  if (fmt != CLI_PRINT_JSONL && fmt != CLI_PRINT_CSV && fmt != CLI_PRINT_TABLE)
    return fail(err, DK_INVALID, "unknown print format %d", fmt);
  if (!schema || !schema->format || strcmp(schema->format, "+s") != 0)
    return fail(err, DK_INVALID, "rows to print must be a struct ('+s')");
  cli_printer *p = calloc(1, sizeof *p);
  size_t nc = (size_t)schema->n_children;
  if (p) {
    p->enc = calloc(nc ? nc : 1, sizeof *p->enc);
    p->cell = calloc(nc ? nc : 1, sizeof *p->cell);
    p->widths = calloc(nc ? nc : 1, sizeof *p->widths);
  }
  if (!p || !p->enc || !p->cell || !p->widths) {
    cli_printer_free(p);
    return fail(err, DK_NOMEM, "out of memory (printer)");
  }
  p->schema = schema;
  p->format = fmt;
  p->header = !(format & CLI_PRINT_NO_HEADER);
  p->out = f;
  p->nc = (int64_t)nc;
  for (size_t k = 0; k < nc; k++) {
    dk_status st = dk_arrow_json_new(&p->enc[k], schema->children[k], NULL, err);
    if (st != DK_OK) {
      cli_printer_free(p);
      return st;
    }
    p->cell[k] = cell_kind(schema->children[k]->format);
    p->widths[k] = utf8_width(col_name(p, (int64_t)k), strlen(col_name(p, (int64_t)k)));
  }
  *out = p;
  return DK_OK;
}

void cli_printer_free(cli_printer *p) {
  if (!p) return;
  for (int64_t k = 0; p->enc && k < p->nc; k++) dk_arrow_json_free(p->enc[k]);
  free(p->enc);
  free(p->cell);
  free(p->widths);
  free(p->cells.p);
  free(p->ends.p);
  free(p);
}

/* TABLE: writes the held rows padded to the widths seen so far. */
static void table_flush(cli_printer *p) {
  if (p->header) put_header(p);
  const size_t *ends = (const size_t *)(void *)p->ends.p;
  size_t pos = 0;
  for (int64_t r = 0; r < p->rows; r++) {
    for (int64_t k = 0; k < p->nc; k++) {
      size_t e = ends[r * p->nc + k];
      if (k) fputs(" | ", p->out);
      fwrite(p->cells.p + pos, 1, e - pos, p->out);
      for (size_t x = utf8_width(p->cells.p + pos, e - pos); x < p->widths[k]; x++)
        fputc(' ', p->out);
      pos = e;
    }
    fputc('\n', p->out);
  }
  p->cells.len = p->ends.len = 0;
  p->rows = 0;
}

dk_status cli_printer_add(cli_printer *p, const struct ArrowArray *batch, dk_error *err) {
  if (batch->n_children != p->nc)
    return fail(err, DK_INVALID, "batch has %lld columns, schema %lld",
                (long long)batch->n_children, (long long)p->nc);
  if (p->format != CLI_PRINT_JSONL && p->format != CLI_PRINT_TABLE && p->header) put_header(p);
  for (int64_t r = 0; r < batch->length; r++) {
    int64_t j = batch->offset + r;
    if (p->format == CLI_PRINT_TABLE && p->rows == CLI_PRINT_TABLE_MAX_ROWS) table_flush(p);
    if (p->format == CLI_PRINT_JSONL) fputc('{', p->out);
    for (int64_t k = 0; k < p->nc; k++) {
      const char *s;
      size_t n;
      if (p->format == CLI_PRINT_JSONL) {
        if (k) fputc(',', p->out);
        cli_put_json_str(p->out, col_name(p, k), strlen(col_name(p, k)));
        fputc(':', p->out);
        if (!is_valid(batch, r)) {
          fputs("null", p->out);
          continue;
        }
        dk_str t;
        TRY(dk_arrow_json_value(&t, p->enc[k], batch->children[k], j, err));
        fwrite(t.ptr, 1, t.len, p->out);
        continue;
      }
      TRY(cell_text(p, batch, k, j, &s, &n, err));
      if (p->format == CLI_PRINT_CSV) {
        if (k) fputc(',', p->out);
        if (n != SIZE_MAX) put_csv_field(p->out, s, n);
        continue;
      }
      if (n == SIZE_MAX) {
        s = "null";
        n = 4;
      }
      TRY(cbuf_put(&p->cells, s, n, err));
      size_t end = p->cells.len, w = utf8_width(s, n);
      TRY(cbuf_put(&p->ends, &end, sizeof end, err));
      if (w > p->widths[k]) p->widths[k] = w;
    }
    if (p->format == CLI_PRINT_TABLE) p->rows++;
    else fputs(p->format == CLI_PRINT_JSONL ? "}\n" : "\n", p->out);
  }
  return DK_OK;
}

dk_status cli_printer_finish(cli_printer *p, dk_error *err) {
  (void)err;
  if (p->format == CLI_PRINT_TABLE) table_flush(p);
  else if (p->format == CLI_PRINT_CSV && p->header) put_header(p); /* no rows: the header */
  return DK_OK;
}
