/*
** bitpack.c — Parquet bit unpacking (LSB-first packing of fixed-width unsigned integers),
** as used by the RLE/bit-packed hybrid and DELTA_BINARY_PACKED (apache/parquet-format
** Encodings.md, "Bit-packed" / "RLE").
**
** Values are unpacked 8 at a time (one group of 8 values occupies exactly bit_width bytes).
** Each bit width has its own kernel, specialised by the compiler from one always-inline
** template, so every shift and mask is a constant. Kernels load 8 bytes (or 16 for widths
** over 56) little-endian at each value's byte offset; groups too close to the end of the
** input to allow those over-reads are copied into a zero-padded local buffer first.
*/
#include "codec/parquet/encoding.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "bitpack.c assumes a little-endian host"
#endif

#if defined(__clang__)
#  define BP_INLINE static inline __attribute__((always_inline))
#  define BP_UNROLL8 _Pragma("unroll 8")
#elif defined(__GNUC__)
#  define BP_INLINE static inline __attribute__((always_inline))
#  define BP_UNROLL8 _Pragma("GCC unroll 8")
#else
#  define BP_INLINE static inline
#  define BP_UNROLL8
#endif

BP_INLINE uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* One group of 8 values of width w (0 < w <= 32) from in[0..w+8) into out[0..8). */
BP_INLINE void unpack8_32(const uint8_t *in, uint32_t *out, const int w) {
  const uint64_t mask = (w == 32) ? 0xffffffffu : ((1ull << w) - 1);
  BP_UNROLL8
  for (int j = 0; j < 8; j++) {
    const int bit = j * w;
    out[j] = (uint32_t)((load64(in + (bit >> 3)) >> (bit & 7)) & mask);
  }
}

/* One group of 8 values of width w (0 < w <= 64) from in[0..w+16) into out[0..8). */
BP_INLINE void unpack8_64(const uint8_t *in, uint64_t *out, const int w) {
  const uint64_t mask = (w == 64) ? ~0ull : ((1ull << w) - 1);
  BP_UNROLL8
  for (int j = 0; j < 8; j++) {
    const int bit = j * w, s = bit & 7;
    const uint8_t *p = in + (bit >> 3);
    uint64_t v = load64(p) >> s;
    if (w + s > 64) v |= load64(p + 8) << (64 - s);
    out[j] = v & mask;
  }
}

/* Slack bytes a kernel may read past a group's own w bytes. */
#define SLACK32 8
#define SLACK64 16

/* Unpacks `groups` whole groups from in (which holds groups*w + slack readable bytes). */
#define DEFINE_RUN(name, T, kernel)                                                     \
  BP_INLINE void name(const uint8_t *in, T *out, int64_t groups, const int w) {         \
    for (int64_t g = 0; g < groups; g++) kernel(in + g * w, out + g * 8, w);             \
  }
DEFINE_RUN(run32, uint32_t, unpack8_32)
DEFINE_RUN(run64, uint64_t, unpack8_64)

/* Generic driver for one width: whole groups in place while the slack bytes are readable,
** then the rest through a zero-padded copy. `avail` (>= ceil(n*w/8)) is how many bytes at in
** are readable; callers inside a longer buffer pass more so the fast path runs to the end. */
BP_INLINE void unpack32_w(const uint8_t *in, uint32_t *out, int64_t n, int64_t avail,
                          const int w) {
  int64_t fast = avail >= SLACK32 ? (avail - SLACK32) / w : 0;
  if (fast > n / 8) fast = n / 8;
  run32(in, out, fast, w);
  int64_t done = fast * 8;
  while (done < n) {
    uint8_t buf[32 * 10 + SLACK32];
    uint32_t tmp[80];
    int64_t chunk = n - done > 80 ? 80 : n - done;
    int64_t groups = (chunk + 7) / 8;
    int64_t at = (done / 8) * w;
    int64_t bytes = avail - at < groups * w ? avail - at : groups * w;
    memcpy(buf, in + at, (size_t)bytes);
    memset(buf + bytes, 0, (size_t)(groups * w + SLACK32 - bytes));
    run32(buf, tmp, groups, w);
    memcpy(out + done, tmp, (size_t)chunk * sizeof(uint32_t));
    done += chunk;
  }
}

