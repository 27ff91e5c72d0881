/*
** cmd_files.c — `dk files TABLE [--version N | --timestamp TS] [--json]`: the active files
** of a snapshot (path, size, modification time, partition values, deletion vector, stats).
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "codec/json/json.h"
#include "dk/snapshot.h"

int dk_cli_files(int argc, char **argv) {
  const char *uri;
  dk_snapshot_options o;
  int json;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--where")) return dk_cli_files_where(argc, argv);
  if (dk_cli_snapshot_args(argc, argv, &uri, &o, &json, NULL)) {
    fprintf(stderr, "usage: dk files TABLE [--version N | --timestamp TS] [--json]\n");
    return 2;
  }
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &o, &t, &s)) return 1;
  dk_buf b;
  dk_buf_init(&b, NULL);
  int64_t n = dk_snapshot_num_files(s);
  if (json) dk_buf_printf(&b, NULL, "{\"version\":%" PRId64 ",\"files\":[", dk_snapshot_version(s));
  for (int64_t i = 0; i < n; i++) {
    dk_file_entry f;
    if (dk_snapshot_file(&f, s, i, NULL) != DK_OK) break;
    if (json) {
      if (i) dk_buf_putc(&b, ',', NULL);
      dk_buf_puts(&b, "{\"path\":", NULL);
      dk_json_write_str(&b, f.path, strlen(f.path), NULL);
      dk_buf_printf(&b, NULL, ",\"size\":%" PRId64 ",\"modification_time\":%" PRId64, f.size,
                    f.modification_time);
      dk_buf_puts(&b, ",\"partition_values\":{", NULL);
      for (size_t k = 0; k < f.n_partition_values; k++) {
        if (k) dk_buf_putc(&b, ',', NULL);
        const char *key = f.partition_kv[2 * k], *v = f.partition_kv[2 * k + 1];
        dk_json_write_str(&b, key, strlen(key), NULL);
        dk_buf_putc(&b, ':', NULL);
        if (v)
          dk_json_write_str(&b, v, strlen(v), NULL);
        else
          dk_buf_puts(&b, "null", NULL);
      }
      dk_buf_putc(&b, '}', NULL);
      if (f.dv) {
        dk_buf_printf(&b, NULL, ",\"deletion_vector\":{\"storageType\":\"%c\",\"pathOrInlineDv\":",
                      f.dv->storage_type);
        dk_json_write_str(&b, f.dv->path_or_inline_dv, strlen(f.dv->path_or_inline_dv), NULL);
        if (f.dv->offset >= 0) dk_buf_printf(&b, NULL, ",\"offset\":%d", (int)f.dv->offset);
        dk_buf_printf(&b, NULL, ",\"sizeInBytes\":%d,\"cardinality\":%" PRId64 "}",
                      (int)f.dv->size_in_bytes, f.dv->cardinality);
      }
      if (f.has_base_row_id) dk_buf_printf(&b, NULL, ",\"base_row_id\":%" PRId64, f.base_row_id);
      if (f.has_default_row_commit_version)
        dk_buf_printf(&b, NULL, ",\"default_row_commit_version\":%" PRId64,
                      f.default_row_commit_version);
      if (f.stats) {
        dk_buf_puts(&b, ",\"stats\":", NULL);
        dk_json_write_str(&b, f.stats, strlen(f.stats), NULL);
      }
      if (f.tags_json) {
        dk_buf_puts(&b, ",\"tags\":", NULL);
        dk_buf_puts(&b, f.tags_json, NULL);
      }
      dk_buf_putc(&b, '}', NULL);
    } else {
      char ts[64];
      dk_cli_format_ts(ts, sizeof ts, f.modification_time);
      dk_buf_printf(&b, NULL, "%s\t%" PRId64 "\t%s", f.path, f.size, ts);
      for (size_t k = 0; k < f.n_partition_values; k++) {
        const char *v = f.partition_kv[2 * k + 1];
        dk_buf_printf(&b, NULL, "%s%s=%s", k ? "," : "\t", f.partition_kv[2 * k], v ? v : "null");
      }
      if (f.dv) dk_buf_printf(&b, NULL, "\tdv:%" PRId64 " deleted", f.dv->cardinality);
      dk_buf_putc(&b, '\n', NULL);
    }
    if (b.len > (1 << 20)) {
      fwrite(b.data, 1, b.len, stdout);
      dk_buf_clear(&b);
    }
  }
  if (json) dk_buf_puts(&b, "]}\n", NULL);
  if (b.len) fwrite(b.data, 1, b.len, stdout);
  dk_buf_dispose(&b);
  dk_snapshot_free(s);
  dk_table_free(t);
  return 0;
}
