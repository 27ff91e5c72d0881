/*
** dv_fuzzer.c — libFuzzer target for the deletion-vector parsers (PROTOCOL.md § Deletion
** Vector Format, § Deletion Vector File Storage Format, Z85 of § Descriptor Schema).
**
** The first input byte picks the entry point, the rest is its input:
**   0: dk_dv__decode_bitmap (a serialized RoaringBitmapArray)
**   1: dk_dv__decode_file_range (size, bitmap, CRC-32 as stored in a DV file)
**   2: Z85 text of an inline DV: dk_dv__z85_decode, then the bitmap decoder on the decoded bytes
**      less 0..3 bytes of padding; a successful Z85 decode must re-encode to the same text.
** Whenever a DV decodes, the queries are run and must agree with each other (trap if not):
** the foreach count, the cardinality, range cardinalities, both selection fillers, contains.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dv/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(x) \
  do {                 \
    if (!(x)) abort(); \
  } while (0)

typedef struct fuzz_rows {
  uint64_t count;   /* rows visited */
  int64_t last;     /* previous row (ascending order check) */
  int64_t first;    /* first row, for the range checks */
} fuzz_rows;

static dk_status fuzz_row(int64_t row, void *payload) {
  fuzz_rows *r = payload;
  FUZZ_ASSERT(row > r->last && row >= 0);
  if (r->count == 0) r->first = row;
  r->last = row;
  r->count++;
  return DK_OK;
}

static void fuzz_queries(const dk_dv *dv) {
  fuzz_rows r = {0, -1, 0};
  FUZZ_ASSERT(dk_dv__foreach(dv, fuzz_row, &r) == DK_OK);
  FUZZ_ASSERT(r.count == dk_dv__cardinality(dv));
  FUZZ_ASSERT(dk_dv__range_cardinality(dv, 0, INT64_MAX) == r.count);
  if (r.count == 0) return;
  FUZZ_ASSERT(dk_dv__contains(dv, r.first) && dk_dv__contains(dv, r.last));
  FUZZ_ASSERT(r.first == 0 || !dk_dv__contains(dv, r.first - 1));
  /* A window around the first deleted row, in bytes and in bits. */
  enum { W = 4096 };
  static uint8_t keep[W], bits[W / 8];
  int64_t start = r.first > 100 ? r.first - 100 : 0;
  memset(keep, 1, sizeof keep);
  memset(bits, 0xFF, sizeof bits);
  uint64_t a = dk_dv__fill_selection(dv, start, W, keep);
  uint64_t b = dk_dv__fill_selection_bits(dv, start, W, bits);
  FUZZ_ASSERT(a == b && a == dk_dv__range_cardinality(dv, start, W) && a >= 1);
  uint64_t zeros = 0;
  for (int i = 0; i < W; i++) {
    int del = dk_dv__contains(dv, start + i);
    FUZZ_ASSERT(keep[i] == !del && ((bits[i / 8] >> (i % 8)) & 1) == !del);
    zeros += (uint64_t)del;
  }
  FUZZ_ASSERT(zeros == a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int mode = data[0] % 3;
  data++, size--;
  dk_error err;
  dk_error_init(&err);
  dk_dv *dv = NULL;
  dk_status st = DK_OK;
  if (mode == 0) {
    st = dk_dv__decode_bitmap(&dv, data, size, NULL, &err);
  } else if (mode == 1) {
    int64_t expected = size >= 4 ? (int64_t)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
                                             (uint32_t)data[2] << 8 | data[3])
                                 : 0;
    st = dk_dv__decode_file_range(&dv, data, size, expected, "fuzz", 1, NULL, &err);
  } else {
    dk_buf raw, text;
    dk__buf_init(&raw, NULL);
    dk__buf_init(&text, NULL);
    st = dk_dv__z85_decode(&raw, (const char *)data, size, &err);
    if (st == DK_OK) {
      FUZZ_ASSERT(dk_dv__z85_encode(&text, (const uint8_t *)raw.data, raw.len, &err) == DK_OK);
      FUZZ_ASSERT(text.len == size && (size == 0 || memcmp(text.data, data, size) == 0));
      /* Inline DVs are padded to 4 bytes; sizeInBytes trims 0..3 of them. */
      for (size_t k = 0; k < 4 && k <= raw.len; k++) {
        dk_error_init(&err);
        st = dk_dv__decode_bitmap(&dv, (const uint8_t *)raw.data, raw.len - k, NULL, &err);
        if (st == DK_OK) break;
      }
    }
    dk__buf_dispose(&raw);
    dk__buf_dispose(&text);
  }
  FUZZ_ASSERT(st == DK_OK || st == DK_CORRUPT);
  FUZZ_ASSERT((st == DK_OK) == (dv != NULL));
  if (dv) fuzz_queries(dv);
  dk_dv__free(dv);
  return 0;
}
