/*
** reader.h — internals of the Parquet reader shared by reader.c, schema.c, column.c and
** assemble.c (library-internal, not API).
*/
#ifndef DK_PARQUET_READER_H
#define DK_PARQUET_READER_H

#include "arrow/array.h"
#include "codec/parquet/encoding.h"
#include "codec/parquet/metadata.h"
#include "codec/parquet/open.h"
#include "io/source.h"

/* How a leaf's physical values become Arrow values. */
enum {
  PQ_CONV_COPY = 0,     /* same width, bit-identical (int32/int64/float/double/FLBA/...) */
  PQ_CONV_BOOL,         /* bytes 0/1 -> bits */
  PQ_CONV_BYTES,        /* BYTE_ARRAY -> utf8/binary */
  PQ_CONV_I8, PQ_CONV_I16, /* INT32 narrowed to 1 or 2 bytes */
  PQ_CONV_MILLIS_TO_MICROS,
  PQ_CONV_INT96,        /* Julian day + nanos -> micros */
  PQ_CONV_DEC32, PQ_CONV_DEC64, /* sign-extended to decimal128 */
  PQ_CONV_DEC_FIXED,    /* big-endian FLBA -> decimal128 */
  PQ_CONV_DEC_BYTES,    /* big-endian BYTE_ARRAY -> decimal128 */
  PQ_CONV_NULL          /* UNKNOWN logical type -> Arrow null */
};

enum { PQ_AN_LEAF = 0, PQ_AN_STRUCT, PQ_AN_LIST, PQ_AN_MAP };

/* One Arrow field of the output, with the Dremel conditions to assemble it from levels. */
typedef struct pq_anode pq_anode;
struct pq_anode {
  int kind;
  dk_atype type;
  const char *name;
  int nullable;
  int has_field_id;
  int32_t field_id;
  int16_t def_valid;   /* non-null where def >= def_valid */
  int16_t slot_rep;    /* a slot of this node starts where rep <= slot_rep ... */
  int16_t slot_def;    /* ... and def >= slot_def */
  int leaf;            /* LEAF: its leaf column; others: the first leaf below */
  const pq_node *pq;   /* LEAF: the Parquet leaf */
  int conv;            /* LEAF: PQ_CONV_* */
  const pq_anode *src; /* projection copies: the node copied (NULL in the file tree) */
  int n_children;
  pq_anode **children; /* STRUCT fields; LIST: element; MAP: entries struct(key, value) */
};

struct dk_parquet_file {
  const dk_allocator *alloc;
  int refs;            /* atomic */
  char *path;          /* the source's name (the storage key), for messages */
  dk__source src;      /* where the bytes come from (owned) */
  dk_storage *own_sto; /* dk_parquet_open's local backend, freed with the file; else NULL */
  const uint8_t *map;  /* src.view: the whole file when mapped, or NULL */
  int64_t size;
  dk_arena arena;      /* metadata, schema, nodes */
  uint8_t *footer;     /* footer bytes (stats point into it) */
  pq_file_meta meta;
  pq_node *root;
  pq_node **leaves;
  int n_leaves;
  pq_anode *aroot;     /* STRUCT over the top-level fields */
  int skip_page_crc;   /* 1: page CRCs are not verified (dk_parquet_open_options) */
};

void dk_pq__file_ref(dk_parquet_file *f);

/* DK_CORRUPT, naming the page by its file offset page_off (callers add the file and column, as
** for every page error), when the header holds a
** CRC (parquet.thrift PageHeader.crc: CRC-32 of the page body as stored, after compression)
** that does not match the len body bytes; DK_OK when it matches, when the header has none,
** or when the file was opened with skip_page_checksums. */
dk_status dk_pq__page_check_crc(const dk_parquet_file *f, const pq_page_header *h,
                                const uint8_t *body, size_t len, int64_t page_off,
                                dk_error *err);

/* Reads `len` bytes at `off` into dst, or returns a pointer into the mapping. */
dk_status dk_pq__file_read(const dk_parquet_file *f, int64_t off, size_t len, uint8_t *dst,
                           const uint8_t **view, dk_error *err);

/* schema.c: Arrow mapping. */
dk_status dk_pq__build_anodes(dk_parquet_file *f, dk_error *err);
dk_status dk_pq__anode_schema(struct ArrowSchema *out, const pq_anode *n, dk_error *err);

/* ---- column chunk reader (column.c) ---------------------------------------------------- */

/* Decoded levels and dense (non-null) values of one leaf for one batch. */
typedef struct pq_leaf_batch {
  dk_buf def, rep;         /* uint32 levels (empty when the max level is 0) */
  int64_t n_levels;
  dk_abuf vals;            /* dense fixed-width physical values (bool: 1 byte each); aligned so
                              it can be handed to Arrow without a copy */
  const dk_allocator *alloc;
  dk_buf offs;             /* BYTE_ARRAY: int32 offsets, n_dense + 1 */
  dk_abuf data;            /* BYTE_ARRAY bytes (aligned: handed to Arrow without a copy) */
  int64_t n_dense;
  int64_t hint_vals, hint_data; /* sizes of the previous batch: pre-reserved, so buffers handed
                                   to Arrow are rebuilt without growth copies */
} pq_leaf_batch;

