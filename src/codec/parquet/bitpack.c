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

#if defined(__GNUC__)
#  define BP_INLINE static inline __attribute__((always_inline))
#else
#  define BP_INLINE static inline
#endif

BP_INLINE uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* One group of 8 values of width w (0 < w <= 32) from in[0..w+8) into out[0..8). */
BP_INLINE void unpack8_32(const uint8_t *in, uint32_t *out, const int w) {
  const uint64_t mask = (w == 32) ? 0xffffffffu : ((1ull << w) - 1);
  for (int j = 0; j < 8; j++) {
    const int bit = j * w;
    out[j] = (uint32_t)((load64(in + (bit >> 3)) >> (bit & 7)) & mask);
  }
}

/* One group of 8 values of width w (0 < w <= 64) from in[0..w+16) into out[0..8). */
BP_INLINE void unpack8_64(const uint8_t *in, uint64_t *out, const int w) {
  const uint64_t mask = (w == 64) ? ~0ull : ((1ull << w) - 1);
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

/* Generic driver for one width: fast groups in place, then the tail via a padded copy. */
BP_INLINE void unpack32_w(const uint8_t *in, uint32_t *out, int64_t n, const int w) {
  const int64_t avail = (n * w + 7) >> 3; /* bytes the caller guarantees */
  int64_t fast = (avail - SLACK32) / w;   /* groups g with (g+1)*w + SLACK32 <= avail */
  if (fast < 0) fast = 0;
  if (fast > n / 8) fast = n / 8;
  run32(in, out, fast, w);
  int64_t done = fast * 8;
  while (done < n) {
    /* at most 8 + 64 values remain: copy their bytes into a padded buffer */
    uint8_t buf[32 * 11 + SLACK32] = {0};
    uint32_t tmp[88];
    int64_t left = n - done;
    int64_t chunk = left > 80 ? 80 : left;
    int64_t groups = (chunk + 7) / 8;
    const uint8_t *src = in + (done / 8) * w;
    int64_t bytes = avail - (done / 8) * w;
    if (bytes > groups * w) bytes = groups * w;
    memcpy(buf, src, (size_t)bytes);
    run32(buf, tmp, groups, w);
    memcpy(out + done, tmp, (size_t)chunk * sizeof(uint32_t));
    done += chunk;
  }
}

BP_INLINE void unpack64_w(const uint8_t *in, uint64_t *out, int64_t n, const int w) {
  const int64_t avail = (n * w + 7) >> 3;
  int64_t fast = (avail - SLACK64) / w;
  if (fast < 0) fast = 0;
  if (fast > n / 8) fast = n / 8;
  run64(in, out, fast, w);
  int64_t done = fast * 8;
  while (done < n) {
    uint8_t buf[64 * 11 + SLACK64] = {0};
    uint64_t tmp[88];
    int64_t left = n - done;
    int64_t chunk = left > 80 ? 80 : left;
    int64_t groups = (chunk + 7) / 8;
    const uint8_t *src = in + (done / 8) * w;
    int64_t bytes = avail - (done / 8) * w;
    if (bytes > groups * w) bytes = groups * w;
    memcpy(buf, src, (size_t)bytes);
    run64(buf, tmp, groups, w);
    memcpy(out + done, tmp, (size_t)chunk * sizeof(uint64_t));
    done += chunk;
  }
}

#define W_FN32(w) \
  static void unpack32_##w(const uint8_t *in, uint32_t *out, int64_t n) { unpack32_w(in, out, n, w); }
#define W_FN64(w) \
  static void unpack64_##w(const uint8_t *in, uint64_t *out, int64_t n) { unpack64_w(in, out, n, w); }

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

typedef void (*unpack32_fn)(const uint8_t *, uint32_t *, int64_t);
typedef void (*unpack64_fn)(const uint8_t *, uint64_t *, int64_t);

#define ENTRY32(w) unpack32_##w,
#define ENTRY64(w) unpack64_##w,
static const unpack32_fn k_unpack32[33] = {NULL, LIST_1_32(ENTRY32) NULL};
static const unpack64_fn k_unpack64[65] = {NULL, LIST_1_32(ENTRY64) unpack64_32,
                                           LIST_33_63(ENTRY64) NULL};

void dk_pq_unpack32(const uint8_t *in, int bit_width, uint32_t *out, int64_t n) {
  if (n <= 0) return;
  DK_DCHECK(bit_width >= 0 && bit_width <= 32);
  if (bit_width <= 0) {
    memset(out, 0, (size_t)n * sizeof(uint32_t));
  } else if (bit_width >= 32) {
    memcpy(out, in, (size_t)n * sizeof(uint32_t));
  } else {
    k_unpack32[bit_width](in, out, n);
  }
}

void dk_pq_unpack64(const uint8_t *in, int bit_width, uint64_t *out, int64_t n) {
  if (n <= 0) return;
  DK_DCHECK(bit_width >= 0 && bit_width <= 64);
  if (bit_width <= 0) {
    memset(out, 0, (size_t)n * sizeof(uint64_t));
  } else if (bit_width >= 64) {
    memcpy(out, in, (size_t)n * sizeof(uint64_t));
  } else {
    k_unpack64[bit_width](in, out, n);
  }
}
