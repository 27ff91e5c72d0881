/*
** z85.c — Z85 text encoding (ZeroMQ RFC 32/Z85), as Delta uses it for inline deletion
** vectors and the UUIDs of DV file names (PROTOCOL.md § Deletion Vector Descriptor Schema).
**
** How it works: every 4 bytes, read as a big-endian 32-bit number, become 5 characters of
** the 85-character alphabet, most significant digit first. Decoding reverses this and
** rejects text whose length is not a multiple of 5, characters outside the alphabet and
** groups whose value exceeds 2^32-1 (85^5 > 2^32, so some 5-character groups are illegal).
*/
#include "dv/dv.h"

static const char z85_alphabet[86] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/* Digit value of the printable bytes 32..127 (BAD when not in the alphabet). A const
 * table keeps decoding free of initialisation races; test_dv checks it against the
 * alphabet for all 256 byte values. */
#define BAD 0xFF
static const uint8_t z85_digit[96] = {
    BAD,  68, BAD,  84,  83,  82,  72, BAD,  75,  76,  70,  65, BAD,  63,  62,  69,
      0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  64, BAD,  73,  66,  74,  71,
     81,  36,  37,  38,  39,  40,  41,  42,  43,  44,  45,  46,  47,  48,  49,  50,
     51,  52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  77, BAD,  78,  67, BAD,
    BAD,  10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,
     25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  79, BAD,  80, BAD, BAD,
};

static inline uint8_t z85_digit_of(unsigned char c) {
  return c >= 32 && c < 128 ? z85_digit[c - 32] : BAD;
}

static void z85_encode_group(char *dst, uint32_t v) {
  for (int i = 4; i >= 0; i--) {
    dst[i] = z85_alphabet[v % 85];
    v /= 85;
  }
}

dk_status dk_dv__z85_encode(dk_buf *out, const uint8_t *data, size_t n, dk_error *err) {
  DK_RETURN_IF(n % 4 != 0, DK_INVALID, err, "z85: input length %zu is not a multiple of 4",
               n);
  DK_RETURN_NOT_OK(dk__buf_reserve(out, n / 4 * 5, err));
  char *dst = out->data + out->len;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = (uint32_t)data[i] << 24 | (uint32_t)data[i + 1] << 16 |
                 (uint32_t)data[i + 2] << 8 | data[i + 3];
    z85_encode_group(dst, v);
    dst += 5;
  }
  out->len += n / 4 * 5;
  out->data[out->len] = 0;
  return DK_OK;
}

dk_status dk_dv__z85_encode_padded(dk_buf *out, const uint8_t *data, size_t n, dk_error *err) {
  size_t whole = n / 4 * 4;
  DK_RETURN_NOT_OK(dk_dv__z85_encode(out, data, whole, err));
  if (whole == n) return DK_OK;
  uint8_t last[4] = {0, 0, 0, 0};
  memcpy(last, data + whole, n - whole);
  return dk_dv__z85_encode(out, last, 4, err);
}

dk_status dk_dv__z85_decode(dk_buf *out, const char *text, size_t len, dk_error *err) {
  DK_RETURN_IF(len % 5 != 0, DK_CORRUPT, err,
               "z85: text length %zu is not a multiple of 5", len);
  DK_RETURN_NOT_OK(dk__buf_reserve(out, len / 5 * 4, err));
  uint8_t *dst = (uint8_t *)out->data + out->len;
  for (size_t i = 0; i < len; i += 5) {
    uint64_t v = 0;
    for (size_t j = 0; j < 5; j++) {
      uint8_t d = z85_digit_of((unsigned char)text[i + j]);
      DK_RETURN_IF(d == BAD, DK_CORRUPT, err,
                   "z85: character 0x%02x at offset %zu is not in the alphabet",
                   (unsigned)(uint8_t)text[i + j], i + j);
      v = v * 85 + d;
    }
    DK_RETURN_IF(v > UINT32_MAX, DK_CORRUPT, err,
                 "z85: group at offset %zu exceeds 32 bits", i);
    dst[0] = (uint8_t)(v >> 24);
    dst[1] = (uint8_t)(v >> 16);
    dst[2] = (uint8_t)(v >> 8);
    dst[3] = (uint8_t)v;
    dst += 4;
  }
  out->len += len / 5 * 4;
  out->data[out->len] = 0;
  return DK_OK;
}
