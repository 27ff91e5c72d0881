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

/* Fast JSON string writer for the bulk output (a million paths and stats texts): one reserve,
 * then plain byte copies with the few escapes JSON needs. */
/* Bit 7 of each byte of the result is set where x has a byte that JSON must escape ('"', '\\'
** or a control character). Bytes above the first such byte may be falsely flagged (borrows
** carry upward), so only the lowest flag is exact, which is all put_jstr uses. */
static inline uint64_t esc_mask(uint64_t x) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
  return (((q - ones) & ~q) | ((bs - ones) & ~bs) | ((x - ones * 0x20) & ~x)) & high;
}

static void put_jstr(dk_buf *b, const char *s, size_t n) {
  if (dk__buf_reserve(b, n * 6 + 2, NULL) != DK_OK) return;
  char *o = b->data + b->len;
  *o++ = '"';
  static const char hex[] = "0123456789abcdef";
  size_t i = 0;
  for (;;) {
    /* 8 bytes at a time up to the first byte needing an escape: the word is stored whole
    ** (the reservation leaves room) and the output advances past the clean bytes only */
    while (i + 8 <= n) {
      uint64_t x;
      memcpy(&x, s + i, 8);
      memcpy(o, &x, 8);
      uint64_t m = esc_mask(x);
      if (!m) {
        o += 8;
        i += 8;
        continue;
      }
      unsigned k = (unsigned)__builtin_ctzll(m) >> 3;
      o += k;
      i += k;
      break;
    }
    if (i >= n) break;
    unsigned char c = (unsigned char)s[i++];
    if (c >= 0x20 && c != '"' && c != '\\') {
      *o++ = (char)c;
    } else if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = (char)c;
    } else {
      memcpy(o, "\\u00", 4);
      o[4] = hex[c >> 4];
      o[5] = hex[c & 15];
      o += 6;
    }
  }
  *o++ = '"';
  b->len = (size_t)(o - b->data);
  b->data[b->len] = 0;
}

static void put_i64(dk_buf *b, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) tmp[n++] = '-';
  if (dk__buf_reserve(b, (size_t)n, NULL) != DK_OK) return;
  while (n) b->data[b->len++] = tmp[--n];
  b->data[b->len] = 0;
}

int dk_cli_files(int argc, char **argv) {
  const char *uri;
  dk_snapshot_options o;
  int json;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--where")) return dk_cli_files_where(argc, argv);
  if (dk_cli_snapshot_args(argc, argv, &uri, &o, &json, NULL)) {
    return dk_cli_usage("files");
  }
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &o, &t, &s)) return 1;
  dk_buf b;
  dk__buf_init(&b, NULL);
  int64_t n = dk_snapshot_num_files(s);
  if (json) dk__buf_printf(&b, NULL, "{\"version\":%" PRId64 ",\"files\":[", dk_snapshot_version(s));
  int rc = 0;
  dk_file_iter *it = NULL;
  dk_error ferr;
  dk_error_init(&ferr);
  if (dk_snapshot_files_open(&it, s, NULL, &ferr) != DK_OK) n = -1;
  for (int64_t i = 0; i < n; i++) {
    const dk_file_entry *fe;
    if (dk_file_iter_next(&fe, it, &ferr) != DK_OK || !fe) break;
    const dk_file_entry f = *fe;
    if (json) {
      if (i) dk__buf_putc(&b, ',', NULL);
      dk__buf_puts(&b, "{\"path\":", NULL);
      put_jstr(&b, f.path, strlen(f.path));
      dk__buf_puts(&b, ",\"size\":", NULL);
      put_i64(&b, f.size);
      dk__buf_puts(&b, ",\"modification_time\":", NULL);
      put_i64(&b, f.modification_time);
      dk__buf_puts(&b, ",\"partition_values\":{", NULL);
      for (size_t k = 0; k < f.n_partition_values; k++) {
        if (k) dk__buf_putc(&b, ',', NULL);
        const char *key = f.partition_kv[2 * k], *v = f.partition_kv[2 * k + 1];
        put_jstr(&b, key, strlen(key));
        dk__buf_putc(&b, ':', NULL);
        if (v)
          put_jstr(&b, v, strlen(v));
        else
          dk__buf_puts(&b, "null", NULL);
      }
      dk__buf_putc(&b, '}', NULL);
      if (f.dv) {
        dk__buf_printf(&b, NULL, ",\"deletion_vector\":{\"storageType\":\"%c\",\"pathOrInlineDv\":",
                      f.dv->storage_type);
        dk__json_write_str(&b, f.dv->path_or_inline_dv, strlen(f.dv->path_or_inline_dv), NULL);
        if (f.dv->offset >= 0) dk__buf_printf(&b, NULL, ",\"offset\":%d", (int)f.dv->offset);
        dk__buf_printf(&b, NULL, ",\"sizeInBytes\":%d,\"cardinality\":%" PRId64 "}",
                      (int)f.dv->size_in_bytes, f.dv->cardinality);
      }
      if (f.has_base_row_id) dk__buf_printf(&b, NULL, ",\"base_row_id\":%" PRId64, f.base_row_id);
      if (f.has_default_row_commit_version)
        dk__buf_printf(&b, NULL, ",\"default_row_commit_version\":%" PRId64,
                      f.default_row_commit_version);
      if (f.stats) {
        dk__buf_puts(&b, ",\"stats\":", NULL);
        put_jstr(&b, f.stats, strlen(f.stats));
      }
      if (f.tags_json) {
        dk__buf_puts(&b, ",\"tags\":", NULL);
        dk__buf_puts(&b, f.tags_json, NULL);
      }
      dk__buf_putc(&b, '}', NULL);
    } else {
      char ts[64];
      dk_cli_format_ts(ts, sizeof ts, f.modification_time);
      dk__buf_printf(&b, NULL, "%s\t%" PRId64 "\t%s", f.path, f.size, ts);
      for (size_t k = 0; k < f.n_partition_values; k++) {
        const char *v = f.partition_kv[2 * k + 1];
        dk__buf_printf(&b, NULL, "%s%s=%s", k ? "," : "\t", f.partition_kv[2 * k], v ? v : "null");
      }
      if (f.dv) dk__buf_printf(&b, NULL, "\tdv:%" PRId64 " deleted", f.dv->cardinality);
      dk__buf_putc(&b, '\n', NULL);
    }
    if (b.len > (1 << 20)) {
      fwrite(b.data, 1, b.len, stdout);
      dk__buf_clear(&b);
    }
  }
  dk_file_iter_free(it);
  if (ferr.code != DK_OK) {
    fprintf(stderr, "dk files: %s: %s\n", dk_status_str(ferr.code), ferr.message);
    rc = 1;
  }
  if (json && !rc) dk__buf_puts(&b, "]}\n", NULL);
  if (b.len) fwrite(b.data, 1, b.len, stdout);
  dk__buf_dispose(&b);
  dk_snapshot_free(s);
  dk_table_free(t);
  return rc;
}
