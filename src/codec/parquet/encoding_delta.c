/*
** encoding_delta.c — DELTA_BINARY_PACKED (= 5), DELTA_LENGTH_BYTE_ARRAY (= 6) and
** DELTA_BYTE_ARRAY (= 7) decoders (apache/parquet-format Encodings.md).
**
** DELTA_BINARY_PACKED:
**   header := <block size: ULEB> <miniblocks per block: ULEB> <total count: ULEB>
**             <first value: zigzag ULEB>
**   block  := <min delta: zigzag ULEB> <one bit-width byte per miniblock> <miniblocks>
** Each miniblock holds block_size/miniblocks deltas (minus min delta) bit-packed LSB first;
** values are rebuilt with wrapping (two's-complement) arithmetic. In the last block the
** miniblocks no value needs are absent (their width bytes are still present and ignored).
** The last miniblock is padded to full size; a stream cut short inside that padding is still
** accepted for the values it holds.
**
** DELTA_LENGTH_BYTE_ARRAY: DELTA_BINARY_PACKED lengths, then all value bytes back to back.
** DELTA_BYTE_ARRAY: DELTA_BINARY_PACKED prefix lengths, then the suffixes as
** DELTA_LENGTH_BYTE_ARRAY; value i = first prefix[i] bytes of value i-1, then suffix i.
*/
#include "codec/parquet/encoding.h"

/* Unsigned LEB128 of up to 64 bits at *pp (bounded by end). */
static dk_status read_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out,
                           const uint8_t *start, const char *what, dk_error *err) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    DK_RETURN_IF(p >= end, DK_CORRUPT, err,
                 "DELTA_BINARY_PACKED: stream ends inside the %s varint at byte %zu", what,
                 (size_t)(*pp - start));
    DK_RETURN_IF(shift > 63, DK_CORRUPT, err,
                 "DELTA_BINARY_PACKED: %s varint at byte %zu is longer than 10 bytes", what,
                 (size_t)(*pp - start));
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  *pp = p;
  *out = v;
  return DK_OK;
}

static inline uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

