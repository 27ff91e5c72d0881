/* cmd_parquet.c — `dk parquet schema|meta|cat FILE`: inspect and print Parquet files. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"
#include "cli.h"
#include "dk/parquet.h"

static int fail(const char *cmd, const dk_error *err) {
  fprintf(stderr, "dk parquet %s: %s: %s\n", cmd, dk_status_str(err->code), err->message);
  return 1;
}

/* The value of `key` in Arrow C Data Interface metadata (int32 count, then per pair int32
** length + key bytes, int32 length + value bytes; native byte order), or {NULL, 0}. */
static dk_str metadata_get(const char *md, const char *key) {
  dk_str out = {NULL, 0};
  if (!md) return out;
  int32_t n, kl, vl;
  memcpy(&n, md, 4);
  md += 4;
  for (int32_t i = 0; i < n; i++) {
    memcpy(&kl, md, 4);
    const char *k = md + 4;
    memcpy(&vl, k + kl, 4);
    const char *v = k + kl + 4;
    if ((size_t)kl == strlen(key) && !memcmp(k, key, (size_t)kl)) {
      out.ptr = v;
      out.len = (size_t)vl;
      return out;
    }
    md = v + vl;
  }
  return out;
}

static void print_schema(const struct ArrowSchema *s, int depth) {
  for (int i = 0; i < depth; i++) fputs("  ", stdout);
  dk_str fid = metadata_get(s->metadata, "PARQUET:field_id");
  printf("%s: %s%s", s->name ? s->name : "", s->format,
         (s->flags & ARROW_FLAG_NULLABLE) ? "" : " not null");
  if (fid.ptr) printf(" (field_id %.*s)", (int)fid.len, fid.ptr);
  putchar('\n');
  for (int64_t i = 0; i < s->n_children; i++) print_schema(s->children[i], depth + 1);
}

/* Splits a comma-separated list in place. */
static size_t split(char *s, char **out, size_t max) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) out[n++] = tok;
  return n;
}

int dk_cli_parquet(int argc, char **argv) {
  if (argc < 2) {
    return dk_cli_usage("parquet");
  }
  const char *cmd = argv[0], *path = argv[1];
  if (strcmp(cmd, "schema") && strcmp(cmd, "meta") && strcmp(cmd, "cat")) {
    fprintf(stderr, "dk parquet: unknown subcommand '%s'\n", cmd);
    return dk_cli_usage("parquet");
  }
  char *cols_arg = NULL, *rg_arg = NULL, *fid_arg = NULL, *range_arg = NULL;
  int format = CLI_PRINT_JSONL, use_mmap = 0, threads = 0, skip_crc = 0;
  int64_t batch = 0, limit = -1;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--columns") && i + 1 < argc) cols_arg = argv[++i];
    else if (!strcmp(argv[i], "--row-groups") && i + 1 < argc) rg_arg = argv[++i];
    else if (!strcmp(argv[i], "--field-ids") && i + 1 < argc) fid_arg = argv[++i];
    else if (!strcmp(argv[i], "--range") && i + 1 < argc) range_arg = argv[++i];
    else if (!strcmp(argv[i], "--batch-size") && i + 1 < argc) batch = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--mmap")) use_mmap = 1;
    else if (!strcmp(argv[i], "--no-page-checksums")) skip_crc = 1;
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
      const char *f = argv[++i];
      if (!strcmp(f, "jsonl")) format = CLI_PRINT_JSONL;
      else if (!strcmp(f, "csv")) format = CLI_PRINT_CSV;
      else if (!strcmp(f, "table")) format = CLI_PRINT_TABLE;
      else if (!strcmp(f, "count")) format = -1; /* decode only; print the row count */
      else {
        fprintf(stderr, "dk parquet: unknown format '%s'\n", f);
        return 2;
      }
    } else {
      return dk_cli_usage("parquet");
    }
  }
  /* Batches are allocated and freed in a steady cycle: keep freed memory in the process
  ** instead of returning it to the kernel after every batch (saves page faults). */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  dk_error err;
  dk_error_init(&err);
  dk_parquet_open_options oo = {.version = DK_PARQUET_OPEN_OPTIONS_VERSION, .use_mmap = use_mmap,
                                .skip_page_checksums = skip_crc};
  dk_parquet_file *f = NULL;
  if (dk_parquet_open(&f, path, &oo, &err)) return fail(cmd, &err);
  int rc = 0;
  if (!strcmp(cmd, "schema")) {
    struct ArrowSchema s;
    if (dk_parquet_schema(&s, f, &err)) {
      rc = fail(cmd, &err);
    } else {
      for (int64_t i = 0; i < s.n_children; i++) print_schema(s.children[i], 0);
      s.release(&s);
    }
  } else if (!strcmp(cmd, "meta")) {
    char *js = NULL;
    if (dk_parquet_meta_json(&js, f, &err)) {
      rc = fail(cmd, &err);
    } else {
      puts(js);
      dk_free(js);
    }
  } else if (!strcmp(cmd, "cat")) {
    char *cols[1024];
    int rgs[4096];
    dk_parquet_read_options ro;
    memset(&ro, 0, sizeof ro);
    ro.version = DK_PARQUET_READ_OPTIONS_VERSION;
    ro.batch_size = batch;
    ro.threads = threads;
    if (cols_arg) {
      ro.n_columns = split(cols_arg, cols, 1024);
      ro.columns = (const char *const *)cols;
    }
    if (rg_arg) {
      char *parts[4096];
      size_t n = split(rg_arg, parts, 4096);
      for (size_t i = 0; i < n; i++) rgs[i] = atoi(parts[i]);
      ro.row_groups = rgs;
      ro.n_row_groups = n;
    }
    int32_t fids[1024];
    if (fid_arg) {
      char *parts[1024];
      size_t n = split(fid_arg, parts, 1024);
      for (size_t i = 0; i < n; i++) fids[i] = atoi(parts[i]);
      ro.field_ids = fids;
      ro.n_field_ids = n;
    }
    if (range_arg) {
      long long a = 0, b = 0;
      if (sscanf(range_arg, "%lld,%lld", &a, &b) != 2 || b <= 0) {
        fprintf(stderr, "dk parquet cat: --range wants START,END\n");
        dk_parquet_file_free(f);
        return 2;
      }
      ro.range_start = a;
      ro.range_end = b;
    }
    struct ArrowArrayStream st;
    if (dk_parquet_read(&st, f, &ro, &err)) {
      rc = fail(cmd, &err);
    } else {
      int64_t count = 0;
      rc = dk_cli_print_stream(&st, format, limit, "parquet cat", &count);
      if (!rc && format < 0) printf("%lld\n", (long long)count);
      st.release(&st);
    }
  } else {
    rc = dk_cli_usage("parquet");
  }
  dk_parquet_file_free(f);
  return rc;
}
