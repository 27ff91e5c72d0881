/*
** thrift.c — Thrift compact protocol decoding (Apache Thrift "Compact protocol" spec,
** thrift/doc/specs/thrift-compact-protocol.md), as used by Parquet's footer and page headers.
*/
#include "codec/parquet/thrift.h"

void dk_pq__tp_init(dk_tp *t, const uint8_t *p, size_t len, int64_t base, const char *what,
                dk_error *err) {
  t->start = t->p = p;
  t->end = p + len;
  t->base = base;
  t->depth = 0;
  t->what = what;
  t->err = err;
}

dk_status dk_pq__tp_fail(dk_tp *t, const char *cause) {
  return dk__error_set(t->err, DK_CORRUPT, "corrupt Parquet %s at offset %lld: %s", t->what,
                       (long long)dk_pq__tp_offset(t), cause);
}

dk_status dk_pq__tp_varint(dk_tp *t, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated varint");
    uint8_t b = *t->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return DK_OK;
    }
    if (shift == 63) break;
  }
  return dk_pq__tp_fail(t, "varint longer than 10 bytes");
}

static inline int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

dk_status dk_pq__tp_struct_begin(dk_tp *t, dk_tp_struct *s) {
  if (++t->depth > DK_TP_MAX_DEPTH) return dk_pq__tp_fail(t, "structs nested too deeply");
  s->last_id = 0;
  return DK_OK;
}

void dk_pq__tp_struct_end(dk_tp *t) { t->depth--; }

dk_status dk_pq__tp_field(dk_tp *t, dk_tp_struct *s, int *type, int16_t *id) {
  if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated struct (no stop field)");
  uint8_t b = *t->p++;
  *type = b & 0x0f;
  if (*type == DK_TP_STOP) {
    *id = 0;
    return DK_OK;
  }
  int delta = b >> 4;
  if (delta) {
    *id = (int16_t)(s->last_id + delta);
  } else {
    uint64_t v = 0;
    DK_RETURN_NOT_OK(dk_pq__tp_varint(t, &v));
    int64_t x = unzigzag(v);
    if (x < INT16_MIN || x > INT16_MAX) return dk_pq__tp_fail(t, "field id out of range");
    *id = (int16_t)x;
  }
  if (*type > DK_TP_STRUCT) return dk_pq__tp_fail(t, "unknown field type");
  s->last_id = *id;
  return DK_OK;
}

dk_status dk_pq__tp_int(dk_tp *t, int type, int64_t *out) {
  if (type == DK_TP_BYTE) {
    if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated byte");
    *out = (int8_t)*t->p++;
    return DK_OK;
  }
  if (type != DK_TP_I16 && type != DK_TP_I32 && type != DK_TP_I64)
    return dk_pq__tp_fail(t, "expected an integer field");
  uint64_t v = 0;
  DK_RETURN_NOT_OK(dk_pq__tp_varint(t, &v));
  *out = unzigzag(v);
  return DK_OK;
}

dk_status dk_pq__tp_i32(dk_tp *t, int type, int32_t *out) {
  int64_t v = 0;
  DK_RETURN_NOT_OK(dk_pq__tp_int(t, type, &v));
  if (v < INT32_MIN || v > INT32_MAX) return dk_pq__tp_fail(t, "i32 out of range");
  *out = (int32_t)v;
  return DK_OK;
}

dk_status dk_pq__tp_i64(dk_tp *t, int type, int64_t *out) { return dk_pq__tp_int(t, type, out); }

dk_status dk_pq__tp_bool(dk_tp *t, int type, int *out) {
  if (type == DK_TP_TRUE || type == DK_TP_FALSE) {
    *out = type == DK_TP_TRUE;
    return DK_OK;
  }
  return dk_pq__tp_fail(t, "expected a bool field");
}

dk_status dk_pq__tp_binary(dk_tp *t, int type, const uint8_t **p, uint32_t *len) {
  if (type != DK_TP_BINARY) return dk_pq__tp_fail(t, "expected a binary field");
  uint64_t n = 0;
  DK_RETURN_NOT_OK(dk_pq__tp_varint(t, &n));
  if (n > (uint64_t)(t->end - t->p)) return dk_pq__tp_fail(t, "binary length exceeds the buffer");
  *p = t->p;
  *len = (uint32_t)n;
  t->p += n;
  return DK_OK;
}

