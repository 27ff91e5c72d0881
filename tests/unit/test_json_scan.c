/* test_json_scan.c — the portable (SWAR) string scanner of json_internal.h, compiled here
** without SSE2 so that non-x86 targets' code path is tested on this machine too.
** Oracle: a byte-at-a-time scan by the definition ('"', '\\', < 0x20, >= 0x80). */
#undef __SSE2__
#include "codec/json/json_internal.h"
#include "test.h"

static const char *reference(const char *p, const char *end) {
  for (; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
  }
  return end;
}

DK_TEST(json_scan__swar_matches_definition) {
  char buf[64];
  uint32_t seed = 1;
  for (int iter = 0; iter < 200000; iter++) {
    seed = seed * 1664525u + 1013904223u;
    int len = (int)(seed >> 26); /* 0..63 */
    for (int i = 0; i < len; i++) {
      seed = seed * 1664525u + 1013904223u;
      /* mostly plain ASCII, sometimes a special byte or a byte next to a boundary */
      unsigned r = seed >> 24;
      static const unsigned char pick[] = {'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x7f, 0x80,
                                           0xff, 0x5b, 0x5d, 0x23, 0x22 ^ 0x80, 0x5c ^ 0x80};
      buf[i] = (char)(r < 240 ? 'a' + r % 26 : pick[r % sizeof pick]);
    }
    int start = len ? (int)(seed % (unsigned)(len + 1)) : 0;
    const char *got = dk__json_find_special(buf + start, buf + len);
    const char *want = reference(buf + start, buf + len);
    if (got != want) {
      dk_test_fail(__FILE__, __LINE__, "iteration %d: got offset %d, want %d", iter,
                   (int)(got - buf), (int)(want - buf));
      return;
    }
  }
}
