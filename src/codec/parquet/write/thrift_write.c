/*
** write/thrift_write.c — Thrift compact protocol encoding (Apache Thrift "Compact protocol"
** spec, thrift/doc/specs/thrift-compact-protocol.md) for Parquet's footer, page headers and
** page indexes. Field headers carry id deltas when they fit in 4 bits; integers are zigzag
** varints; bools in fields live in the type nibble, bools in lists are one byte (1 true,
** 2 false, as the C++ and Java encoders write them). The first buffer failure sticks in w->st.
*/
#include "codec/parquet/write/pqw.h"

void dk_pqw__tp_init(dk_tpw *w, dk_buf *b, dk_error *err) {
  memset(w, 0, sizeof *w);
  w->b = b;
  w->err = err;
}

static void put(dk_tpw *w, const void *p, size_t n) {
  if (w->st == DK_OK) w->st = dk__buf_append(w->b, p, n, w->err);
}

static void put_byte(dk_tpw *w, uint8_t c) { put(w, &c, 1); }

static void put_varint(dk_tpw *w, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (uint8_t)v;
  put(w, tmp, n);
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static void field(dk_tpw *w, int type, int16_t id) {
  int16_t last = w->depth > 0 ? w->last[w->depth - 1] : 0;
  int delta = id - last;
  if (delta > 0 && delta <= 15) {
    put_byte(w, (uint8_t)((delta << 4) | type));
  } else {
    put_byte(w, (uint8_t)type);
    put_varint(w, zigzag(id));
  }
  if (w->depth > 0) w->last[w->depth - 1] = id;
}

void dk_pqw__tp_struct_begin(dk_tpw *w, int16_t id) {
  if (id) field(w, DK_TP_STRUCT, id);
  if (w->depth >= DK_TP_MAX_DEPTH) {
    if (w->st == DK_OK)
      w->st = dk__error_set(w->err, DK_INTERNAL, "Thrift structs nested too deeply");
    return;
  }
  w->last[w->depth++] = 0;
}

void dk_pqw__tp_struct_end(dk_tpw *w) {
  put_byte(w, DK_TP_STOP);
  if (w->depth > 0) w->depth--;
}

void dk_pqw__tp_i32(dk_tpw *w, int16_t id, int32_t v) {
  field(w, DK_TP_I32, id);
  put_varint(w, zigzag(v));
}

void dk_pqw__tp_i16(dk_tpw *w, int16_t id, int16_t v) {
  field(w, DK_TP_I16, id);
  put_varint(w, zigzag(v));
}

void dk_pqw__tp_i64(dk_tpw *w, int16_t id, int64_t v) {
  field(w, DK_TP_I64, id);
  put_varint(w, zigzag(v));
}

void dk_pqw__tp_byte(dk_tpw *w, int16_t id, int8_t v) {
  field(w, DK_TP_BYTE, id);
  put_byte(w, (uint8_t)v);
}

void dk_pqw__tp_bool(dk_tpw *w, int16_t id, int v) { field(w, v ? DK_TP_TRUE : DK_TP_FALSE, id); }

void dk_pqw__tp_binary(dk_tpw *w, int16_t id, const void *p, size_t n) {
  field(w, DK_TP_BINARY, id);
  dk_pqw__tp_elem_binary(w, p, n);
}

void dk_pqw__tp_list(dk_tpw *w, int16_t id, int elem_type, size_t count) {
  field(w, DK_TP_LIST, id);
  if (count < 15) {
    put_byte(w, (uint8_t)((count << 4) | (size_t)elem_type));
  } else {
    put_byte(w, (uint8_t)(0xf0 | elem_type));
    put_varint(w, count);
  }
}

void dk_pqw__tp_elem_i32(dk_tpw *w, int32_t v) { put_varint(w, zigzag(v)); }
void dk_pqw__tp_elem_i64(dk_tpw *w, int64_t v) { put_varint(w, zigzag(v)); }
void dk_pqw__tp_elem_bool(dk_tpw *w, int v) { put_byte(w, v ? 1 : 2); }

void dk_pqw__tp_elem_binary(dk_tpw *w, const void *p, size_t n) {
  put_varint(w, n);
  if (n) put(w, p, n);
}
