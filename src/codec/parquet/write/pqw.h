/*
** write/pqw.h — internals of the Parquet writer (library-internal, not API).
**
** The writer shares only codec.h (CompressionCodec values, compress entry points) and
** metadata.h's enums (physical types, encodings, page types) with the reader; it includes
** none of the reader's decoding headers.
**
** Data flow, per leaf column and row group:
**   Arrow batch --shred.c--> def/rep levels + positions of the non-null values
**     --column.c--> pages (levels RLE/bit-packed hybrid, values PLAIN or RLE_DICTIONARY,
**                   compressed) buffered in the column chunk, with page and chunk statistics
**     --writer.c--> row group: every chunk to the sink in order; at close the page indexes
**                   and the Thrift footer (footer.c, thrift_write.c).
*/
#ifndef DK_PARQUET_PQW_H
#define DK_PARQUET_PQW_H

#include "codec/parquet/codec.h"
#include "codec/parquet/metadata.h"
#include "dk/parquet.h"
#include "io/sink.h"

/* ---- Thrift compact protocol encoder (thrift_write.c) ----------------------------------- */

typedef struct dk_tpw {
  dk_buf *b;
  int16_t last[DK_TP_MAX_DEPTH]; /* last field id per open struct */
  int depth;
  dk_status st;                  /* first failure (the buffer's NOMEM) */
  dk_error *err;
} dk_tpw;

void dk_pqw__tp_init(dk_tpw *w, dk_buf *b, dk_error *err);
void dk_pqw__tp_struct_begin(dk_tpw *w, int16_t id); /* id 0: a top-level/list element struct */
void dk_pqw__tp_struct_end(dk_tpw *w);               /* writes the stop field */
void dk_pqw__tp_i32(dk_tpw *w, int16_t id, int32_t v);
void dk_pqw__tp_i16(dk_tpw *w, int16_t id, int16_t v);
void dk_pqw__tp_i64(dk_tpw *w, int16_t id, int64_t v);
void dk_pqw__tp_bool(dk_tpw *w, int16_t id, int v);
void dk_pqw__tp_byte(dk_tpw *w, int16_t id, int8_t v);
void dk_pqw__tp_binary(dk_tpw *w, int16_t id, const void *p, size_t n);
/* List header (field id, element compact type, count); elements follow with the _elem_ calls
** or, for structs, dk_pqw__tp_struct_begin(w, 0). */
void dk_pqw__tp_list(dk_tpw *w, int16_t id, int elem_type, size_t count);
void dk_pqw__tp_elem_i32(dk_tpw *w, int32_t v);
void dk_pqw__tp_elem_i64(dk_tpw *w, int64_t v);
void dk_pqw__tp_elem_bool(dk_tpw *w, int v);
void dk_pqw__tp_elem_binary(dk_tpw *w, const void *p, size_t n);

/* ---- schema (schema.c) ------------------------------------------------------------------- */

enum { PQW_PRIM = 0, PQW_STRUCT, PQW_LIST, PQW_MAP };

/* How the Arrow values of a leaf become Parquet physical values. */
enum {
  PQW_CV_BOOL = 0,  /* bits -> BOOLEAN */
  PQW_CV_I8,        /* int8 -> INT32 */
  PQW_CV_I16,       /* int16 -> INT32 */
  PQW_CV_COPY4,     /* int32/date32/float: 4 bytes as they are */
  PQW_CV_COPY8,     /* int64/double/timestamp[us]: 8 bytes as they are */
  PQW_CV_TS_MUL,    /* timestamp[s|ms] -> micros (int64 * ts_mul) */
  PQW_CV_DEC32,     /* decimal128 (p <= 9) -> INT32 */
  PQW_CV_DEC64,     /* decimal128 (p <= 18) -> INT64 */
  PQW_CV_DECFLBA,   /* decimal128 -> big-endian FIXED_LEN_BYTE_ARRAY(type_length) */
  PQW_CV_FIXED,     /* fixed-size binary -> FIXED_LEN_BYTE_ARRAY */
  PQW_CV_BIN32,     /* utf8/binary (int32 offsets) -> BYTE_ARRAY */
  PQW_CV_BIN64,     /* large_utf8/large_binary (int64 offsets) -> BYTE_ARRAY */
  PQW_CV_VIEW       /* utf8_view/binary_view -> BYTE_ARRAY */
};

