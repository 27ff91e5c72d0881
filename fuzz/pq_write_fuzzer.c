/*
** pq_write_fuzzer.c — libFuzzer round trip of the Parquet writer: the input bytes choose a
** schema (bool, int32, int64, double, utf8, decimal(20,3), list<int32>, struct<int64, utf8>,
** nullable or not), the rows and their values, and the writer options (codec, dictionary and
** its limit, page v1/v2, page and row-group sizes, threads). dk writes the batch, dk's reader
** reads the file back, and every row must print (dk/arrow_json.h) exactly as the input row.
** Any mismatch aborts; a crash or sanitizer report is a bug.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrow/array.h"
#include "dk/arrow_json.h"
#include "dk/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct src {
  const uint8_t *p;
  size_t n;
} src;

static uint8_t byte(src *s) {
  if (!s->n) return 0;
  s->n--;
  return *s->p++;
}

static uint64_t u64(src *s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | byte(s);
  return v;
}

enum { K_BOOL, K_I32, K_I64, K_DBL, K_STR, K_DEC, K_LIST, K_STRUCT, K_N };

static dk_status add_schema(struct ArrowSchema *out, int kind, const char *name, int nullable,
                            dk_error *err) {
  int64_t fl = nullable ? ARROW_FLAG_NULLABLE : 0;
  dk_atype t;
  switch (kind) {
    case K_BOOL: t = dk__atype_make(DK_AT_BOOL); break;
    case K_I32: t = dk__atype_make(DK_AT_INT32); break;
    case K_I64: t = dk__atype_make(DK_AT_INT64); break;
    case K_DBL: t = dk__atype_make(DK_AT_DOUBLE); break;
    case K_STR: t = dk__atype_make(DK_AT_STRING); break;
    case K_DEC: t = dk__atype_decimal(20, 3); break;
    case K_LIST: {
      t = dk__atype_make(DK_AT_LIST);
      DK_RETURN_NOT_OK(dk__schema_init(out, &t, name, fl, 1, err));
      dk_atype e = dk__atype_make(DK_AT_INT32);
      return dk__schema_init(out->children[0], &e, "element", ARROW_FLAG_NULLABLE, 0, err);
    }
    default: {
      t = dk__atype_make(DK_AT_STRUCT);
      DK_RETURN_NOT_OK(dk__schema_init(out, &t, name, fl, 2, err));
      dk_atype a = dk__atype_make(DK_AT_INT64), b = dk__atype_make(DK_AT_STRING);
      DK_RETURN_NOT_OK(dk__schema_init(out->children[0], &a, "x", ARROW_FLAG_NULLABLE, 0, err));
      return dk__schema_init(out->children[1], &b, "y", ARROW_FLAG_NULLABLE, 0, err);
    }
  }
  return dk__schema_init(out, &t, name, fl, 0, err);
}

static dk_status put_str(dk_arr *a, src *s, dk_error *err) {
  char buf[80];
  int n = byte(s) % 70;
  int rep = byte(s) & 1; /* repeated text helps the dictionary */
  for (int i = 0; i < n; i++) buf[i] = rep ? 'a' + (char)(i % 3) : (char)(' ' + byte(s) % 90);
  return dk__arr_append_bytes(a, buf, n, err);
}

static dk_status put_value(dk_arr *a, int kind, int nullable, src *s, dk_error *err) {
  if (nullable && byte(s) < 50) return dk__arr_append_null(a, err);
  switch (kind) {
    case K_BOOL: return dk__arr_append_bool(a, byte(s) & 1, err);
    case K_I32: return dk__arr_append_int(a, (int32_t)((uint32_t)byte(s) << 24 | byte(s)), err);
    case K_I64: return dk__arr_append_int(a, (int64_t)u64(s) >> (byte(s) % 64), err);
    case K_DBL: {
      uint64_t bits = u64(s);
      double d;
      memcpy(&d, &bits, 8);
      if (d != d) d = 0.5; /* NaN payloads do not survive printing as text */
      return dk__arr_append_double(a, d, err);
    }
    case K_STR: return put_str(a, s, err);
    case K_DEC: {
      /* within precision 20: |v| < 10^20 */
      __int128 v = (__int128)((int64_t)u64(s) % 100000000000000000LL) * 1000 + byte(s);
      uint8_t le[16];
      memcpy(le, &v, 16);
      return dk__arr_append_bytes(a, le, 16, err);
    }
    case K_LIST: {
      int n = byte(s) % 5;
      for (int i = 0; i < n; i++) DK_RETURN_NOT_OK(put_value(&a->children[0], K_I32, 1, s, err));
      return dk__arr_finish_element(a, err);
    }
    default:
      DK_RETURN_NOT_OK(put_value(&a->children[0], K_I64, 1, s, err));
      DK_RETURN_NOT_OK(put_value(&a->children[1], K_STR, 1, s, err));
      return dk__arr_finish_element(a, err);
  }
}

