/*
** cmd_describe.c — `dk describe TABLE [--version N | --timestamp TS] [--json]`: version,
** commit time, schema, partition columns, protocol and features, properties, file count and
** bytes of one snapshot. Also the snapshot-opening options shared by `dk files`.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "codec/json/json.h"
#include "dk/snapshot.h"
#include "dk/sys/storage.h"

/* Parses "1700000000000" (ms) or "YYYY-MM-DD[ |T]HH:MM:SS[.fff][Z]" (UTC). */
static int parse_ts(const char *s, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*s && !*end) {
    *out = v;
    return 0;
  }
  int Y, M, D, h = 0, m = 0, sec = 0, ms = 0, n = 0;
  if (sscanf(s, "%d-%d-%d%n", &Y, &M, &D, &n) != 3) return -1;
  const char *p = s + n;
  if (*p == ' ' || *p == 'T') {
    int k = 0;
    if (sscanf(p + 1, "%d:%d:%d%n", &h, &m, &sec, &k) != 3) return -1;
    p += 1 + k;
    if (*p == '.') {
      int digits = 0;
      p++;
      while (*p >= '0' && *p <= '9') {
        if (digits < 3) ms = ms * 10 + (*p - '0');
        digits++;
        p++;
      }
      while (digits < 3 && digits > 0) {
        ms *= 10;
        digits++;
      }
    }
  }
  if (*p == 'Z') p++;
  if (*p) return -1;
  /* days from civil (proleptic Gregorian) */
  int y = Y - (M <= 2);
  int era = (y >= 0 ? y : y - 399) / 400;
  int yoe = y - era * 400;
  int doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
  int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = (int64_t)era * 146097 + doe - 719468;
  *out = ((days * 24 + h) * 60 + m) * 60000LL + sec * 1000LL + ms;
  return 0;
}

/* --threads N of the snapshot commands: the table's thread count (dk_table_options). */
static int g_table_threads;
/* --no-confine-paths: dk_table_options.confine_paths off (on by default in the tool). */
static int g_no_confine;

int dk_cli_threads_option(const char *v) {
  char *end;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > 256) {
    fprintf(stderr, "dk: bad --threads '%s'\n", v);
    return -1;
  }
  g_table_threads = (int)n;
  return 0;
}

int dk_cli_snapshot_args(int argc, char **argv, const char **table, dk_snapshot_options *o,
                         int *json, int64_t *limit) {
  memset(o, 0, sizeof *o);
  o->version = DK_SNAPSHOT_OPTIONS_VERSION;
  o->at_version = -1;
  *table = NULL;
  *json = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--json")) {
      *json = 1;
    } else if (!strcmp(a, "--version") && i + 1 < argc && !limit) {
      char *end;
      o->at_version = strtoll(argv[++i], &end, 10);
      if (*end || o->at_version < 0) {
        fprintf(stderr, "dk: bad --version '%s'\n", argv[i]);
        return -1;
      }
    } else if (!strcmp(a, "--timestamp") && i + 1 < argc && !limit) {
      o->by_timestamp = 1;
      if (parse_ts(argv[++i], &o->timestamp_ms)) {
        fprintf(stderr, "dk: bad --timestamp '%s' (ms since epoch or YYYY-MM-DD HH:MM:SS)\n",
                argv[i]);
        return -1;
      }
    } else if (!strcmp(a, "--limit") && i + 1 < argc && limit) {
      *limit = strtoll(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      if (dk_cli_threads_option(argv[++i])) return -1;
    } else if (!strcmp(a, "--storage-option") && i + 1 < argc) {
      if (dk_cli_storage_option(argv[++i])) return -1;
    } else if (!strcmp(a, "--no-confine-paths")) {
      g_no_confine = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "dk: unknown option '%s'\n", a);
      return -1;
    } else if (!*table) {
      *table = a;
    } else {
      fprintf(stderr, "dk: unexpected argument '%s'\n", a);
      return -1;
    }
  }
  if (!*table) {
    fprintf(stderr, "dk: missing TABLE\n");
    return -1;
  }
  return 0;
}

int dk_cli_parse_ts(const char *s, int64_t *out) { return parse_ts(s, out); }

