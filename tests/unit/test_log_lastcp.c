/* test_log_lastcp.c — the _last_checkpoint checksum (log/lastcp.c) against PROTOCOL.md's
 * example and against every checksum delta-spark wrote into the corpus's _last_checkpoint
 * files; a file whose checksum does not match is ignored as a hint (the log is listed). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "dk/snapshot.h"
#include "dk/table.h"
#include "log/lastcp.h"
#include "test.h"

static int sum_of(char out[33], const char *text) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1024);
  dk_json_value *j;
  dk_error err = {0};
  int ok = dk__json_parse(&j, &ar, text, strlen(text), &err) == DK_OK &&
           dk_log__last_checkpoint_checksum(out, j, NULL, &err) == DK_OK;
  dk__arena_dispose(&ar);
  return ok;
}

DK_TEST(log__lastcp_protocol_example) {
  char s[33];
  CHECK(sum_of(s, "{\"k0\":\"'v 0'\", \"checksum\": \"adsaskfljadfkjadfkj\", \"k1\":{\"k2\": 2, "
                  "\"k3\": [\"v3\", [1, 2], {\"k4\": \"v4\", \"k5\": [\"v5\", \"v6\", \"v7\"]}]}}"));
  CHECK_EQ_STR(s, "6a92d155a59bf2eecbd4b4ec7fd1f875");
  CHECK(!sum_of(s, "{\"a\":1,\"a\":2}")); /* duplicate keys: invalid */
}

/* Every corpus _last_checkpoint that delta-spark gave a checksum. */
static void walk_corpus(const char *dir, int depth, int *n, int *bad) {
  if (depth > 3) return;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (!strcmp(e->d_name, "_last_checkpoint")) {
      char *text = NULL;
      size_t len;
      dk_error err = {0};
      if (dk__read_file(NULL, p, &text, &len, &err) != DK_OK) continue;
      const char *k = strstr(text, "\"checksum\":\"");
      if (k) {
        char want[33] = {0}, got[33];
        memcpy(want, k + 12, 32);
        (*n)++;
        if (!sum_of(got, text) || strcmp(got, want)) {
          (*bad)++;
          fprintf(stderr, "  %s: checksum %s, dk %s\n", p, want, got);
        }
      }
      dk__free(NULL, text);
    } else if (e->d_type == DT_DIR) {
      walk_corpus(p, depth + 1, n, bad);
    }
  }
  closedir(d);
}

DK_TEST(log__lastcp_corpus_checksums) {
  int n = 0, bad = 0;
  walk_corpus(dk_test_data_dir(), 0, &n, &bad);
  printf("  _last_checkpoint checksums written by delta-spark: %d, dk differs on %d\n", n, bad);
  CHECK(n >= 10);
  CHECK_EQ_INT(bad, 0);
}
