/*
** cmd_history.c — `dk history TABLE [--limit N] [--json]`: commitInfo of each version,
** newest first.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "codec/json/json.h"
#include "dk/history.h"
#include "dk/snapshot.h"

static void text_field(dk_arena *ar, const char *ci, const char *key, char *out, size_t cap) {
  out[0] = 0;
  dk_json_value *v;
  if (dk__json_parse(&v, ar, ci, strlen(ci), NULL) != DK_OK) return;
  const dk_json_value *f = dk__json_get(v, key);
  size_t n;
  const char *s = dk__json_as_str(f, &n);
  if (s) snprintf(out, cap, "%s", s);
}

int dk_cli_history(int argc, char **argv) {
  const char *uri;
  dk_snapshot_options o;
  int json;
  int64_t limit = 0;
  if (dk_cli_snapshot_args(argc, argv, &uri, &o, &json, &limit)) {
    return dk_cli_usage("history");
  }
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_history *h = NULL;
  if (dk_cli_table_open(uri, &t, &err) != DK_OK || dk_history_open(&h, t, limit, &err) != DK_OK) {
    fprintf(stderr, "dk: %s: %s\n", dk_status_str(err.code), err.message);
    dk_table_free(t);
    return 1;
  }
  dk_buf b;
  dk__buf_init(&b, NULL);
  if (json) dk__buf_putc(&b, '[', NULL);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 4096);
  for (size_t i = 0; i < dk_history_count(h); i++) {
    int64_t v, ts;
    const char *ci;
    dk_history_entry(&v, &ts, &ci, h, i);
    if (json) {
      dk__buf_printf(&b, NULL, "%s{\"version\":%" PRId64 ",\"timestamp\":%" PRId64 ",\"commitInfo\":%s}",
                    i ? "," : "", v, ts, ci);
    } else {
      char tsb[64], op[128], params[1];
      (void)params;
      dk_cli_format_ts(tsb, sizeof tsb, ts);
      text_field(&ar, ci, "operation", op, sizeof op);
      dk__buf_printf(&b, NULL, "%-6" PRId64 " %s  %s\n", v, tsb, op[0] ? op : "-");
    }
  }
  if (json) dk__buf_puts(&b, "]\n", NULL);
  fwrite(b.data ? b.data : "", 1, b.len, stdout);
  dk__arena_dispose(&ar);
  dk__buf_dispose(&b);
  dk_history_free(h);
  dk_table_free(t);
  return 0;
}