typedef struct pq_col {
  const dk_parquet_file *f;
  const dk_allocator *alloc;
  const pq_node *leaf;
  const pq_column_meta *cm;
  int type, width;         /* physical type, bytes per value (0 for BYTE_ARRAY, 1 for bool) */
  int16_t max_def, max_rep;
  /* chunk bytes: with an mmap, `chunk` views the whole chunk; otherwise the chunk is read
  ** page by page into the window `owned` (win_cap bytes), which holds chunk bytes
  ** [win_lo, win_lo + win_len) and grows only to the largest page */
  uint8_t *owned;
  const uint8_t *chunk;
  uint8_t *chunk_buf;      /* the whole chunk read ahead (dk_pq__col_give_chunk), or NULL */
  size_t chunk_len, pos;
  size_t win_cap, win_lo, win_len;
  int64_t chunk_off;
  int64_t max_page_bytes;  /* bound on one page's decompressed size */
  /* dictionary */
  int has_dict;
  uint32_t dict_n;
  dk_buf dict_page;        /* decompressed dictionary page */
  dk_buf dict_vals;        /* fixed width: values; BYTE_ARRAY: starts + lengths */
  const uint8_t *dict_page_ptr; /* BYTE_ARRAY: the dictionary page bytes */
  /* current page */
  dk_buf page;             /* decompressed page (when it needed decompression) */
  int64_t page_off;        /* file offset of the current page header */
  int64_t page_left;       /* levels left in the page */
  dk_pq_rle def_dec, rep_dec;
  int def_msb, rep_msb;    /* deprecated BIT_PACKED level streams (v1 pages) */
  const uint8_t *def_bp, *rep_bp;
  size_t def_bp_len, rep_bp_len;
  int def_bw, rep_bw;
  int64_t page_lv_pos;     /* levels of the page decoded so far */
  int encoding;
  const uint8_t *vp, *vend;
  int64_t bool_bit;        /* PLAIN booleans: next bit */
  dk_pq_rle val_rle;       /* dictionary indices / RLE booleans */
  dk_pq_delta delta;
  int64_t bss_total, bss_next;
  dk_buf mat_offs, mat_data; /* materialised DELTA_(LENGTH_)BYTE_ARRAY page */
  int64_t mat_next, mat_n;
  /* lookahead levels */
  dk_buf la_def, la_rep;   /* uint32 */
  int64_t la_pos, la_n;
  dk_buf idx;              /* uint32 scratch */
  dk_buf scratch;
  int eof;
  int64_t skip_to;         /* > 0: file offset of the first data page to decode; data pages
                              before it are skipped unread (page index row selection) */
} pq_col;

/* Buffers of the column come from alloc (the stream's recycling pool). */
dk_status dk_pq__col_open(pq_col *c, const dk_parquet_file *f, int row_group, int leaf,
                          const dk_allocator *alloc, dk_error *err);
void dk_pq__col_close(pq_col *c);
/* Hands an opened column the bytes of its whole chunk, read ahead by the caller (allocated
** with the column's allocator; the column frees them). */
void dk_pq__col_give_chunk(pq_col *c, uint8_t *bytes);
/* The byte range [*start, *start + *len) of a leaf's chunk in a row group; false when the
** footer places it outside the file (dk_pq__col_open then reports it). */
bool dk_pq__chunk_range(const dk_parquet_file *f, int row_group, int leaf, int64_t *start,
                        int64_t *len);
/* Appends the levels and values of the next `rows` rows to b (after clearing it). Fewer rows
** than asked for before the chunk ends is DK_CORRUPT. */
dk_status dk_pq__col_read(pq_col *c, int64_t rows, pq_leaf_batch *b, dk_error *err);
void dk_pq__leaf_batch_init(pq_leaf_batch *b, const dk_allocator *a);
void dk_pq__leaf_batch_dispose(pq_leaf_batch *b);

/* ---- assembly (assemble.c) --------------------------------------------------------------- */

/* Builds the node's Arrow data for one batch into `a` from the leaves' batches. */
dk_status dk_pq__assemble(dk_arr *a, const pq_anode *n, pq_leaf_batch *const *leaf_batches,
                          int64_t rows, dk_error *err);

/* Same for one top-level field (child of the root struct) into its builder; thread-safe
** across different fields. */
dk_status dk_pq__assemble_field(dk_arr *a, const pq_anode *field, pq_leaf_batch *const *lb,
                                int64_t rows, dk_error *err);


#endif /* DK_PARQUET_READER_H */
