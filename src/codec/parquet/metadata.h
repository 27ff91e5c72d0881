/*
** metadata.h — Parquet footer, page headers and schema tree (library-internal, not API).
**
** Decoded from the Thrift compact protocol (see thrift.h) following apache/parquet-format
** parquet.thrift. All strings and arrays live in the file's arena; binary statistics are views
** into the footer buffer, which the file keeps.
*/
#ifndef DK_PARQUET_METADATA_H
#define DK_PARQUET_METADATA_H

#include "codec/parquet/thrift.h"
#include "dk/parquet.h"

/* physical types */
enum { PQ_BOOLEAN = 0, PQ_INT32, PQ_INT64, PQ_INT96, PQ_FLOAT, PQ_DOUBLE, PQ_BYTE_ARRAY, PQ_FLBA };
/* repetition */
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
/* converted types */
enum {
  PQ_CT_UTF8 = 0, PQ_CT_MAP, PQ_CT_MAP_KEY_VALUE, PQ_CT_LIST, PQ_CT_ENUM, PQ_CT_DECIMAL,
  PQ_CT_DATE, PQ_CT_TIME_MILLIS, PQ_CT_TIME_MICROS, PQ_CT_TIMESTAMP_MILLIS,
  PQ_CT_TIMESTAMP_MICROS, PQ_CT_UINT_8, PQ_CT_UINT_16, PQ_CT_UINT_32, PQ_CT_UINT_64,
  PQ_CT_INT_8, PQ_CT_INT_16, PQ_CT_INT_32, PQ_CT_INT_64, PQ_CT_JSON, PQ_CT_BSON, PQ_CT_INTERVAL
};
/* logical type union members */
enum {
  PQ_LT_NONE = 0, PQ_LT_STRING = 1, PQ_LT_MAP = 2, PQ_LT_LIST = 3, PQ_LT_ENUM = 4,
  PQ_LT_DECIMAL = 5, PQ_LT_DATE = 6, PQ_LT_TIME = 7, PQ_LT_TIMESTAMP = 8, PQ_LT_INTEGER = 10,
  PQ_LT_UNKNOWN = 11, PQ_LT_JSON = 12, PQ_LT_BSON = 13, PQ_LT_UUID = 14, PQ_LT_FLOAT16 = 15,
  PQ_LT_OTHER = 99
};
enum { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };
/* page types */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICT = 2, PQ_PAGE_DATA_V2 = 3 };
/* encodings */
enum {
  PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICT = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
  PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6, PQ_ENC_DELTA_BYTE_ARRAY = 7,
  PQ_ENC_RLE_DICT = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9
};

typedef struct pq_logical {
  int kind;                  /* PQ_LT_* */
  int32_t scale, precision;  /* DECIMAL */
  int adjusted;              /* TIME/TIMESTAMP isAdjustedToUTC */
  int unit;                  /* TIME/TIMESTAMP PQ_UNIT_* */
  int bit_width, is_signed;  /* INTEGER */
} pq_logical;

typedef struct pq_schema_el {
  int type;                  /* physical type or -1 for groups */
  int32_t type_length;
  int repetition;            /* -1 when absent (root) */
  const char *name;
  int32_t num_children;
  int converted;             /* -1 when absent */
  int32_t scale, precision;
  int has_field_id;
  int32_t field_id;
  pq_logical logical;
} pq_schema_el;

typedef struct pq_stats {
  const uint8_t *min, *max;
  uint32_t min_len, max_len;
  int has_min, has_max;      /* min_value/max_value (or legacy min/max when safe) */
  int has_null_count;
  int64_t null_count;
  int has_distinct;
  int64_t distinct_count;
  int legacy;                /* came from the deprecated min/max fields */
} pq_stats;

typedef struct pq_column_meta {
  int type;
  int n_encodings;
  int32_t *encodings;
  int n_path;
  const char **path;
  int codec;
  int64_t num_values, total_uncompressed, total_compressed;
  int64_t data_page_offset;
  int64_t dictionary_page_offset;  /* -1 when absent */
  int has_stats;
  pq_stats stats;
  int64_t offset_index_offset, column_index_offset;  /* -1 when absent */
  int32_t offset_index_length, column_index_length;
} pq_column_meta;

typedef struct pq_row_group {
  int n_columns;
  pq_column_meta *columns;
  int64_t total_byte_size, num_rows, file_offset, total_compressed_size;
  int64_t start;             /* first page of the first column chunk */
  int64_t first_row;
} pq_row_group;

/* A schema tree node with Dremel levels. */
typedef struct pq_node pq_node;
struct pq_node {
  const pq_schema_el *el;
  pq_node *parent;
  pq_node **children;
  int n_children;
  int16_t max_def, max_rep;  /* levels at this node (counting itself) */
  int leaf;                  /* leaf column index, or -1 for groups */
  int first_leaf, n_leaves;  /* leaves under this node */
};

typedef struct pq_file_meta {
  int32_t version;
  int64_t num_rows;
  int n_schema;
  pq_schema_el *schema;
  int n_row_groups;
  pq_row_group *row_groups;
  const char *created_by;
  int n_kv;
  const char **kv_keys, **kv_values;
} pq_file_meta;

typedef struct pq_page_header {
  int type;
  int32_t uncompressed_size, compressed_size;
  int32_t num_values;        /* data (v1/v2) and dictionary pages */
  int encoding;
  int def_encoding, rep_encoding;
  int32_t num_nulls, num_rows;           /* v2 */
  int32_t def_bytes, rep_bytes;          /* v2 */
  int is_compressed;                     /* v2 (default 1) */
  int has_data, has_dict, has_v2;
  int has_crc;                           /* crc is set (PageHeader field 4) */
  uint32_t crc;                          /* CRC-32 of the page body as stored */
} pq_page_header;

typedef struct pq_page_location {
  int64_t offset;
  int32_t compressed_size;
  int64_t first_row;
} pq_page_location;

/* Parses FileMetaData from buf[0..len) (file offset `base`); arrays go into `ar`. */
dk_status dk_pq__parse_file_meta(pq_file_meta *out, dk_arena *ar, const uint8_t *buf, size_t len,
                                 int64_t base, dk_error *err);
/* Parses one PageHeader; *consumed is its size. */
dk_status dk_pq__parse_page_header(pq_page_header *out, const uint8_t *buf, size_t len,
                                   int64_t base, size_t *consumed, dk_error *err);
/* Parses an OffsetIndex into *out (n entries, allocated in ar). */
dk_status dk_pq__parse_offset_index(pq_page_location **out, int *n, dk_arena *ar,
                                    const uint8_t *buf, size_t len, int64_t base, dk_error *err);
/* Parses a ColumnIndex's null_pages/null_counts (min/max as views, allocated in ar). */
typedef struct pq_column_index {
  int n_pages;
  uint8_t *null_pages;
  const uint8_t **mins, **maxs;
  uint32_t *min_lens, *max_lens;
  int64_t *null_counts;      /* NULL when absent */
  int boundary_order;
} pq_column_index;
dk_status dk_pq__parse_column_index(pq_column_index *out, dk_arena *ar, const uint8_t *buf,
                                    size_t len, int64_t base, dk_error *err);

/* Builds the node tree from the flat schema list; *leaves lists leaf nodes in order. */
dk_status dk_pq__build_schema(pq_node **root, pq_node ***leaves, int *n_leaves, dk_arena *ar,
                              const pq_schema_el *els, int n, dk_error *err);

const char *dk_pq__type_name(int type);
const char *dk_pq__encoding_name(int enc);

#endif /* DK_PARQUET_METADATA_H */