typedef struct pqw_field pqw_field;
struct pqw_field {
  int kind;                /* PQW_* */
  char *name;
  char *format;            /* Arrow format string */
  int nullable;
  int has_field_id;
  int32_t field_id;
  int is_variant;          /* struct<metadata, value> tagged as a variant */
  pqw_field *parent;
  pqw_field **children;
  int n_children;
  int child_index;         /* position among the parent's children */
  int depth;               /* 0 = top-level column */
  int16_t def;             /* definition level when this node is present (non-null) */
  int16_t rep;             /* repetition level of this node (repeated ancestors, own group) */
  int under_repeated;      /* some ancestor (or this node's own group) repeats */
  int leaf;                /* leaf column index, or -1 */
  int first_leaf, n_leaves;
  int index;               /* pre-order position */
  /* leaves */
  int ptype;               /* PQ_* physical type */
  int32_t type_length;     /* FLBA width */
  int conv;                /* PQW_CV_* */
  int64_t ts_mul;          /* PQW_CV_TS_MUL factor */
  int logical;             /* PQ_LT_* annotation (NONE, STRING, DECIMAL, DATE, TIMESTAMP,
                              INTEGER) */
  int32_t precision, scale;
  int ts_utc;              /* TIMESTAMP isAdjustedToUTC */
  int int_bits;            /* INTEGER bit width */
  int is_string;           /* utf8: statistics and truncation respect UTF-8 */
  int signed_flba;         /* decimal in FLBA: min/max compare as big-endian two's complement */
  /* per-file statistic of non-repeated fields: rows where this field or an ancestor is null */
  int64_t null_rows;
};

typedef struct pqw_schema {
  dk_arena arena;
  pqw_field *root;         /* STRUCT over the top-level fields */
  pqw_field **fields;      /* pre-order, root excluded */
  int n_fields;
  pqw_field **leaves;
  int n_leaves;
} pqw_schema;

/* Builds the field tree from an Arrow struct schema. Types Delta cannot store (unsigned
** integers, float16, time, duration, interval, null, dictionary, union, timestamp[ns]...) are
** DK_UNSUPPORTED naming the column and the type. */
dk_status dk_pqw__schema_build(pqw_schema *out, const struct ArrowSchema *schema,
                               const dk_allocator *alloc, dk_error *err);
void dk_pqw__schema_dispose(pqw_schema *s);

/* ---- encoders (encode.c) ----------------------------------------------------------------- */

/* RLE / bit-packed hybrid encoding of n values of bit_width bits, appended to out. */
dk_status dk_pqw__rle_encode_u16(dk_buf *out, const uint16_t *v, int64_t n, int bit_width,
                                 dk_error *err);
dk_status dk_pqw__rle_encode_u32(dk_buf *out, const uint32_t *v, int64_t n, int bit_width,
                                 dk_error *err);
/* One RLE run: n (>= 1) copies of v (bit_width bits), appended to out. */
dk_status dk_pqw__rle_run(dk_buf *out, uint32_t v, int64_t n, int bit_width, dk_error *err);
/* Bits needed for values 0..max. */
static inline int dk_pqw__bit_width(uint64_t max) {
  int w = 0;
  while (max) w++, max >>= 1;
  return w;
}

typedef struct pqw_opts {
  int codec, level;
  int64_t page_bytes, page_rows, dict_bytes;
  int dictionary, page_v2, statistics, page_index;
  size_t max_stat_bytes;   /* chunk statistics longer than this are left out */
  size_t index_trunc;      /* page index min/max truncation length */
} pqw_opts;

/* A bound (min or max) of one page, chunk or file, as PLAIN physical bytes (BYTE_ARRAY:
** the bytes without the length prefix). */
typedef struct pqw_bound {
  dk_buf v;
  int set;
} pqw_bound;

typedef struct pqw_page_entry {
  int64_t offset;          /* relative to the chunk's first data page */
  int32_t size;            /* header + body */
  int64_t first_row;
  int64_t null_count;
  int null_page, nan_only;
  size_t min_off, min_len, max_off, max_len; /* into the chunk's index_vals */
} pqw_page_entry;

/* Metadata of one finished column chunk (kept until the footer). */
typedef struct pqw_chunk_meta {
  int64_t num_values, total_uncompressed, total_compressed;
  int64_t dict_offset, data_offset;  /* absolute, -1 when absent */
  int64_t n_dict_pages_plain;        /* 0/1: a dictionary page */
  int64_t n_pages_dict, n_pages_plain;
  int has_stats, has_minmax;
  int64_t null_count, nan_count;
  dk_buf min, max;
  dk_buf column_index, offset_index; /* serialized Thrift, empty when absent */
  int64_t ci_offset, oi_offset;
  int float_nan_count;               /* write nan_count (FLOAT/DOUBLE) */
} pqw_chunk_meta;

/* ---- dictionary (dict.c) ---------------------------------------------------------------- */

enum { PQW_DICT_4 = 0, PQW_DICT_8, PQW_DICT_FIXED, PQW_DICT_BYTES };