int dk_cli_open_table(const char *uri, dk_table **t) {
  dk_error err;
  dk_error_init(&err);
  *t = NULL;
  dk_table_options to;
  memset(&to, 0, sizeof to);
  to.version = DK_TABLE_OPTIONS_VERSION;
  to.threads = g_table_threads;
  to.confine_paths = !g_no_confine;
  if (dk_cli_storage_for(uri, &to.storage, &err) != DK_OK ||
      dk_table_open(t, uri, &to, &err) != DK_OK) {
    fprintf(stderr, "dk: %s: %s\n", dk_status_str(err.code), err.message);
    return 1;
  }
  return 0;
}

int dk_cli_open(const char *uri, const dk_snapshot_options *o, dk_table **t, dk_snapshot **s) {
  dk_error err;
  dk_error_init(&err);
  *s = NULL;
  if (dk_cli_open_table(uri, t)) return 1;
  if (dk_snapshot_open(s, *t, o, &err) != DK_OK) {
    fprintf(stderr, "dk: %s: %s\n", dk_status_str(err.code), err.message);
    dk_table_free(*t);
    *t = NULL;
    return 1;
  }
  return 0;
}

void dk_cli_format_ts(char *buf, size_t cap, int64_t ms) {
  if (ms < 0) {
    snprintf(buf, cap, "-");
    return;
  }
  time_t sec = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&sec, &tm);
  snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static void put_str_array(dk_buf *b, const char *const *a, size_t n) {
  dk__buf_putc(b, '[', NULL);
  for (size_t i = 0; i < n; i++) {
    if (i) dk__buf_putc(b, ',', NULL);
    dk__json_write_str(b, a[i], strlen(a[i]), NULL);
  }
  dk__buf_putc(b, ']', NULL);
}

static void put_key(dk_buf *b, const char *k, int first) {
  if (!first) dk__buf_putc(b, ',', NULL);
  dk__json_write_str(b, k, strlen(k), NULL);
  dk__buf_putc(b, ':', NULL);
}

static void put_opt_str(dk_buf *b, const char *k, const char *v) {
  put_key(b, k, 0);
  if (v)
    dk__json_write_str(b, v, strlen(v), NULL);
  else
    dk__buf_puts(b, "null", NULL);
}

static void print_fields(const dk_type *t, int indent) {
  for (size_t i = 0; i < t->n_fields; i++) {
    const dk_field *f = &t->fields[i];
    char tn[512];
    dk_type_to_string(tn, sizeof tn, f->type);
    printf("%*s%s: %s%s", indent, "", f->name, tn, f->nullable ? "" : " not null");
    if (f->physical_name && strcmp(f->physical_name, f->name))
      printf("  (physical %s, id %" PRId64 ")", f->physical_name, f->column_mapping_id);
    printf("\n");
  }
}

