/*
** cmd_parquet_write.c — `dk parquet write OUT --from IN`: writes a Parquet file with dk's writer
** (dk/parquet.h) from a Parquet, CSV or JSON-lines file (text_input.c reads those), and prints
** what it wrote (rows, bytes, row groups and the file's Delta add.stats).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/array.h"
#include "cli.h"
#include "dk/parquet.h"

/* ---- the command ----------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcasecmp(s + a - b, suf);
}

int dk_cli_parquet_write(int argc, char **argv) {
  const char *out = argc > 0 ? argv[0] : NULL, *in = NULL, *fmt = NULL;
  dk_parquet_write_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_PARQUET_WRITE_OPTIONS_VERSION;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--from") && i + 1 < argc) in = argv[++i];
    else if (!strcmp(argv[i], "--format") && i + 1 < argc) fmt = argv[++i];
    else if (!strcmp(argv[i], "--compression") && i + 1 < argc) {
      const char *c = argv[++i];
      if (!strcmp(c, "snappy")) o.codec = DK_PARQUET_SNAPPY;
      else if (!strcmp(c, "zstd")) o.codec = DK_PARQUET_ZSTD;
      else if (!strcmp(c, "gzip")) o.codec = DK_PARQUET_GZIP;
      else if (!strcmp(c, "lz4_raw") || !strcmp(c, "lz4")) o.codec = DK_PARQUET_LZ4_RAW;
      else if (!strcmp(c, "none") || !strcmp(c, "uncompressed")) o.codec = DK_PARQUET_UNCOMPRESSED;
      else {
        fprintf(stderr, "dk parquet write: unknown compression '%s' (snappy, zstd, gzip, lz4_raw, none)\n", c);
        return 2;
      }
    } else if (!strcmp(argv[i], "--row-group-size") && i + 1 < argc) o.row_group_rows = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--page-version") && i + 1 < argc) o.data_page_version = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-dictionary")) o.no_dictionary = 1;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) o.threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "dk parquet write: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!out || !in) {
    fprintf(stderr, "usage: dk parquet write OUT --from IN [--format parquet|csv|jsonl] "
                    "[--compression snappy|zstd|gzip|lz4_raw|none] [--row-group-size ROWS] "
                    "[--page-version 1|2] [--no-dictionary] [--threads N]\n");
    return 2;
  }
  if (!fmt) fmt = ends_with(in, ".csv") ? "csv" : (ends_with(in, ".jsonl") || ends_with(in, ".json") ||
                                                   ends_with(in, ".ndjson")) ? "jsonl" : "parquet";
  dk_error err;
  dk_error_init(&err);
  dk_status st = DK_OK;
  dk_parquet_file *f = NULL;
  dk_parquet_writer *w = NULL;
  struct ArrowArrayStream s;
  struct ArrowSchema schema;
  memset(&s, 0, sizeof s);
  memset(&schema, 0, sizeof schema);
  if (!strcmp(fmt, "parquet")) {
    st = dk_parquet_open(&f, in, NULL, &err);
    if (st == DK_OK) st = dk_parquet_read(&s, f, NULL, &err);
  } else if (!strcmp(fmt, "csv") || !strcmp(fmt, "jsonl")) {
    st = dk_cli_text_stream(&s, in, fmt[0] == 'c', NULL, &err);
  } else {
    fprintf(stderr, "dk parquet write: unknown --format '%s' (parquet, csv, jsonl)\n", fmt);
    return 2;
  }
  if (st == DK_OK && s.get_schema(&s, &schema) != 0)
    st = dk__error_set(&err, DK_CALLBACK, "%s: %s", in, s.get_last_error(&s));
  if (st == DK_OK) st = dk_parquet_writer_open(&w, NULL, out, &schema, &o, &err);
  if (st == DK_OK && dk_parquet_writer_write_stream(w, &s, &err) != DK_OK) {
    st = err.code;
    const char *m = s.get_last_error(&s); /* the reader's message names the file and row */
    if (m && *m) dk__error_set(&err, err.code, "%s", m);
  }
  dk_parquet_write_result res;
  memset(&res, 0, sizeof res);
  res.version = DK_PARQUET_WRITE_RESULT_VERSION;
  char *stats = NULL;
  if (st == DK_OK) st = dk_parquet_writer_close(w, &res, &err);
  if (st == DK_OK) st = dk_parquet_writer_delta_stats(&stats, w, NULL, &err);
  if (st == DK_OK)
    printf("{\"rows\":%lld,\"bytes\":%lld,\"row_groups\":%d,\"stats\":%s}\n", (long long)res.num_rows,
           (long long)res.file_size, res.num_row_groups, stats);
  dk_free(stats);
  dk_parquet_writer_free(w);
  if (s.release) s.release(&s);
  dk__schema_release(&schema);
  dk_parquet_file_free(f);
  if (st != DK_OK) {
    fprintf(stderr, "dk parquet write: %s: %s\n", dk_status_str(err.code), err.message);
    return 1;
  }
  return 0;
}