typedef struct pqw_dict {
  void *slots;             /* hash table (dict.c's slot layout for the kind) */
  size_t cap;              /* slots, a power of two (0 before the first value) */
  int bits;                /* log2(cap) */
  int kind;                /* PQW_DICT_* */
  int width;               /* fixed-width values: bytes */
  uint32_t n;              /* entries */
  dk_buf vals;             /* PLAIN-encoded dictionary page body */
  dk_buf starts;           /* BYTE_ARRAY: uint32 offset of each entry's bytes in vals */
  dk_buf stamp;            /* BYTE_ARRAY: uint32 per entry, the last page that used it */
  const dk_allocator *alloc;
} pqw_dict;

/* A byte string of the input (BYTE_ARRAY values are handed around as these). */
typedef struct pqw_sv {
  const uint8_t *p;
  uint32_t n;
} pqw_sv;

void dk_pqw__dict_init(pqw_dict *d, int ptype, int width, const dk_allocator *alloc);
void dk_pqw__dict_dispose(pqw_dict *d);
/* Empties the dictionary (keeps its memory for the next chunk). */
void dk_pqw__dict_reset(pqw_dict *d);
/* Indices of n fixed-width values (PLAIN bytes, d->width each, contiguous) into out,
** inserting the new ones. */
dk_status dk_pqw__dict_put_fixed(pqw_dict *d, const uint8_t *v, int64_t n, uint32_t *out,
                                 dk_error *err);
/* The same for n byte strings; `end` (or NULL) bounds the buffer they lie in, which may be
** read past a string's end up to there. */
dk_status dk_pqw__dict_put_bytes(pqw_dict *d, const pqw_sv *v, int64_t n, const uint8_t *end,
                                 uint32_t *out, dk_error *err);
/* Appends the PLAIN encoding of entries idx[0..n) to out. */
dk_status dk_pqw__dict_plain(const pqw_dict *d, const uint32_t *idx, int64_t n, dk_buf *out,
                             dk_error *err);

/* ---- column chunk writer (column.c) ------------------------------------------------------ */

/* A column chunk's bytes: written by the column, then taken (dk_pqw__col_take) and handed to
** the sink (dk_pqw__chunk_emit), possibly while the column writes the next row group. */
typedef struct pqw_chunk_out {
  dk_buf dict;             /* the dictionary page (header + body), empty when none */
  dk_buf pages;            /* the data pages (header + body each) */
  dk_buf entries;          /* pqw_page_entry of each data page */
} pqw_chunk_out;

void dk_pqw__chunk_out_init(pqw_chunk_out *o, const dk_allocator *alloc);
void dk_pqw__chunk_out_dispose(pqw_chunk_out *o);

typedef struct pqw_col pqw_col;
struct pqw_col {
  const pqw_field *leaf;
  const pqw_field **path;  /* root's child .. leaf */
  int path_len;
  const pqw_opts *o;
  const dk_allocator *alloc;
  int ptype, width;        /* physical type, value bytes (0 BYTE_ARRAY; BOOLEAN 1) */
  int kind;                /* statistics sort order (column.c SK_*) */
  int16_t max_def, max_rep;
  dk_pq_compressor comp;
  /* current page */
  dk_buf def, rep;         /* uint16 levels (def only once pg_def_full is 0) */
  int pg_def_full;         /* every definition level of the page so far is max_def */
  int64_t pg_levels, pg_rows, pg_values, pg_nulls;
  int64_t pg_plain_bytes;  /* PLAIN size of the page's values (the dictionary test) */
  dk_buf pg_plain;         /* PLAIN values (booleans: one byte each until the page closes) */
  dk_buf pg_idx;           /* uint32 dictionary indices */
  pqw_bound pg_min, pg_max;
  int64_t pg_nans;
  uint32_t pg_no;          /* pages opened in the chunk (+1): dictionary entry stamps */
  dk_buf pg_uniq;          /* BYTE_ARRAY under a dictionary: uint32 entries the page used;
                              its min/max are computed from them when the page closes */
  /* scratch */
  dk_buf stage;            /* converted values or string views of one run; compression input */
  dk_buf body, cbuf, hdr, lv;
  /* chunk */
  int dict_on;             /* still dictionary-encoding this chunk */
  int dict_checked;        /* the first-page test of the dictionary ran */
  pqw_dict dict;
  pqw_chunk_out ch;        /* the chunk's pages so far */
  dk_buf index_vals;       /* page min/max bytes for the ColumnIndex */
  int64_t ch_rows, ch_values, ch_uncompressed, ch_nulls, ch_nans;
  int64_t ch_pages_dict, ch_pages_plain;
  pqw_bound ch_min, ch_max;
  int ch_index_ok;         /* a ColumnIndex can be written */
  /* file */
  pqw_bound f_min, f_max;
  int64_t f_nulls, f_nans, f_values;
  /* shredding scratch (shred.c) */
  dk_buf sh_def, sh_rep, sh_idx;
};

