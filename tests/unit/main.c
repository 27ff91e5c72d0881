/*
** main.c — the unit-test runner behind test.h.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

typedef struct {
  const char *name;
  const char *file;
  dk_test_fn fn;
} test_entry;

static test_entry g_tests[4096];
static int g_ntests;
static int g_failed_current;
static char g_tmpdir[4096];
static char g_root_tmp[4096];

void dk_test_register(const char *name, const char *file, dk_test_fn fn) {
  if (g_ntests < (int)(sizeof g_tests / sizeof g_tests[0]))
    g_tests[g_ntests++] = (test_entry){name, file, fn};
}

void dk_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  g_failed_current = 1;
}

const char *dk_test_data_dir(void) {
  const char *d = getenv("DK_TESTDATA");
  return d ? d : DK_DEFAULT_TESTDATA;
}

const char *dk_test_tmpdir(void) {
  if (!g_tmpdir[0]) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/t%d", g_root_tmp, rand());
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_tmpdir);
    if (system(cmd) != 0) return "/tmp";
  }
  return g_tmpdir;
}

int64_t dk_test_count_lines(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  int64_t n = 0;
  int c, last = '\n';
  while ((c = fgetc(f)) != EOF) {
    if (c == '\n') n++;
    last = c;
  }
  if (last != '\n') n++;
  fclose(f);
  return n;
}

static int cmp_cstr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void dk_test_snapshot_paths(const struct dk_snapshot *s, const char *sep, char *out, size_t cap) {
  int64_t n = dk_snapshot_num_files(s);
  const char **p = calloc((size_t)n + 1, sizeof *p);
  for (int64_t i = 0; p && i < n; i++) {
    dk_file_entry f;
    CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, NULL));
    p[i] = f.path;
  }
  if (p) qsort(p, (size_t)n, sizeof *p, cmp_cstr);
  out[0] = 0;
  for (int64_t i = 0; p && i < n; i++) {
    if (i > 0) strncat(out, sep, cap - strlen(out) - 1);
    strncat(out, p[i], cap - strlen(out) - 1);
  }
  free(p);
}

static int cmp_tests(const void *a, const void *b) {
  return strcmp(((const test_entry *)a)->name, ((const test_entry *)b)->name);
}

int main(int argc, char **argv) {
  const char *filter = NULL;
  int verbose = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc)
      filter = argv[++i];
    else if (!strcmp(argv[i], "-v"))
      verbose = 1;
    else if (!strcmp(argv[i], "-l")) {
      for (int j = 0; j < g_ntests; j++) printf("%s\n", g_tests[j].name);
      return 0;
    }
  }
  snprintf(g_root_tmp, sizeof g_root_tmp, "/tmp/dk_unit_XXXXXX");
  if (!mkdtemp(g_root_tmp)) snprintf(g_root_tmp, sizeof g_root_tmp, "/tmp");
  qsort(g_tests, (size_t)g_ntests, sizeof g_tests[0], cmp_tests);
  int passed = 0, failed = 0;
  for (int i = 0; i < g_ntests; i++) {
    if (filter && !strstr(g_tests[i].name, filter)) continue;
    g_failed_current = 0;
    g_tmpdir[0] = 0;
    if (verbose) fprintf(stderr, "%s\n", g_tests[i].name);
    g_tests[i].fn();
    if (g_failed_current) {
      fprintf(stderr, "FAILED %s (%s)\n", g_tests[i].name, g_tests[i].file);
      failed++;
    } else {
      passed++;
    }
  }
  char cmd[4200];
  if (strcmp(g_root_tmp, "/tmp") != 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root_tmp);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

/* Reads a whole local file into *out (dk__malloc'd, NUL-terminated): test fixtures only;
** libdk reads through dk_storage. */
dk_status dk__read_file(const dk_allocator *a, const char *path, char **out, size_t *len,
                        dk_error *err) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return dk__error_set(err, errno == ENOENT ? DK_NOT_FOUND : DK_IO, "%s: cannot open: %s",
                         path, strerror(errno));
  dk_buf b;
  dk__buf_init(&b, a);
  char tmp[65536];
  size_t n;
  dk_status st = DK_OK;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
    st = dk__buf_append(&b, tmp, n, err);
    if (st) break;
  }
  if (!st && ferror(f)) st = dk__error_set(err, DK_IO, "%s: read failed", path);
  fclose(f);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  if (!b.data) DK_RETURN_NOT_OK(dk__buf_reserve(&b, 1, err));
  *len = b.len;
  *out = dk__buf_detach(&b);
  return DK_OK;
}
