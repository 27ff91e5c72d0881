/*
** array.h — dk's own Arrow C Data Interface producer (library-internal, not API).
**
** Three pieces, written in nanoarrow's manner (init/reset pairs, moves that NULL the source):
**
**  - dk_atype: a parsed Arrow type (id + parameters) with format-string conversion both ways.
**  - dk_schema_*: build a struct ArrowSchema tree whose strings and children are owned by its
**    private_data; one release frees the whole tree.
**  - dk_arr: an array under construction. Producers write values straight into its buffers
**    (dk_abuf, 64-byte aligned) and dk__arr_finish hands the buffers to a struct ArrowArray
**    WITHOUT copying: the ArrowArray's private_data owns them from then on.
**
** Buffer layout follows the Arrow columnar spec: validity bitmap (LSB first; absent when
** null_count == 0), then values (fixed width), or int32 offsets (+ data for utf8/binary).
** Struct arrays have only a validity buffer; list/map arrays have validity + int32 offsets and
** one child (map: a non-null struct<key, value> child named "entries").
*/
#ifndef DK_ARROW_ARRAY_H
#define DK_ARROW_ARRAY_H

#include "dk/arrow.h"
#include "util/util.h"

/* ---- types ------------------------------------------------------------------------------ */

typedef enum dk_atype_id {
  DK_AT_NA = 0,
  DK_AT_BOOL,
  DK_AT_INT8,
  DK_AT_INT16,
  DK_AT_INT32,
  DK_AT_INT64,
  DK_AT_UINT8,
  DK_AT_UINT16,
  DK_AT_UINT32,
  DK_AT_UINT64,
  DK_AT_FLOAT16,
  DK_AT_FLOAT,
  DK_AT_DOUBLE,
  DK_AT_DECIMAL128,  /* precision, scale */
  DK_AT_DATE32,
  DK_AT_TIME32,      /* unit s/ms */
  DK_AT_TIME64,      /* unit us/ns */
  DK_AT_TIMESTAMP,   /* unit + tz ("" = none) */
  DK_AT_STRING,
  DK_AT_BINARY,
  DK_AT_FIXED_BINARY, /* byte_width */
  DK_AT_LIST,
  DK_AT_STRUCT,
  DK_AT_MAP
} dk_atype_id;

typedef enum dk_time_unit { DK_TU_SECOND = 0, DK_TU_MILLI, DK_TU_MICRO, DK_TU_NANO } dk_time_unit;

typedef struct dk_atype {
  dk_atype_id id;
  int32_t precision;   /* DECIMAL128 */
  int32_t scale;       /* DECIMAL128 */
  int32_t byte_width;  /* FIXED_BINARY */
  dk_time_unit unit;   /* TIME32/TIME64/TIMESTAMP */
  char tz[40];         /* TIMESTAMP: "" = no time zone (wall clock), else e.g. "UTC" */
} dk_atype;

static inline dk_atype dk__atype_make(dk_atype_id id) {
  dk_atype t;
  memset(&t, 0, sizeof t);
  t.id = id;
  return t;
}
dk_atype dk__atype_decimal(int32_t precision, int32_t scale);
dk_atype dk__atype_timestamp(dk_time_unit unit, const char *tz /* NULL or "" = none */);

/* Bytes per value in the values buffer (bool: 0 = bit-packed; variable/nested: 0). */
int dk__atype_width(const dk_atype *t);
/* Arrow format string ("l", "tsu:UTC", "d:10,2", "w:16", "+s", ...) into buf. */
dk_status dk__atype_format(const dk_atype *t, char *buf, size_t cap, dk_error *err);
/* Parses a format string; unknown formats are DK_UNSUPPORTED. */
dk_status dk__atype_parse(dk_atype *out, const char *format, dk_error *err);

/* ---- schemas ---------------------------------------------------------------------------- */

/* Initialises *out as a field of type t named `name` (may be NULL) with n_children child slots,
** each initialised to an empty released schema the caller fills with dk__schema_init (or moves
** into). flags: ARROW_FLAG_NULLABLE etc. For MAP the caller adds one "entries" struct child
** with "key" and "value". On failure *out is released (release == NULL). */
dk_status dk__schema_init(struct ArrowSchema *out, const dk_atype *t, const char *name,
                         int64_t flags, int64_t n_children, dk_error *err);
