/*
** encoding.h — Parquet page-level building blocks (library-internal, not API):
** decompression codecs and value/level encodings. Pure functions over byte ranges; no I/O,
** no Arrow. Follows apache/parquet-format Encodings.md and Compression.md.
**
** Every decoder validates its input against the bytes it was given: a malformed or
** truncated stream returns DK_CORRUPT (message says which encoding and why); the caller adds
** the file name and offset with dk__error_prefix. Decoders never read past `len`.
*/
#ifndef DK_PARQUET_ENCODING_H
#define DK_PARQUET_ENCODING_H

#include "codec/parquet/codec.h"
#include "util/util.h"

/* ---- bit unpacking ---------------------------------------------------------------------- */

/* Unpacks n values of bit_width (0..32) bits, LSB-first (Parquet bit-packing), from in
** (which must hold at least ceil(n*bit_width/8) bytes) into out. */
void dk_pq__unpack32(const uint8_t *in, int bit_width, uint32_t *out, int64_t n);
/* Same for 0..64 bits. */
void dk_pq__unpack64(const uint8_t *in, int bit_width, uint64_t *out, int64_t n);
/* The same with `avail` (>= ceil(n*bit_width/8)) readable bytes at in: when the packed values
** sit inside a longer buffer, passing its remaining length keeps the whole call on the fast
** path (which reads up to 16 bytes past a group of 8 values). */
void dk_pq__unpack32_avail(const uint8_t *in, size_t avail, int bit_width, uint32_t *out,
                          int64_t n);
void dk_pq__unpack64_avail(const uint8_t *in, size_t avail, int bit_width, uint64_t *out,
                          int64_t n);

/* ---- RLE / bit-packed hybrid (levels, dictionary indices, v2 booleans) ------------------- */

typedef struct dk_pq_rle {
  const uint8_t *p, *end;  /* remaining input */
  const uint8_t *start;    /* start of the stream (for byte offsets in messages) */
  int bit_width;           /* 0..32 */
  uint32_t rle_value;      /* current RLE run value */
  int64_t rle_left;        /* values left in the current RLE run */
  const uint8_t *bp;       /* current bit-packed run data */
  int64_t bp_left;         /* values left in the current bit-packed run */
  int64_t bp_pos;          /* index of the next value in the bit-packed run */
} dk_pq_rle;

/* Initialises over p[0..len) (without the 4-byte length prefix of v1 level data). */
void dk_pq__rle_init(dk_pq_rle *d, const uint8_t *p, size_t len, int bit_width);
/* Decodes exactly n values into out; calls may split a run anywhere. Input exhausted before
** n values is DK_CORRUPT (a bit-packed run cut short by the end of the input yields just the
** values its bytes hold, as some writers drop the padding of the last group). */
dk_status dk_pq__rle_get(dk_pq_rle *d, uint32_t *out, int64_t n, dk_error *err);
/* Makes a fresh run current when the current one is used up (rle_left == bp_left == 0):
** afterwards either rle_left > 0 (d->rle_value repeated; callers may consume such values by
** decrementing rle_left) or bp_left > 0 (take them with dk_pq__rle_get). No values left in
** the stream is DK_CORRUPT. Lets level decoders handle whole runs without expanding them. */
dk_status dk_pq__rle_next(dk_pq_rle *d, dk_error *err);
/* Decodes n dictionary indices and checks each is < dict_len (else DK_CORRUPT). */
dk_status dk_pq__rle_get_indices(dk_pq_rle *d, uint32_t *out, int64_t n, uint32_t dict_len,
                                dk_error *err);

/* Deprecated BIT_PACKED (= 4) level encoding of old writers: n values of bit_width (0..32)
** bits packed from the most significant bit of each byte down, with no header. Needs
** ceil(n*bit_width/8) bytes of in[0..len), else DK_CORRUPT. *consumed gets those bytes. */
dk_status dk_pq__bitpacked_msb(const uint8_t *in, size_t len, int bit_width, uint32_t *out,
                              int64_t n, size_t *consumed, dk_error *err);

/* ---- PLAIN ------------------------------------------------------------------------------- */

/* Fixed-width PLAIN (INT32, INT64, INT96 (12 bytes), FLOAT, DOUBLE, FLBA) is a plain memcpy
** of n*width bytes; the caller checks the length. BOOLEAN PLAIN is bit-packed LSB first;
** this writes n values starting at bit first_bit of in as one byte (0 or 1) each. The caller
** checks that in holds ceil((first_bit + n) / 8) bytes. */
void dk_pq__plain_bool(const uint8_t *in, int64_t first_bit, uint8_t *out_bytes, int64_t n);

/* Variable-length output for BYTE_ARRAY decoders: appends values as Arrow-style int32 offsets
** and bytes. `offsets` must have room for n more entries (offsets[-1] is the current end, which
** the caller has written); `data` grows as needed. On success the decoders advance `offsets`
** by n; on failure nothing is appended. */
typedef struct dk_pq_bytes_out {
  int32_t *offsets;        /* next slot to write (the entry before it is the running end) */
  dk_buf *data;            /* value bytes are appended here */
} dk_pq_bytes_out;

