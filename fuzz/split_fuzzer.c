/*
** split_fuzzer.c — libFuzzer target for the split wire format (docs/split-format.md, read by
** src/scan/split.c): dk_split_read parses the input (magic, plan, tasks; the schema JSON and
** the residual filter text through their own parsers), and a split that parses exports its
** schema and is read: every batch must have the schema's column count and a length, every
** failure a clean status with a message (DK_INTERNAL counts as a bug). Crashes, leaks and
** sanitizer reports are the bugs.
**
** Reading touches files: only splits whose table root is one of the repository's test tables
** (relative: "tests/unit/data/" or "../shared/testdata/", so run from the repository root, as
** `make test-fuzz` does) and whose bytes name no device, /proc or /sys path are read (at most
** 64 batches); the others are only parsed. The seed corpus (fuzz/corpora/split/) holds splits
** of corpus tables with their roots rewritten that way (see docs/split-format.md).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dk/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_clean(dk_status s, const dk_error *err) {
  if (s == DK_OK) return;
  if (s == DK_INTERNAL || err->code != s || !err->message[0]) {
    fprintf(stderr, "split_fuzzer: unclean error %d (err %d: %s)\n", (int)s, (int)err->code,
            err->message);
    abort();
  }
}

static int has(const uint8_t *d, size_t n, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= n; i++)
    if (!memcmp(d + i, word, w)) return 1;
  return 0;
}

/* The root string (u32 length + bytes after the 8-byte magic) names a test table. */
static int readable(const uint8_t *d, size_t n) {
  if (n < 12) return 0;
  uint32_t len = (uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16 |
                 (uint32_t)d[11] << 24;
  if (len > n - 12) return 0;
  const char *root = (const char *)d + 12;
  int ok = (len >= 16 && !memcmp(root, "tests/unit/data/", 16)) ||
           (len >= 19 && !memcmp(root, "../shared/testdata/", 19));
  return ok && !has(d, n, "/dev") && !has(d, n, "/proc") && !has(d, n, "/sys") &&
         !has(d, n, "file:");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dk_error err;
  dk_error_init(&err);
  struct ArrowArrayStream st;
  memset(&st, 0, sizeof st);
  dk_status s = dk_split_read(&st, data, size, NULL, &err);
  check_clean(s, &err);
  if (s != DK_OK) return 0;
  struct ArrowSchema sc;
  if (st.get_schema(&st, &sc) != 0) abort(); /* a parsed split knows its schema */
  int64_t ncols = sc.n_children;
  sc.release(&sc);
  for (int i = 0; readable(data, size) && i < 64; i++) {
    struct ArrowArray a;
    int rc = st.get_next(&st, &a);
    if (rc) {
      const char *m = st.get_last_error(&st);
      if (!m || !m[0]) abort();
      break;
    }
    if (!a.release) break;
    if (a.n_children != ncols || a.length <= 0) abort();
    a.release(&a);
  }
  st.release(&st);
  return 0;
}