dk_status dk_pq__delta_init(dk_pq_delta *d, const uint8_t *p, size_t len, dk_error *err) {
  memset(d, 0, sizeof *d);
  d->start = d->p = p;
  d->end = p + len;
  uint64_t bs, mbs, total, first;
  DK_RETURN_NOT_OK(read_uleb(&d->p, d->end, &bs, p, "block size", err));
  DK_RETURN_NOT_OK(read_uleb(&d->p, d->end, &mbs, p, "miniblock count", err));
  DK_RETURN_NOT_OK(read_uleb(&d->p, d->end, &total, p, "total value count", err));
  DK_RETURN_NOT_OK(read_uleb(&d->p, d->end, &first, p, "first value", err));
  /* The spec asks for multiples of 128 and 32; only byte-aligned miniblocks matter here. */
  DK_RETURN_IF(bs == 0 || bs > (1u << 26), DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: block size out of range");
  DK_RETURN_IF(mbs == 0 || bs % mbs != 0 || (bs / mbs) % 8 != 0, DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: the miniblock count does not divide a block into "
               "multiples of 8 values");
  DK_RETURN_IF(total > INT32_MAX, DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: total value count is too large");
  /* every block after the first value costs at least its min delta byte and one width byte */
  if (total > 1) {
    uint64_t blocks = (total - 1 + bs - 1) / bs;
    DK_RETURN_IF(blocks > (uint64_t)(d->end - d->p) / 2, DK_CORRUPT, err,
                 "DELTA_BINARY_PACKED: the total value count needs more blocks than the %zu "
                 "bytes after the header hold", (size_t)(d->end - d->p));
  }
  d->block_size = bs;
  d->miniblocks = mbs;
  d->mb_size = bs / mbs;
  d->total = (int64_t)total;
  d->last = (int64_t)unzigzag(first);
  d->first_pending = total > 0;
  d->mb_index = mbs; /* forces a block header on the first delta */
  return DK_OK;
}

/* Moves to the next miniblock (reading a block header when the block is done). */
static dk_status delta_next_miniblock(dk_pq_delta *d, dk_error *err) {
  const uint64_t remaining = (uint64_t)(d->total - d->read);
  if (d->mb_index + 1 >= d->miniblocks) {
    uint64_t md;
    DK_RETURN_NOT_OK(read_uleb(&d->p, d->end, &md, d->start, "min delta", err));
    d->min_delta = (int64_t)unzigzag(md);
    size_t avail = (size_t)(d->end - d->p);
    size_t nwidths = (size_t)d->miniblocks;
    if (avail < nwidths) {
      /* tolerate a last block whose unused width bytes were dropped */
      size_t needed = (size_t)((remaining + d->mb_size - 1) / d->mb_size);
      DK_RETURN_IF(avail < needed, DK_CORRUPT, err,
                   "DELTA_BINARY_PACKED: block at byte %zu needs %zu miniblock widths, %zu "
                   "bytes left", (size_t)(d->p - d->start), needed, avail);
      nwidths = avail;
    }
    d->widths = d->p;
    d->p += nwidths;
    d->mb_index = 0;
  } else {
    d->mb_index++;
  }
  const int w = d->widths[d->mb_index];
  DK_RETURN_IF(w > 64, DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: miniblock bit width at byte %zu exceeds 64",
               (size_t)(d->widths + d->mb_index - d->start));
  uint64_t vals = DK_MIN(d->mb_size, remaining);
  uint64_t full = d->mb_size * (uint64_t)w / 8;
  uint64_t need = (vals * (uint64_t)w + 7) / 8;
  uint64_t avail = (uint64_t)(d->end - d->p);
  DK_RETURN_IF(avail < need, DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: miniblock at byte %zu needs %llu bytes, %llu left",
               (size_t)(d->p - d->start), (unsigned long long)need, (unsigned long long)avail);
  d->mb_data = d->p;
  d->p += DK_MIN(full, avail);
  d->mb_left = vals;
  d->mb_pos = 0;
  return DK_OK;
}

/* Unpacks k deltas of the current miniblock from mb_pos into out (width <= 64). */
static void delta_unpack64(dk_pq_delta *d, uint64_t *out, uint64_t k) {
  const int w = d->widths[d->mb_index];
  uint64_t pos = d->mb_pos;
  uint64_t off = pos & 7;
  if (off) {
    uint64_t tmp[8];
    uint64_t m = DK_MIN(8 - off, k);
    const uint8_t *src = d->mb_data + (pos >> 3) * (uint64_t)w;
    dk_pq__unpack64_avail(src, (size_t)(d->end - src), w, tmp, (int64_t)(off + m));
    memcpy(out, tmp + off, (size_t)m * sizeof(uint64_t));
    out += m;
    pos += m;
    k -= m;
  }
  if (k) {
    const uint8_t *src = d->mb_data + (pos >> 3) * (uint64_t)w;
    dk_pq__unpack64_avail(src, (size_t)(d->end - src), w, out, (int64_t)k);
    pos += k;
  }
  d->mb_left -= pos - d->mb_pos;
  d->mb_pos = pos;
}

static void delta_unpack32(dk_pq_delta *d, uint32_t *out, uint64_t k) {
  const int w = d->widths[d->mb_index]; /* <= 32 here */
  uint64_t pos = d->mb_pos;
  uint64_t off = pos & 7;
  if (off) {
    uint32_t tmp[8];
    uint64_t m = DK_MIN(8 - off, k);
    const uint8_t *src = d->mb_data + (pos >> 3) * (uint64_t)w;
    dk_pq__unpack32_avail(src, (size_t)(d->end - src), w, tmp, (int64_t)(off + m));
    memcpy(out, tmp + off, (size_t)m * sizeof(uint32_t));
    out += m;
    pos += m;
    k -= m;
  }
  if (k) {
    const uint8_t *src = d->mb_data + (pos >> 3) * (uint64_t)w;
    dk_pq__unpack32_avail(src, (size_t)(d->end - src), w, out, (int64_t)k);
    pos += k;
  }
  d->mb_left -= pos - d->mb_pos;
  d->mb_pos = pos;
}

static dk_status delta_check_n(const dk_pq_delta *d, int64_t n, dk_error *err) {
  DK_RETURN_IF(n < 0 || n > d->total - d->read, DK_CORRUPT, err,
               "DELTA_BINARY_PACKED: %lld values requested, more than the stream holds",
               (long long)n);
  return DK_OK;
}

dk_status dk_pq__delta_get64(dk_pq_delta *d, int64_t *out, int64_t n, dk_error *err) {
  DK_RETURN_NOT_OK(delta_check_n(d, n, err));
  if (n == 0) return DK_OK;
  uint64_t last = (uint64_t)d->last;
  if (d->first_pending) {
    *out++ = (int64_t)last;
    d->first_pending = 0;
    d->read++;
    n--;
  }
  while (n > 0) {
    if (d->mb_left == 0) DK_RETURN_NOT_OK(delta_next_miniblock(d, err));
    uint64_t k = DK_MIN(d->mb_left, (uint64_t)n);
    uint64_t *u = (uint64_t *)out;
    delta_unpack64(d, u, k);
    const uint64_t md = (uint64_t)d->min_delta;
    for (uint64_t i = 0; i < k; i++) u[i] += md; /* vectorised, off the dependency chain */
    for (uint64_t i = 0; i < k; i++) u[i] = last += u[i];
    out += k;
    n -= (int64_t)k;
    d->read += (int64_t)k;
  }
  d->last = (int64_t)last;
  return DK_OK;
}

dk_status dk_pq__delta_get32(dk_pq_delta *d, int32_t *out, int64_t n, dk_error *err) {
  DK_RETURN_NOT_OK(delta_check_n(d, n, err));
  if (n == 0) return DK_OK;
  /* arithmetic modulo 2^32 is the low half of the 64-bit wrapping arithmetic */
  uint32_t last = (uint32_t)(uint64_t)d->last;
  if (d->first_pending) {
    *out++ = (int32_t)last;
    d->first_pending = 0;
    d->read++;
    n--;
  }
  while (n > 0) {
    if (d->mb_left == 0) DK_RETURN_NOT_OK(delta_next_miniblock(d, err));
    uint64_t k = DK_MIN(d->mb_left, (uint64_t)n);
    const uint32_t md = (uint32_t)(uint64_t)d->min_delta;
    uint32_t *u = (uint32_t *)out;
    if (d->widths[d->mb_index] <= 32) {
      delta_unpack32(d, u, k);
      for (uint64_t i = 0; i < k; i++) u[i] += md;
      for (uint64_t i = 0; i < k; i++) u[i] = last += u[i];
    } else {
      uint64_t tmp[64];
      for (uint64_t done = 0; done < k;) {
        uint64_t c = DK_MIN(k - done, (uint64_t)64);
        delta_unpack64(d, tmp, c);
        for (uint64_t i = 0; i < c; i++) {
          last += md + (uint32_t)tmp[i];
          u[done + i] = last;
        }
        done += c;
      }
    }
    out += k;
    n -= (int64_t)k;
    d->read += (int64_t)k;
  }
  d->last = (int64_t)(int32_t)last;
  return DK_OK;
}

size_t dk_pq__delta_consumed(const dk_pq_delta *d) { return (size_t)(d->p - d->start); }

/* Reads and discards the values not yet returned (bounded stack buffer). */
static dk_status delta_skip_rest(dk_pq_delta *d, dk_error *err) {
  int64_t tmp[256];
  while (d->read < d->total) {
    int64_t k = DK_MIN(d->total - d->read, (int64_t)256);
    DK_RETURN_NOT_OK(dk_pq__delta_get64(d, tmp, k, err));
  }
  return DK_OK;
}

/* Decodes n (of at least n) int32 lengths from a DELTA_BINARY_PACKED stream at in[0..len),
** checks each is >= 0, and returns in *next the offset just past the stream. *sum gets
** their total. */
static dk_status delta_lengths(const uint8_t *in, size_t len, int64_t n, int32_t *lens,
                               size_t *next, uint64_t *sum, const char *what, dk_error *err) {
  dk_pq_delta d;
  DK_RETURN_NOT_OK(dk_pq__delta_init(&d, in, len, err));
  DK_RETURN_IF(d.total < n, DK_CORRUPT, err, "%s: stream holds fewer than the %lld values expected",
               what, (long long)n);
  DK_RETURN_NOT_OK(dk_pq__delta_get32(&d, lens, n, err));
  DK_RETURN_NOT_OK(delta_skip_rest(&d, err));
  uint64_t s = 0;
  int32_t mn = 0;
  for (int64_t i = 0; i < n; i++) {
    s += (uint64_t)(uint32_t)lens[i];
    mn = lens[i] < mn ? lens[i] : mn;
  }
  DK_RETURN_IF(mn < 0, DK_CORRUPT, err, "%s: negative length", what);
  *next = dk_pq__delta_consumed(&d);
  *sum = s;
  return DK_OK;
}

static dk_status scratch_ints(dk_buf *scratch, int64_t count, int32_t **out, dk_error *err) {
  scratch->len = 0;
  DK_RETURN_NOT_OK(dk__buf_reserve(scratch, (size_t)count * sizeof(int32_t) + 1, err));
  *out = (int32_t *)(void *)scratch->data;
  return DK_OK;
}

dk_status dk_pq__delta_length_byte_array(const uint8_t *in, size_t len, int64_t n,
                                        dk_pq_bytes_out *o, dk_buf *scratch, dk_error *err) {
  static const char what[] = "DELTA_LENGTH_BYTE_ARRAY lengths";
  DK_RETURN_IF(n < 0, DK_INVALID, err, "negative value count");
  int32_t *lens;
  DK_RETURN_NOT_OK(scratch_ints(scratch, n, &lens, err));
  size_t data_at;
  uint64_t total;
  DK_RETURN_NOT_OK(delta_lengths(in, len, n, lens, &data_at, &total, what, err));
  DK_RETURN_IF(total > len - data_at, DK_CORRUPT, err,
               "DELTA_LENGTH_BYTE_ARRAY: the values' lengths exceed the %zu bytes that follow "
               "them", len - data_at);
  if (n == 0) return DK_OK;
  int32_t base = o->offsets[-1];
  DK_RETURN_IF(base < 0 || total > (uint64_t)(INT32_MAX - base), DK_CORRUPT, err,
               "DELTA_LENGTH_BYTE_ARRAY: values total over the 2 GiB limit of a batch");
  DK_RETURN_NOT_OK(dk__buf_append(o->data, in + data_at, (size_t)total, err));
  int32_t end = base;
  for (int64_t i = 0; i < n; i++) {
    end += lens[i];
    o->offsets[i] = end;
  }
  o->offsets += n;
  return DK_OK;
}

/* Shared front half of DELTA_BYTE_ARRAY: prefix lengths into pre[], suffix lengths into
** suf[], *suffixes points at the suffix bytes; validates prefix <= previous length given
** fixed_width (>0) or the running lengths (0), and returns the output byte total. */
static dk_status dba_parse(const uint8_t *in, size_t len, int64_t n, int32_t *pre, int32_t *suf,
                           const uint8_t **suffixes, uint64_t *out_total, int fixed_width,
                           dk_error *err) {
  size_t at1, at2;
  uint64_t psum, ssum;
  DK_RETURN_NOT_OK(delta_lengths(in, len, n, pre, &at1, &psum, "DELTA_BYTE_ARRAY prefix lengths",
                                 err));
  DK_RETURN_NOT_OK(delta_lengths(in + at1, len - at1, n, suf, &at2, &ssum,
                                 "DELTA_BYTE_ARRAY suffix lengths", err));
  size_t data_at = at1 + at2;
  DK_RETURN_IF(ssum > len - data_at, DK_CORRUPT, err,
               "DELTA_BYTE_ARRAY: the suffixes' lengths exceed the %zu bytes that follow them",
               len - data_at);
  int64_t prev = 0;
  for (int64_t i = 0; i < n; i++) {
    DK_RETURN_IF(pre[i] > prev, DK_CORRUPT, err,
                 "DELTA_BYTE_ARRAY: value %lld has a prefix longer than the previous value",
                 (long long)i);
    prev = (int64_t)pre[i] + suf[i];
    DK_RETURN_IF(fixed_width > 0 && prev != fixed_width, DK_CORRUPT, err,
                 "DELTA_BYTE_ARRAY: value %lld does not have the width of its "
                 "FIXED_LEN_BYTE_ARRAY(%d) column", (long long)i, fixed_width);
  }
  *suffixes = in + data_at;
  *out_total = psum + ssum;
  return DK_OK;
}

dk_status dk_pq__delta_byte_array(const uint8_t *in, size_t len, int64_t n, dk_pq_bytes_out *o,
                                 dk_buf *scratch, dk_error *err) {
  DK_RETURN_IF(n < 0, DK_INVALID, err, "negative value count");
  int32_t *pre;
  DK_RETURN_NOT_OK(scratch_ints(scratch, 2 * n, &pre, err));
  int32_t *suf = pre + n;
  const uint8_t *sx;
  uint64_t total;
  DK_RETURN_NOT_OK(dba_parse(in, len, n, pre, suf, &sx, &total, 0, err));
  if (n == 0) return DK_OK;
  int32_t base = o->offsets[-1];
  DK_RETURN_IF(base < 0 || total > (uint64_t)(INT32_MAX - base), DK_CORRUPT, err,
               "DELTA_BYTE_ARRAY: values total over the 2 GiB limit of a batch");
  DK_RETURN_NOT_OK(dk__buf_reserve(o->data, (size_t)total, err));
  uint8_t *dst = (uint8_t *)o->data->data + o->data->len;
  int32_t end = base;
  size_t prev_len = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t p = (size_t)pre[i], s = (size_t)suf[i];
    memcpy(dst, dst - prev_len, p); /* the previous value ends at dst; no overlap: p <= prev */
    memcpy(dst + p, sx, s);
    sx += s;
    dst += p + s;
    prev_len = p + s;
    end += (int32_t)(p + s);
    o->offsets[i] = end;
  }
  o->data->len += (size_t)total;
  o->data->data[o->data->len] = 0;
  o->offsets += n;
  return DK_OK;
}

dk_status dk_pq__delta_byte_array_fixed(const uint8_t *in, size_t len, int64_t n, int width,
                                       uint8_t *out, dk_buf *scratch, dk_error *err) {
  DK_RETURN_IF(n < 0 || width <= 0, DK_INVALID, err, "bad value count or width");
  int32_t *pre;
  DK_RETURN_NOT_OK(scratch_ints(scratch, 2 * n, &pre, err));
  int32_t *suf = pre + n;
  const uint8_t *sx;
  uint64_t total;
  DK_RETURN_NOT_OK(dba_parse(in, len, n, pre, suf, &sx, &total, width, err));
  const size_t w = (size_t)width;
  for (int64_t i = 0; i < n; i++) {
    size_t p = (size_t)pre[i], s = (size_t)suf[i];
    if (p) memcpy(out, out - w, p);
    memcpy(out + p, sx, s);
    sx += s;
    out += w;
  }
  return DK_OK;
}