dk_status dk_pq__tp_list(dk_tp *t, int type, int *elem_type, uint32_t *count) {
  if (type != DK_TP_LIST && type != DK_TP_SET) return dk_pq__tp_fail(t, "expected a list field");
  if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated list header");
  uint8_t b = *t->p++;
  uint64_t n = b >> 4;
  *elem_type = b & 0x0f;
  if (n == 15) DK_RETURN_NOT_OK(dk_pq__tp_varint(t, &n));
  /* every element takes at least one byte, except bools which take one byte too */
  if (n > (uint64_t)(t->end - t->p)) return dk_pq__tp_fail(t, "list count exceeds the buffer");
  if (*elem_type == DK_TP_STOP || *elem_type > DK_TP_STRUCT)
    return dk_pq__tp_fail(t, "unknown list element type");
  *count = (uint32_t)n;
  return DK_OK;
}

dk_status dk_pq__tp_skip(dk_tp *t, int type) {
  switch (type) {
    case DK_TP_TRUE:
    case DK_TP_FALSE: return DK_OK;
    case DK_TP_BYTE:
      if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated byte");
      t->p++;
      return DK_OK;
    case DK_TP_I16:
    case DK_TP_I32:
    case DK_TP_I64: {
      uint64_t v = 0;
      return dk_pq__tp_varint(t, &v);
    }
    case DK_TP_DOUBLE:
      if (t->end - t->p < 8) return dk_pq__tp_fail(t, "truncated double");
      t->p += 8;
      return DK_OK;
    case DK_TP_BINARY: {
      const uint8_t *p;
      uint32_t n = 0;
      return dk_pq__tp_binary(t, type, &p, &n);
    }
    case DK_TP_LIST:
    case DK_TP_SET: {
      int et;
      uint32_t n = 0;
      DK_RETURN_NOT_OK(dk_pq__tp_list(t, type, &et, &n));
      if (++t->depth > DK_TP_MAX_DEPTH) return dk_pq__tp_fail(t, "lists nested too deeply");
      for (uint32_t i = 0; i < n; i++) {
        if (et == DK_TP_TRUE || et == DK_TP_FALSE) {
          if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated bool");
          t->p++;
        } else {
          DK_RETURN_NOT_OK(dk_pq__tp_skip(t, et));
        }
      }
      t->depth--;
      return DK_OK;
    }
    case DK_TP_MAP: {
      uint64_t n = 0;
      DK_RETURN_NOT_OK(dk_pq__tp_varint(t, &n));
      if (n == 0) return DK_OK;
      if (n > (uint64_t)(t->end - t->p)) return dk_pq__tp_fail(t, "map count exceeds the buffer");
      if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated map header");
      uint8_t kv = *t->p++;
      int kt = kv >> 4, vt = kv & 0x0f;
      if (kt == 0 || kt > DK_TP_STRUCT || vt == 0 || vt > DK_TP_STRUCT)
        return dk_pq__tp_fail(t, "unknown map key/value type");
      if (++t->depth > DK_TP_MAX_DEPTH) return dk_pq__tp_fail(t, "maps nested too deeply");
      for (uint64_t i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
          int ty = k ? vt : kt;
          if (ty == DK_TP_TRUE || ty == DK_TP_FALSE) {
            if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated bool");
            t->p++;
          } else {
            DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ty));
          }
        }
      }
      t->depth--;
      return DK_OK;
    }
    case DK_TP_STRUCT: {
      dk_tp_struct s;
      DK_RETURN_NOT_OK(dk_pq__tp_struct_begin(t, &s));
      for (;;) {
        int ft;
        int16_t id;
        DK_RETURN_NOT_OK(dk_pq__tp_field(t, &s, &ft, &id));
        if (ft == DK_TP_STOP) break;
        DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
      }
      dk_pq__tp_struct_end(t);
      return DK_OK;
    }
    default: return dk_pq__tp_fail(t, "unknown type");
  }
}