/* PLAIN BYTE_ARRAY: n values, each a 4-byte little-endian length then the bytes.
** *consumed receives the bytes used. Totals over INT32_MAX are DK_CORRUPT. */
dk_status dk_pq__plain_byte_array(const uint8_t *in, size_t len, int64_t n, dk_pq_bytes_out *o,
                                 size_t *consumed, dk_error *err);

/* The same in two steps, for callers that own the output buffer: _size validates n values
** of in[0..len) and totals their bytes (*total_out); _copy (only after _size succeeded on
** the same input) writes the offsets (offsets[-1] is the running end) and total bytes at dst,
** and returns the input bytes used. */
dk_status dk_pq__plain_byte_array_size(const uint8_t *in, size_t len, int64_t n,
                                      uint64_t *total_out, dk_error *err);
size_t dk_pq__plain_byte_array_copy(const uint8_t *in, int64_t n, int32_t *offsets, uint8_t *dst);

/* Builds a dictionary index for PLAIN BYTE_ARRAY dictionary pages: entry i's bytes are
** in[starts[i] .. starts[i] + lengths[i]) (past its 4-byte length). starts and lengths have
** room for n entries each. */
dk_status dk_pq__plain_byte_array_index(const uint8_t *in, size_t len, int64_t n, uint32_t *starts,
                                       uint32_t *lengths, dk_error *err);

/* ---- DELTA_BINARY_PACKED ---------------------------------------------------------------- */

typedef struct dk_pq_delta {
  const uint8_t *p, *start, *end;
  uint64_t block_size, miniblocks, mb_size; /* values per block / miniblocks per block / per mb */
  int64_t total;           /* total values in the stream */
  int64_t read;            /* values returned so far */
  int64_t last;            /* last value (wrapping arithmetic in uint64) */
  int64_t min_delta;       /* current block's min delta */
  const uint8_t *widths;   /* current block's miniblock bit widths */
  uint64_t mb_index;       /* current miniblock in block */
  uint64_t mb_left;        /* values left in the current miniblock */
  const uint8_t *mb_data;  /* current miniblock data */
  uint64_t mb_pos;         /* index inside miniblock */
  int first_pending;       /* first value not yet returned */
} dk_pq_delta;

dk_status dk_pq__delta_init(dk_pq_delta *d, const uint8_t *p, size_t len, dk_error *err);
/* Decodes exactly n values (n <= remaining) as int64 or int32 (wrapping as the spec says). */
dk_status dk_pq__delta_get64(dk_pq_delta *d, int64_t *out, int64_t n, dk_error *err);
dk_status dk_pq__delta_get32(dk_pq_delta *d, int32_t *out, int64_t n, dk_error *err);
/* Total value count declared in the header. */
static inline int64_t dk_pq__delta_total(const dk_pq_delta *d) { return d->total; }
/* Bytes consumed so far, valid once all values were read (DELTA_LENGTH_BYTE_ARRAY needs the
** end of the lengths stream). Reading all remaining values first is the caller's job. */
size_t dk_pq__delta_consumed(const dk_pq_delta *d);

/* ---- DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY ----------------------------------------- */

/* Decode n values of the page's remaining bytes in[0..len). `scratch` is a caller-owned
** buffer reused across calls for length/prefix arrays (no per-call malloc once warm).
** The embedded DELTA_BINARY_PACKED streams must declare at least n values. */
dk_status dk_pq__delta_length_byte_array(const uint8_t *in, size_t len, int64_t n,
                                        dk_pq_bytes_out *o, dk_buf *scratch, dk_error *err);
dk_status dk_pq__delta_byte_array(const uint8_t *in, size_t len, int64_t n, dk_pq_bytes_out *o,
                                 dk_buf *scratch, dk_error *err);
/* FIXED_LEN_BYTE_ARRAY under DELTA_BYTE_ARRAY: each decoded value must be `width` bytes,
** written contiguously to out (n*width bytes). */
dk_status dk_pq__delta_byte_array_fixed(const uint8_t *in, size_t len, int64_t n, int width,
                                       uint8_t *out, dk_buf *scratch, dk_error *err);

/* ---- BYTE_STREAM_SPLIT ------------------------------------------------------------------ */

/* in holds `total` values of `width` bytes split into width streams; writes values
** [first, first+n) to out (n*width bytes). */
dk_status dk_pq__byte_stream_split(const uint8_t *in, size_t len, int width, int64_t total,
                                  int64_t first, int64_t n, uint8_t *out, dk_error *err);

/* ---- dictionary gather ------------------------------------------------------------------ */

/* out[i] = dict[idx[i]] for fixed-width values of `width` bytes (4, 8, 12, 16 and any FLBA). */
void dk_pq__gather(const uint8_t *dict, int width, const uint32_t *idx, int64_t n, uint8_t *out);

#endif /* DK_PARQUET_ENCODING_H */