dk_status dk_pqw__col_init(pqw_col *c, const pqw_field *leaf, const pqw_opts *o,
                           const dk_allocator *alloc, dk_error *err);
void dk_pqw__col_dispose(pqw_col *c);

/* One batch of a leaf for column.c: n levels (def NULL: every one is the max definition
** level; rep NULL: all 0) and the leaf array's physical slots of the non-null values (idx
** NULL: slots first, first+1, ...). */
typedef struct pqw_input {
  const struct ArrowArray *arr;  /* the leaf's Arrow array */
  const uint16_t *def, *rep;
  int64_t n_levels;
  const int64_t *idx;
  int64_t first;
  int64_t n_values;
} pqw_input;

dk_status dk_pqw__col_write(pqw_col *c, const pqw_input *in, dk_error *err);
/* Closes the chunk: flushes the last page, builds the dictionary page, statistics and page
** index; the chunk's bytes are then taken with dk_pqw__col_take. */
dk_status dk_pqw__col_finish(pqw_col *c, pqw_chunk_meta *m, dk_error *err);
/* Swaps the finished chunk's bytes with *out (whose buffers, emitted before, the column
** reuses) and resets the column for the next row group. */
void dk_pqw__col_take(pqw_col *c, pqw_chunk_out *out);
/* Hands an emitted chunk's buffers back to the column (swapped with its empty ones), so the
** next row group grows into memory already touched instead of new pages. */
void dk_pqw__col_give_back(pqw_col *c, pqw_chunk_out *out);
/* Writes a taken chunk at the sink's position, filling m's offsets and (page_index) its
** OffsetIndex. */
dk_status dk_pqw__chunk_emit(const pqw_chunk_out *c, pqw_chunk_meta *m, int page_index,
                             dk__sink *sink, dk_error *err);
/* Bytes the column buffers for its open row group (for the row-group size target). */
int64_t dk_pqw__col_buffered(const pqw_col *c);

/* ---- shredding (shred.c) ----------------------------------------------------------------- */

/* Shreds rows [row0, row0 + n) of the top-level column `col_arr` (the batch's child for the
** leaf's top-level field) into levels and value positions, feeds them to the column, and
** adds the rows where each non-repeated field on the leaf's path is null to its null_rows
** (fields whose first leaf is this one). */
dk_status dk_pqw__shred(pqw_col *c, const struct ArrowArray *col_arr, int64_t row0, int64_t n,
                        pqw_field *const *fields, dk_error *err);

/* ---- footer (footer.c) ------------------------------------------------------------------- */

typedef struct pqw_rg_meta {
  int64_t num_rows, total_byte_size, total_compressed, file_offset;
  pqw_chunk_meta *chunks;  /* n_leaves */
} pqw_rg_meta;

typedef struct pqw_footer_in {
  const pqw_schema *schema;
  const pqw_opts *o;
  const pqw_rg_meta *rgs;
  int n_rgs;
  int64_t num_rows;
  const char *created_by;
  const char *const *kv_keys;
  const char *const *kv_values;
  size_t n_kv;
} pqw_footer_in;

/* The Parquet name of a field: LIST elements are "element", map entries "key_value" with
** "key" and "value" (LogicalTypes.md), everything else keeps its Arrow name. */
const char *dk_pqw__name(const pqw_field *f);

/* Serializes FileMetaData into out. */
dk_status dk_pqw__footer(dk_buf *out, const pqw_footer_in *in, dk_error *err);
/* Serializes one PageHeader (data v1/v2 or dictionary) into out. */
typedef struct pqw_page_header {
  int type;                /* PQ_PAGE_* */
  int32_t uncompressed, compressed;
  int32_t num_values, num_nulls, num_rows;
  int encoding;
  int32_t def_bytes, rep_bytes; /* v2 */
  int is_compressed;            /* v2 */
} pqw_page_header;
dk_status dk_pqw__page_header(dk_buf *out, const pqw_page_header *h, dk_error *err);

/* ---- thread helper (par.c) ---------------------------------------------------------------- */

/* Runs fn(ctx, i) for i in [0, n) on up to `threads` threads (the caller's included), through
** the library's executor (util/exec.h). */
typedef struct pqw_par pqw_par;
dk_status dk_pqw__par_new(pqw_par **out, int threads, const dk_allocator *alloc, dk_error *err);
void dk_pqw__par_free(pqw_par *p);
void dk_pqw__par_run(pqw_par *p, int n, void (*fn)(void *ctx, int i), void *ctx);
/* The executor (NULL for NULL: dk__exec_* then run everything on the caller). */
struct dk__exec *dk_pqw__par_exec(pqw_par *p);

#endif /* DK_PARQUET_PQW_H */