/* The same with every block of *out allocated with alloc (NULL: libc), released with it. */
dk_status dk__schema_init_a(struct ArrowSchema *out, const dk_atype *t, const char *name,
                           int64_t flags, int64_t n_children, const dk_allocator *alloc,
                           dk_error *err);
/* Sets the metadata blob (Arrow's binary key/value encoding built from n pairs). */
dk_status dk__schema_set_metadata(struct ArrowSchema *s, const char *const *keys,
                                 const char *const *values, int n, dk_error *err);
/* Looks a key up in an Arrow metadata blob; returns a view or {NULL,0}. */
dk_str dk__schema_metadata_get(const char *metadata, const char *key);
/* Deep copy (the _a form with alloc, as dk__schema_init_a). */
dk_status dk__schema_copy(struct ArrowSchema *out, const struct ArrowSchema *src, dk_error *err);
dk_status dk__schema_copy_a(struct ArrowSchema *out, const struct ArrowSchema *src,
                           const dk_allocator *alloc, dk_error *err);

static inline void dk__schema_move(struct ArrowSchema *src, struct ArrowSchema *dst) {
  *dst = *src;
  src->release = NULL;
}
static inline void dk__array_move(struct ArrowArray *src, struct ArrowArray *dst) {
  *dst = *src;
  src->release = NULL;
}
static inline void dk__schema_release(struct ArrowSchema *s) {
  if (s && s->release) s->release(s);
}
static inline void dk__array_release(struct ArrowArray *a) {
  if (a && a->release) a->release(a);
}

/* ---- buffers ---------------------------------------------------------------------------- */

typedef struct dk_abuf {
  uint8_t *data;       /* 64-byte aligned; NULL until first reserve */
  int64_t len;         /* bytes in use */
  int64_t cap;         /* bytes allocated */
} dk_abuf;

/* Makes room for `extra` more bytes (capacity doubles; padding keeps cap a multiple of 64). */
dk_status dk__abuf_reserve(dk_abuf *b, const dk_allocator *a, int64_t extra, dk_error *err);
dk_status dk__abuf_append(dk_abuf *b, const dk_allocator *a, const void *p, int64_t n,
                         dk_error *err);
void dk__abuf_free(dk_abuf *b, const dk_allocator *a);

/* ---- arrays under construction ---------------------------------------------------------- */

typedef struct dk_arr dk_arr;
struct dk_arr {
  const dk_allocator *alloc;
  dk_atype type;
  int64_t length;       /* values (rows) so far */
  int64_t null_count;   /* nulls so far */
  dk_abuf validity;     /* bitmap; materialised lazily on the first null */
  dk_abuf values;       /* fixed-width values, bool bits, or int32 offsets */
  dk_abuf data;         /* utf8/binary bytes */
  int64_t n_children;
  dk_arr *children;     /* STRUCT fields / LIST item / MAP entries(struct<key,value>) */
};

/* Builds an empty builder tree matching a schema (nested types recurse). */
dk_status dk__arr_init_from_schema(dk_arr *a, const struct ArrowSchema *schema,
                                  const dk_allocator *alloc, dk_error *err);
/* Builds an empty leaf (or childless) builder; nested callers add children with
** dk__arr_set_children. */
dk_status dk__arr_init(dk_arr *a, const dk_atype *t, const dk_allocator *alloc, dk_error *err);
dk_status dk__arr_set_children(dk_arr *a, int64_t n, dk_error *err);
void dk__arr_reset(dk_arr *a);

/* Ensures room for n more values (and, for offsets-based types, n more offsets). */
dk_status dk__arr_reserve(dk_arr *a, int64_t n, dk_error *err);
/* Materialises the validity bitmap (all-valid so far) so producers can clear bits directly. */
dk_status dk__arr_ensure_validity(dk_arr *a, int64_t extra, dk_error *err);

