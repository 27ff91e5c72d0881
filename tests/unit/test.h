/*
** test.h — a tiny clar-style C unit-test runner (one toolchain, no C++).
**
** DK_TEST(module__case) { ... CHECK(x); CHECK_EQ_INT(a, b); CHECK_OK(status, &err); }
** Tests self-register through constructors; `dk_unit [-s filter] [-v]` runs those whose name
** contains the filter and ends with the line "N passed, N failed".
*/
#ifndef DK_TEST_H
#define DK_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dk/common.h"

typedef void (*dk_test_fn)(void);
void dk_test_register(const char *name, const char *file, dk_test_fn fn);
void dk_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline const char *dk_test_errmsg(const dk_error *e) { return e ? e->message : ""; }
/* Directory of the shared test corpus (../shared/testdata by default, or $DK_TESTDATA). */
const char *dk_test_data_dir(void);
/* A fresh temporary directory for this test (removed at exit). */
const char *dk_test_tmpdir(void);
/* Lines in a text file (a last line without '\n' counts), or -1 when it cannot be read. */
int64_t dk_test_count_lines(const char *path);
/* Reads a whole local file into *out (freed with dk__free(a, *out)), NUL-terminated. */
dk_status dk__read_file(const dk_allocator *a, const char *path, char **out, size_t *len,
                        dk_error *err);
/* The live file paths of a snapshot, sorted and joined by sep (truncated to cap). */
struct dk_snapshot;
void dk_test_snapshot_paths(const struct dk_snapshot *s, const char *sep, char *out, size_t cap);

#define DK_TEST(name)                                                           \
  static void name(void);                                                       \
  __attribute__((constructor)) static void name##__register(void) {            \
    dk_test_register(#name, __FILE__, name);                                    \
  }                                                                             \
  static void name(void)

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      dk_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);    \
      return;                                                          \
    }                                                                  \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                 \
  do {                                                                                     \
    long long dk_a_ = (long long)(a), dk_b_ = (long long)(b);                              \
    if (dk_a_ != dk_b_) {                                                                  \
      dk_test_fail(__FILE__, __LINE__, "%s == %s failed: %lld != %lld", #a, #b, dk_a_, dk_b_); \
      return;                                                                              \
    }                                                                                      \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                                 \
  do {                                                                                     \
    const char *dk_a_ = (a), *dk_b_ = (b);                                                 \
    if (!dk_a_ || !dk_b_ || strcmp(dk_a_, dk_b_) != 0) {                                   \
      dk_test_fail(__FILE__, __LINE__, "%s == %s failed: \"%s\" != \"%s\"", #a, #b,        \
                   dk_a_ ? dk_a_ : "(null)", dk_b_ ? dk_b_ : "(null)");                    \
      return;                                                                              \
    }                                                                                      \
  } while (0)

#define CHECK_OK(expr, errp)                                                               \
  do {                                                                                     \
    dk_status dk_s_ = (expr);                                                              \
    if (dk_s_ != DK_OK) {                                                                  \
      dk_test_fail(__FILE__, __LINE__, "%s returned %s: %s", #expr, dk_status_str(dk_s_),  \
                   dk_test_errmsg(errp));                                         \
      return;                                                                              \
    }                                                                                      \
  } while (0)

/* Records a failure when expr is not DK_OK but carries on (for helpers that return values). */
#define CHECK_OK_SOFT(expr)                                                                \
  do {                                                                                     \
    dk_status dk_s_ = (expr);                                                              \
    if (dk_s_ != DK_OK)                                                                    \
      dk_test_fail(__FILE__, __LINE__, "%s returned %s", #expr, dk_status_str(dk_s_));     \
  } while (0)

#define CHECK_STATUS(expr, want)                                                            \
  do {                                                                                      \
    dk_status dk_s_ = (expr);                                                               \
    if (dk_s_ != (want)) {                                                                  \
      dk_test_fail(__FILE__, __LINE__, "%s returned %s, wanted %s", #expr,                  \
                   dk_status_str(dk_s_), dk_status_str(want));                              \
      return;                                                                               \
    }                                                                                       \
  } while (0)

#endif