static int64_t roundtrip(src *s, const char *path) {
  dk_error err;
  dk_error_init(&err);
  int ncols = 1 + byte(s) % 4, kinds[4], nullable[4];
  struct ArrowSchema schema;
  dk_atype st = dk__atype_make(DK_AT_STRUCT);
  if (dk__schema_init(&schema, &st, "", 0, ncols, &err) != DK_OK) return -1;
  for (int i = 0; i < ncols; i++) {
    char name[8];
    snprintf(name, sizeof name, "c%d", i);
    kinds[i] = byte(s) % K_N;
    nullable[i] = byte(s) % 3 != 0;
    if (add_schema(schema.children[i], kinds[i], name, nullable[i], &err) != DK_OK) abort();
  }
  dk_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  uint8_t ob = byte(s);
  o.codec = (dk_parquet_codec)(ob % 5);
  o.no_dictionary = (ob >> 3) & 1;
  o.data_page_version = (ob >> 4) & 1 ? 2 : 1;
  o.page_rows = 1 + byte(s) % 64;
  o.row_group_rows = (ob >> 5) & 1 ? 1 + byte(s) % 200 : 0;
  o.dictionary_bytes = (ob >> 6) & 1 ? 1 + byte(s) * 4 : 0;
  o.threads = (ob >> 7) & 1 ? 2 : 1;
  dk_arr b;
  if (dk__arr_init_from_schema(&b, &schema, NULL, &err) != DK_OK) abort();
  int rows = byte(s) | (byte(s) & 3) << 8;
  for (int r = 0; r < rows; r++) {
    for (int i = 0; i < ncols; i++)
      if (put_value(&b.children[i], kinds[i], nullable[i], s, &err) != DK_OK) abort();
    if (dk__arr_finish_element(&b, &err) != DK_OK) abort();
  }
  struct ArrowArray batch;
  if (dk__arr_finish(&b, &batch, &err) != DK_OK) abort();
  dk__arr_reset(&b);
  dk_parquet_writer *w = NULL;
  if (dk_parquet_writer_open(&w, NULL, path, &schema, &o, &err) != DK_OK ||
      dk_parquet_writer_write(w, &batch, &err) != DK_OK ||
      dk_parquet_writer_close(w, NULL, &err) != DK_OK) {
    fprintf(stderr, "pq_write_fuzzer: write failed: %s\n", err.message);
    abort();
  }
  char *stats = NULL;
  if (dk_parquet_writer_delta_stats(&stats, w, NULL, &err) != DK_OK) abort();
  dk_free(stats);
  dk_parquet_writer_free(w);
  /* read back and compare row by row as JSON text */
  dk_parquet_file *f = NULL;
  struct ArrowArrayStream rs;
  if (dk_parquet_open(&f, path, NULL, &err) != DK_OK || dk_parquet_read(&rs, f, NULL, &err) != DK_OK) {
    fprintf(stderr, "pq_write_fuzzer: read failed: %s\n", err.message);
    abort();
  }
  dk_arrow_json *ein = NULL, *eout = NULL;
  struct ArrowSchema rsc;
  if (rs.get_schema(&rs, &rsc) != 0) abort();
  if (dk_arrow_json_new(&ein, &schema, NULL, &err) != DK_OK ||
      dk_arrow_json_new(&eout, &rsc, NULL, &err) != DK_OK)
    abort();
  int64_t row = 0;
  for (;;) {
    struct ArrowArray got;
    if (rs.get_next(&rs, &got) != 0) abort();
    if (!got.release) break;
    for (int64_t i = 0; i < got.length; i++, row++) {
      dk_str a, c;
      if (dk_arrow_json_value(&a, ein, &batch, row, &err) != DK_OK) abort();
      char *as = strndup(a.ptr, a.len);
      if (dk_arrow_json_value(&c, eout, &got, i, &err) != DK_OK) abort();
      if (c.len != strlen(as) || memcmp(c.ptr, as, c.len)) {
        fprintf(stderr, "pq_write_fuzzer: row %lld differs:\n  in  %s\n  out %.*s\n",
                (long long)row, as, (int)c.len, c.ptr);
        abort();
      }
      free(as);
    }
    got.release(&got);
  }
  if (row != rows) abort();
  dk_arrow_json_free(ein);
  dk_arrow_json_free(eout);
  rsc.release(&rsc);
  rs.release(&rs);
  dk_parquet_file_free(f);
  batch.release(&batch);
  schema.release(&schema);
  unlink(path);
  return row;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/dk-pq-write-fuzz-%d.parquet", (int)getpid());
  src s = {data, size};
  roundtrip(&s, path);
  return 0;
}