int dk_cli_describe(int argc, char **argv) {
  const char *uri;
  dk_snapshot_options o;
  int json;
  if (dk_cli_snapshot_args(argc, argv, &uri, &o, &json, NULL)) {
    return dk_cli_usage("describe");
  }
  dk_table *t;
  dk_snapshot *s;
  if (dk_cli_open(uri, &o, &t, &s)) return 1;
  const dk_protocol *p = dk_snapshot_protocol(s);
  const dk_metadata *m = dk_snapshot_metadata(s);
  if (json) {
    dk_buf b;
    dk__buf_init(&b, NULL);
    dk__buf_putc(&b, '{', NULL);
    put_key(&b, "table", 1);
    dk__json_write_str(&b, dk_table_root(t), strlen(dk_table_root(t)), NULL);
    put_key(&b, "version", 0);
    dk__buf_printf(&b, NULL, "%" PRId64, dk_snapshot_version(s));
    put_key(&b, "timestamp", 0);
    dk__buf_printf(&b, NULL, "%" PRId64, dk_snapshot_timestamp(s));
    put_key(&b, "schema", 0);
    dk__buf_puts(&b, m->schema_string ? m->schema_string : "null", NULL); /* validated JSON */
    put_key(&b, "partition_columns", 0);
    put_str_array(&b, m->partition_columns, m->n_partition_columns);
    put_key(&b, "protocol", 0);
    dk__buf_printf(&b, NULL, "{\"minReaderVersion\":%d,\"minWriterVersion\":%d",
                  (int)p->min_reader_version, (int)p->min_writer_version);
    if (p->has_reader_features) {
      put_key(&b, "readerFeatures", 0);
      put_str_array(&b, p->reader_features, p->n_reader_features);
    }
    if (p->has_writer_features) {
      put_key(&b, "writerFeatures", 0);
      put_str_array(&b, p->writer_features, p->n_writer_features);
    }
    dk__buf_putc(&b, '}', NULL);
    put_opt_str(&b, "id", m->id);
    put_opt_str(&b, "name", m->name);
    put_opt_str(&b, "description", m->description);
    put_opt_str(&b, "format", m->format_provider);
    put_key(&b, "created_time", 0);
    if (m->created_time >= 0)
      dk__buf_printf(&b, NULL, "%" PRId64, m->created_time);
    else
      dk__buf_puts(&b, "null", NULL);
    put_key(&b, "properties", 0);
    dk__buf_putc(&b, '{', NULL);
    for (size_t i = 0; i < m->n_configuration; i++) {
      put_key(&b, m->config_keys[i], i == 0);
      dk__json_write_str(&b, m->config_values[i], strlen(m->config_values[i]), NULL);
    }
    dk__buf_putc(&b, '}', NULL);
    put_key(&b, "app_transactions", 0);
    dk__buf_putc(&b, '{', NULL);
    for (size_t i = 0; i < dk_snapshot_num_txns(s); i++) {
      const char *app;
      int64_t v;
      dk_snapshot_txn(&app, &v, NULL, s, i);
      put_key(&b, app, i == 0);
      dk__buf_printf(&b, NULL, "%" PRId64, v);
    }
    dk__buf_putc(&b, '}', NULL);
    put_key(&b, "num_tombstones", 0);
    dk__buf_printf(&b, NULL, "%" PRId64, dk_snapshot_num_tombstones(s));
    put_key(&b, "num_files", 0);
    dk__buf_printf(&b, NULL, "%" PRId64, dk_snapshot_num_files(s));
    put_key(&b, "size_bytes", 0);
    dk__buf_printf(&b, NULL, "%" PRId64, dk_snapshot_total_bytes(s));
    dk__buf_puts(&b, "}\n", NULL);
    fwrite(b.data, 1, b.len, stdout);
    dk__buf_dispose(&b);
  } else {
    char ts[64];
    dk_cli_format_ts(ts, sizeof ts, dk_snapshot_timestamp(s));
    printf("table:        %s\n", dk_table_root(t));
    printf("version:      %" PRId64 "\n", dk_snapshot_version(s));
    printf("timestamp:    %s (%" PRId64 ")\n", ts, dk_snapshot_timestamp(s));
    printf("id:           %s\n", m->id);
    if (m->name) printf("name:         %s\n", m->name);
    if (m->description) printf("description:  %s\n", m->description);
    printf("format:       %s\n", m->format_provider);
    printf("protocol:     reader %d, writer %d\n", (int)p->min_reader_version,
           (int)p->min_writer_version);
    if (p->has_reader_features) {
      printf("reader features:");
      for (size_t i = 0; i < p->n_reader_features; i++) printf(" %s", p->reader_features[i]);
      printf("\n");
    }
    if (p->has_writer_features) {
      printf("writer features:");
      for (size_t i = 0; i < p->n_writer_features; i++) printf(" %s", p->writer_features[i]);
      printf("\n");
    }
    printf("partitioned by:");
    for (size_t i = 0; i < m->n_partition_columns; i++) printf(" %s", m->partition_columns[i]);
    printf("%s\n", m->n_partition_columns ? "" : " (none)");
    printf("files:        %" PRId64 "\n", dk_snapshot_num_files(s));
    printf("bytes:        %" PRId64 "\n", dk_snapshot_total_bytes(s));
    printf("schema:\n");
    print_fields(dk_snapshot_schema(s), 2);
    if (m->n_configuration) {
      printf("properties:\n");
      for (size_t i = 0; i < m->n_configuration; i++)
        printf("  %s = %s\n", m->config_keys[i], m->config_values[i]);
    }
  }
  dk_snapshot_free(s);
  dk_table_free(t);
  return 0;
}
