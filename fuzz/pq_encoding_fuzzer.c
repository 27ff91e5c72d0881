/*
** pq_encoding_fuzzer.c — feeds arbitrary bytes to every Parquet page codec and value decoder
** of src/codec/parquet/encoding.h with bounded output sizes.
**
** Input: [mode][p1][p2 lo][p2 hi][payload...]; mode picks the decoder, p1 a bit width /
** codec / value width, p2 a value count or output size. Every call must return DK_OK or
** DK_CORRUPT (DK_UNSUPPORTED for codecs we lack) and never touch memory outside its buffers.
*/
#include <stdio.h>
#include <stdlib.h>

#include "codec/parquet/encoding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(dk_status st, const dk_error *err) {
  if (st != DK_OK && st != DK_CORRUPT && st != DK_UNSUPPORTED) {
    fprintf(stderr, "unexpected status %d: %s\n", (int)st, err->message);
    abort();
  }
  if (st != DK_OK && err->message[0] == 0) {
    fprintf(stderr, "error without a message\n");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  const int mode = data[0] % 13, p1 = data[1];
  const int64_t p2 = (int64_t)data[2] | ((int64_t)data[3] << 8); /* 0..65535 */
  const size_t len = size - 4;
  uint8_t *in = malloc(len ? len : 1); /* exact size, so sanitizers see over-reads */
  if (len) memcpy(in, data + 4, len);
  dk_error err = {0};
  dk_buf buf, scratch;
  dk__buf_init(&buf, NULL);
  dk__buf_init(&scratch, NULL);
  const int64_t n = p2 % 4097;
  switch (mode) {
    case 0: { /* codecs: p2 is the uncompressed size */
      uint8_t *out = malloc((size_t)p2 + 1);
      check(dk_pq__decompress(p1 % 9, in, len, out, (size_t)p2, &err), &err);
      free(out);
      break;
    }
    case 1:
    case 2: { /* RLE hybrid, values then dictionary indices (dictionary size p1 * 16) */
      uint32_t *out = malloc((size_t)(n + 1) * sizeof(uint32_t));
      dk_pq_rle r;
      dk_pq__rle_init(&r, in, len, p1 % 33);
      dk_status st = DK_OK;
      for (int64_t done = 0; done < n && st == DK_OK;) {
        int64_t k = DK_MIN(n - done, 1 + done % 37);
        st = mode == 1 ? dk_pq__rle_get(&r, out + done, k, &err)
                       : dk_pq__rle_get_indices(&r, out + done, k, (uint32_t)p1 * 16, &err);
        done += k;
      }
      check(st, &err);
      free(out);
      break;
    }
    case 3:
    case 4: { /* DELTA_BINARY_PACKED as int64 / int32, in uneven chunks */
      dk_pq_delta d;
      dk_status st = dk_pq__delta_init(&d, in, len, &err);
      if (st == DK_OK) {
        int64_t total = DK_MIN(dk_pq__delta_total(&d), (int64_t)4096 + p1);
        int64_t *out = malloc((size_t)(total + 1) * sizeof(int64_t));
        for (int64_t done = 0; done < total && st == DK_OK;) {
          int64_t k = DK_MIN(total - done, 1 + (done * 7 + p1) % 300);
          st = mode == 3 ? dk_pq__delta_get64(&d, out + done, k, &err)
                         : dk_pq__delta_get32(&d, (int32_t *)(void *)out + done, k, &err);
          done += k;
        }
        if (st == DK_OK && d.read == d.total && dk_pq__delta_consumed(&d) > len) abort();
        free(out);
      }
      check(st, &err);
      break;
    }
    case 5:
    case 6:
    case 9: { /* DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, PLAIN BYTE_ARRAY */
      int32_t *offs = calloc((size_t)n + 1, sizeof(int32_t));
      offs[0] = p1;
      dk_pq_bytes_out o = {offs + 1, &buf};
      size_t used = 0;
      dk_status st = mode == 5   ? dk_pq__delta_length_byte_array(in, len, n, &o, &scratch, &err)
                     : mode == 6 ? dk_pq__delta_byte_array(in, len, n, &o, &scratch, &err)
                                 : dk_pq__plain_byte_array(in, len, n, &o, &used, &err);
      check(st, &err);
      if (st == DK_OK && (offs[n] - p1 != (int64_t)buf.len || used > len)) abort();
      free(offs);
      break;
    }
    case 7: { /* DELTA_BYTE_ARRAY for FIXED_LEN_BYTE_ARRAY */
      int width = 1 + p1 % 24;
      uint8_t *out = malloc((size_t)n * (size_t)width + 1);
      check(dk_pq__delta_byte_array_fixed(in, len, n, width, out, &scratch, &err), &err);
      free(out);
      break;
    }
    case 8: { /* BYTE_STREAM_SPLIT */
      int width = 1 + p1 % 20;
      int64_t total = (int64_t)(len / (size_t)width) + (p2 & 1);
      int64_t first = total ? (p2 >> 1) % (total + 1) : 0;
      int64_t k = total - first;
      uint8_t *out = malloc((size_t)(k > 0 ? k : 0) * (size_t)width + 1);
      check(dk_pq__byte_stream_split(in, len, width, total, first, k, out, &err), &err);
      free(out);
      break;
    }
    case 10: { /* PLAIN BYTE_ARRAY dictionary index, then a gather through it */
      uint32_t *starts = malloc(((size_t)n + 1) * sizeof(uint32_t));
      uint32_t *lens = malloc(((size_t)n + 1) * sizeof(uint32_t));
      dk_status st = dk_pq__plain_byte_array_index(in, len, n, starts, lens, &err);
      check(st, &err);
      if (st == DK_OK)
        for (int64_t i = 0; i < n; i++)
          if ((size_t)starts[i] + lens[i] > len) abort();
      free(lens);
      free(starts);
      break;
    }
    case 11: { /* raw bit unpacking, n bounded by the bytes present */
      int w = p1 % 65;
      int64_t k = w ? (int64_t)(len * 8 / (size_t)w) : n;
      k = DK_MIN(k, n);
      uint64_t *out = malloc((size_t)(k + 1) * sizeof(uint64_t));
      uint32_t *o32 = malloc((size_t)(DK_MAX(k, n) + 1) * sizeof(uint32_t));
      size_t used;
      check(dk_pq__bitpacked_msb(in, len, p1 % 40, o32, n, &used, &err), &err);
      dk_pq__unpack64(in, w, out, k);
      /* differential: 32-bit kernels, and the read-ahead variant over the whole input */
      if (w <= 32) {
        dk_pq__unpack32(in, w, o32, k);
        for (int64_t i = 0; i < k; i++)
          if (o32[i] != (uint32_t)out[i]) abort();
        dk_pq__unpack32_avail(in, len, w, o32, k);
        for (int64_t i = 0; i < k; i++)
          if (o32[i] != (uint32_t)out[i]) abort();
      }
      if (k > 0 && w > 0) { /* bit-by-bit reference for the last value */
        uint64_t v = 0;
        for (int j = 0; j < w; j++) {
          uint64_t bit = (uint64_t)(k - 1) * (uint64_t)w + (uint64_t)j;
          v |= (uint64_t)((in[bit >> 3] >> (bit & 7)) & 1) << j;
        }
        if (v != out[k - 1]) abort();
      }
      free(o32);
      free(out);
      break;
    }
    case 12: { /* PLAIN BOOLEAN and a dictionary gather of the result */
      int64_t first = p1 % 8;
      int64_t k = len * 8 > (size_t)first ? (int64_t)(len * 8) - first : 0;
      k = DK_MIN(k, n);
      uint8_t *out = malloc((size_t)k + 1);
      dk_pq__plain_bool(in, first, out, k);
      if (len >= 2 && len <= 512 && k > 0) {
        uint32_t *idx = malloc((size_t)k * sizeof(uint32_t));
        for (int64_t i = 0; i < k; i++) idx[i] = out[i]; /* 0/1 into a 2-entry dictionary */
        uint8_t *g = malloc((size_t)k * (size_t)(len / 2));
        dk_pq__gather(in, (int)(len / 2), idx, k, g);
        free(g);
        free(idx);
      }
      free(out);
      break;
    }
  }
  dk__buf_dispose(&buf);
  dk__buf_dispose(&scratch);
  free(in);
  return 0;
}