BP_INLINE void unpack64_w(const uint8_t *in, uint64_t *out, int64_t n, int64_t avail,
                          const int w) {
  int64_t fast = avail >= SLACK64 ? (avail - SLACK64) / w : 0;
  if (fast > n / 8) fast = n / 8;
  run64(in, out, fast, w);
  int64_t done = fast * 8;
  while (done < n) {
    uint8_t buf[64 * 10 + SLACK64];
    uint64_t tmp[80];
    int64_t chunk = n - done > 80 ? 80 : n - done;
    int64_t groups = (chunk + 7) / 8;
    int64_t at = (done / 8) * w;
    int64_t bytes = avail - at < groups * w ? avail - at : groups * w;
    memcpy(buf, in + at, (size_t)bytes);
    memset(buf + bytes, 0, (size_t)(groups * w + SLACK64 - bytes));
    run64(buf, tmp, groups, w);
    memcpy(out + done, tmp, (size_t)chunk * sizeof(uint64_t));
    done += chunk;
  }
}

#define W_FN32(w)                                                                    \
  static void unpack32_##w(const uint8_t *in, uint32_t *out, int64_t n, int64_t avail) { \
    unpack32_w(in, out, n, avail, w);                                                \
  }
#define W_FN64(w)                                                                    \
  static void unpack64_##w(const uint8_t *in, uint64_t *out, int64_t n, int64_t avail) { \
    unpack64_w(in, out, n, avail, w);                                                \
  }

#define LIST_1_32(X)                                                                            \
  X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17)  \
  X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
#define LIST_33_63(X)                                                                           \
  X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47)     \
  X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63)

LIST_1_32(W_FN32)
LIST_1_32(W_FN64)
W_FN64(32)
LIST_33_63(W_FN64)

typedef void (*unpack32_fn)(const uint8_t *, uint32_t *, int64_t, int64_t);
typedef void (*unpack64_fn)(const uint8_t *, uint64_t *, int64_t, int64_t);

#define ENTRY32(w) unpack32_##w,
#define ENTRY64(w) unpack64_##w,
static const unpack32_fn k_unpack32[33] = {NULL, LIST_1_32(ENTRY32) NULL};
static const unpack64_fn k_unpack64[65] = {NULL, LIST_1_32(ENTRY64) unpack64_32,
                                           LIST_33_63(ENTRY64) NULL};

void dk_pq__unpack32_avail(const uint8_t *in, size_t avail, int bit_width, uint32_t *out,
                          int64_t n) {
  if (n <= 0) return;
  DK_DCHECK(bit_width >= 0 && bit_width <= 32);
  DK_DCHECK(avail >= (size_t)((n * bit_width + 7) / 8));
  if (bit_width <= 0) {
    memset(out, 0, (size_t)n * sizeof(uint32_t));
  } else if (bit_width >= 32) {
    memcpy(out, in, (size_t)n * sizeof(uint32_t));
  } else {
    k_unpack32[bit_width](in, out, n, (int64_t)DK_MIN(avail, (size_t)INT64_MAX));
  }
}

void dk_pq__unpack64_avail(const uint8_t *in, size_t avail, int bit_width, uint64_t *out,
                          int64_t n) {
  if (n <= 0) return;
  DK_DCHECK(bit_width >= 0 && bit_width <= 64);
  DK_DCHECK(avail >= (size_t)((n * bit_width + 7) / 8));
  if (bit_width <= 0) {
    memset(out, 0, (size_t)n * sizeof(uint64_t));
  } else if (bit_width >= 64) {
    memcpy(out, in, (size_t)n * sizeof(uint64_t));
  } else {
    k_unpack64[bit_width](in, out, n, (int64_t)DK_MIN(avail, (size_t)INT64_MAX));
  }
}

void dk_pq__unpack32(const uint8_t *in, int bit_width, uint32_t *out, int64_t n) {
  if (n > 0) dk_pq__unpack32_avail(in, (size_t)((n * bit_width + 7) / 8), bit_width, out, n);
}

void dk_pq__unpack64(const uint8_t *in, int bit_width, uint64_t *out, int64_t n) {
  if (n > 0) dk_pq__unpack64_avail(in, (size_t)((n * bit_width + 7) / 8), bit_width, out, n);
}
