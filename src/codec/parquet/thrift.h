/*
** thrift.h — Thrift compact protocol reader (library-internal, not API).
**
** A cursor over a byte range: varints, zigzag integers, field headers with id deltas, binary,
** nested lists/sets/maps/structs, and skipping of unknown fields. Every length is checked
** against the remaining bytes; nesting deeper than DK_TP_MAX_DEPTH is an error. Errors are
** DK_CORRUPT with the absolute file offset of the failure (base + position).
*/
#ifndef DK_PARQUET_THRIFT_H
#define DK_PARQUET_THRIFT_H

#include "util/util.h"

#define DK_TP_MAX_DEPTH 64

enum {
  DK_TP_STOP = 0,
  DK_TP_TRUE = 1,
  DK_TP_FALSE = 2,
  DK_TP_BYTE = 3,
  DK_TP_I16 = 4,
  DK_TP_I32 = 5,
  DK_TP_I64 = 6,
  DK_TP_DOUBLE = 7,
  DK_TP_BINARY = 8,
  DK_TP_LIST = 9,
  DK_TP_SET = 10,
  DK_TP_MAP = 11,
  DK_TP_STRUCT = 12
};

typedef struct dk_tp {
  const uint8_t *start, *p, *end;
  int64_t base;          /* file offset of start (for messages) */
  int depth;             /* current struct nesting */
  const char *what;      /* "footer", "page header", ... (for messages) */
  dk_error *err;
} dk_tp;

/* Frame of one struct being read: the last field id (ids are delta-coded). */
typedef struct dk_tp_struct {
  int16_t last_id;
} dk_tp_struct;

void dk_pq__tp_init(dk_tp *t, const uint8_t *p, size_t len, int64_t base, const char *what,
                dk_error *err);
/* Records a DK_CORRUPT error at the current position. */
dk_status dk_pq__tp_fail(dk_tp *t, const char *cause);

dk_status dk_pq__tp_struct_begin(dk_tp *t, dk_tp_struct *s);
void dk_pq__tp_struct_end(dk_tp *t);
/* Next field header; *type == DK_TP_STOP at the end of the struct. */
dk_status dk_pq__tp_field(dk_tp *t, dk_tp_struct *s, int *type, int16_t *id);

dk_status dk_pq__tp_varint(dk_tp *t, uint64_t *out);
/* Reads an integer field of compact type `type` (BYTE/I16/I32/I64) into *out. */
dk_status dk_pq__tp_int(dk_tp *t, int type, int64_t *out);
/* Integer that must fit in int32 (and be >= lo). */
dk_status dk_pq__tp_i32(dk_tp *t, int type, int32_t *out);
dk_status dk_pq__tp_i64(dk_tp *t, int type, int64_t *out);
/* Bool field value: the type nibble carries it (TRUE/FALSE); inside lists it is a byte. */
dk_status dk_pq__tp_bool(dk_tp *t, int type, int *out);
/* Binary/string: a borrowed view into the buffer. */
dk_status dk_pq__tp_binary(dk_tp *t, int type, const uint8_t **p, uint32_t *len);
/* List/set header: element type and count (count checked against remaining bytes). */
dk_status dk_pq__tp_list(dk_tp *t, int type, int *elem_type, uint32_t *count);
/* Skips a value of the given type (recursing with the depth limit). */
dk_status dk_pq__tp_skip(dk_tp *t, int type);

static inline int64_t dk_pq__tp_offset(const dk_tp *t) { return t->base + (t->p - t->start); }

#endif /* DK_PARQUET_THRIFT_H */