/* Appends (no reserve needed; they reserve themselves — for bulk paths write buffers
** directly, then call dk__arr_advance). */
dk_status dk__arr_append_null(dk_arr *a, dk_error *err);   /* nested: also child slots none */
dk_status dk__arr_append_nulls(dk_arr *a, int64_t n, dk_error *err);
dk_status dk__arr_append_int(dk_arr *a, int64_t v, dk_error *err);    /* any int/date/time/ts */
dk_status dk__arr_append_uint(dk_arr *a, uint64_t v, dk_error *err);
dk_status dk__arr_append_double(dk_arr *a, double v, dk_error *err);  /* float or double */
dk_status dk__arr_append_bool(dk_arr *a, bool v, dk_error *err);
dk_status dk__arr_append_bytes(dk_arr *a, const void *p, int64_t n, dk_error *err); /* utf8, binary, fixed, decimal128 (16 LE bytes) */
/* Nested: call after appending the element's children. For LIST/MAP, closes the current
** element (its offset = child length); for STRUCT, counts one row. */
dk_status dk__arr_finish_element(dk_arr *a, dk_error *err);

/* Bulk path: the producer wrote `n` values (and validity bits if materialised, and offsets)
** directly; advance length/null_count. */
void dk__arr_advance(dk_arr *a, int64_t n, int64_t nulls);

/* Moves the built buffers into *out (zero copy) and leaves `a` empty for reuse with the same
** type. The exported array owns its buffers; releasing it frees them. */
dk_status dk__arr_finish(dk_arr *a, struct ArrowArray *out, dk_error *err);

/* Bit helpers */
static inline bool dk__bit_get(const uint8_t *bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void dk__bit_set(uint8_t *bits, int64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void dk__bit_clear(uint8_t *bits, int64_t i) {
  bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* The release callback of a borrowed view (a slice or a copy of an ArrowArray struct whose
** buffers someone else owns): it marks the view released and frees nothing. */
static inline void dk__array_release_borrowed(struct ArrowArray *a) { a->release = NULL; }

/* ---- exported arrays from foreign buffers ------------------------------------------------ */

/* Wraps an arbitrary owner: `release_owner(owner)` runs when the array is released. Used to
** hand decoded pages to Arrow without copying. buffers/children are copied into the private
** block; children are moved. The children and the owner pass in on every path: a failure
** releases them (and runs release_owner). */
dk_status dk__array_wrap(struct ArrowArray *out, int64_t length, int64_t null_count,
                        int64_t offset, int n_buffers, const void *const *buffers,
                        int64_t n_children, struct ArrowArray *children,
                        void (*release_owner)(void *owner), void *owner,
                        const dk_allocator *alloc, dk_error *err);

/* ---- streams ---------------------------------------------------------------------------- */

/* A producer implements these; dk__stream_init builds the ArrowArrayStream around them,
** including get_last_error (message from the dk_error the callbacks fill) and errno mapping. */
typedef struct dk_stream_impl {
  /* Fills *out with the schema (caller of get_schema owns it). */
  dk_status (*get_schema)(void *state, struct ArrowSchema *out, dk_error *err);
  /* Fills *out with the next batch, or leaves out->release == NULL at the end. */
  dk_status (*get_next)(void *state, struct ArrowArray *out, dk_error *err);
  /* Frees state. */
  void (*release)(void *state);
} dk_stream_impl;

dk_status dk__stream_init(struct ArrowArrayStream *out, const dk_stream_impl *impl, void *state,
                         const dk_allocator *alloc, dk_error *err);

/* A stream over batches already in memory (moved in; schema moved in). */
dk_status dk__stream_from_batches(struct ArrowArrayStream *out, struct ArrowSchema *schema,
                                 struct ArrowArray *batches, int64_t n_batches,
                                 const dk_allocator *alloc, dk_error *err);

/* Maps a dk_status to the errno value the Arrow stream callbacks return. */
int dk__status_to_errno(dk_status s);
/* The dk_status behind a stream callback's errno rc: the one recorded for a stream made by
** dk__stream_init, else rc mapped back. */
dk_status dk__stream_status(const struct ArrowArrayStream *s, int rc);

#endif /* DK_ARROW_ARRAY_H */
