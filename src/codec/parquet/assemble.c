/*
** assemble.c — record assembly (Dremel, "Dremel: Interactive Analysis of Web-Scale Datasets"
** section 4, as specified for Parquet in parquet-format README "Nested Encoding"): turns
** each leaf's batch of definition/repetition levels and dense values into Arrow validity
** bitmaps, list offsets and value buffers, column-wise. Logical conversions (INT96, decimals,
** millisecond timestamps, narrow integers) happen while values are spread into place.
*/
#include "codec/parquet/reader.h"

typedef struct levels {
  const uint32_t *def, *rep; /* NULL when the max level is 0 */
  int64_t n;
} levels;

static levels batch_levels(const pq_leaf_batch *b) {
  levels l;
  l.def = b->def.len ? (const uint32_t *)(const void *)b->def.data : NULL;
  l.rep = b->rep.len ? (const uint32_t *)(const void *)b->rep.data : NULL;
  l.n = b->n_levels;
  return l;
}

static inline int is_slot(const levels *l, int64_t i, int16_t slot_rep, int16_t slot_def) {
  return (!l->rep || l->rep[i] <= (uint32_t)slot_rep) && (!l->def || l->def[i] >= (uint32_t)slot_def);
}

/* Writes validity bits for slots [0, n) at a->length from valid[] (1 = valid). */
static dk_status put_validity(dk_arr *a, const uint8_t *valid, int64_t n, int64_t nulls,
                              dk_error *err) {
  if (nulls == 0 && !a->validity.data) return DK_OK;
  DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, n, err));
  uint8_t *bits = a->validity.data;
  int64_t base = a->length;
  if (!valid) {
    for (int64_t k = 0; k < n; k++) dk__bit_set(bits, base + k);
  } else {
    for (int64_t k = 0; k < n; k++) {
      if (valid[k]) dk__bit_set(bits, base + k);
      else dk__bit_clear(bits, base + k);
    }
  }
  return DK_OK;
}

static inline int64_t load_i64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline int32_t load_i32(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* big-endian two's complement of len bytes -> little-endian 16 bytes */
static dk_status be_to_dec128(uint8_t *out, const uint8_t *p, size_t len, dk_error *err) {
  uint8_t fill = len > 0 && (p[0] & 0x80) ? 0xff : 0;
  if (len > 16) {
    for (size_t i = 0; i < len - 16; i++)
      if (p[i] != fill)
        return dk__error_set(err, DK_CORRUPT, "decimal value does not fit 128 bits");
    p += len - 16;
    len = 16;
  }
  memset(out, fill, 16);
  for (size_t i = 0; i < len; i++) out[i] = p[len - 1 - i];
  return DK_OK;
}

static void i64_to_dec128(uint8_t *out, int64_t v) {
  memcpy(out, &v, 8);
  memset(out + 8, v < 0 ? 0xff : 0, 8);
}

/* Converts one dense physical value (index j) to its Arrow bytes at out. */
static dk_status convert_one(const pq_anode *n, const pq_leaf_batch *b, int64_t j, uint8_t *out,
                             int w_in, int w_out, dk_error *err) {
  const uint8_t *in = b->vals.data + (size_t)j * (size_t)w_in;
  switch (n->conv) {
    case PQ_CONV_COPY: memcpy(out, in, (size_t)w_out); return DK_OK;
    case PQ_CONV_I8: *(int8_t *)out = (int8_t)load_i32(in); return DK_OK;
    case PQ_CONV_I16: { int16_t v = (int16_t)load_i32(in); memcpy(out, &v, 2); return DK_OK; }
    case PQ_CONV_MILLIS_TO_MICROS: {
      int64_t v = (int64_t)((uint64_t)load_i64(in) * 1000u);
      memcpy(out, &v, 8);
      return DK_OK;
    }
    case PQ_CONV_INT96: {
      int64_t nanos = load_i64(in);
      uint32_t day;
      memcpy(&day, in + 8, 4);
      int64_t v = (int64_t)((uint64_t)((int64_t)day - 2440588) * 86400000000ULL +
                            (uint64_t)(nanos / 1000));
      memcpy(out, &v, 8);
      return DK_OK;
    }
    case PQ_CONV_DEC32: i64_to_dec128(out, load_i32(in)); return DK_OK;
    case PQ_CONV_DEC64: i64_to_dec128(out, load_i64(in)); return DK_OK;
    case PQ_CONV_DEC_FIXED: return be_to_dec128(out, in, (size_t)w_in, err);
    case PQ_CONV_DEC_BYTES: {
      const int32_t *o = (const int32_t *)(const void *)b->offs.data;
      return be_to_dec128(out, b->data.data + o[j], (size_t)(o[j + 1] - o[j]), err);
    }
    default: return dk__error_set(err, DK_INTERNAL, "bad conversion %d", n->conv);
  }
}

/* Big-endian two's complement FLBA of W (1..8) bytes -> decimal128, values [0, count) of in.
** Each value is read as the 8 bytes ending at its last byte (a byte-swapped load, then an
** arithmetic shift drops the bytes before it), so nothing past the input is read; values
** too close to the start for that take the byte loop. */
#define DEC_BE_SMALL(W)                                                                  \
  static void dec_be_small_##W(uint8_t *out, const uint8_t *in, int64_t count) {        \
    int64_t k = 0;                                                                      \
    for (; k < count && k * (W) + (W) < 8; k++) {                                       \
      int64_t v = (int8_t)in[k * (W)];                                                  \
      for (int b = 1; b < (W); b++) v = (int64_t)((uint64_t)v << 8) | in[k * (W) + b];  \
      i64_to_dec128(out + k * 16, v);                                                   \
    }                                                                                   \
    for (; k < count; k++) {                                                            \
      uint64_t x;                                                                       \
      memcpy(&x, in + k * (W) + (W) - 8, 8);                                            \
      int64_t v = (int64_t)(__builtin_bswap64(x) << (64 - 8 * (W))) >> (64 - 8 * (W));  \
      i64_to_dec128(out + k * 16, v);                                                   \
    }                                                                                   \
  }
DEC_BE_SMALL(1)
DEC_BE_SMALL(2)
DEC_BE_SMALL(3)
DEC_BE_SMALL(4)
DEC_BE_SMALL(5)
DEC_BE_SMALL(6)
DEC_BE_SMALL(7)
DEC_BE_SMALL(8)

/* Converts dense values [0, count) of b to Arrow bytes at dst (no nulls in between): one
** loop per conversion instead of a call per value. */
static dk_status convert_dense(const pq_anode *n, const pq_leaf_batch *b, uint8_t *dst,
                               int64_t count, int w_in, int w_out, dk_error *err) {
  const uint8_t *in = b->vals.data;
  switch (n->conv) {
    case PQ_CONV_DEC32:
      for (int64_t k = 0; k < count; k++) i64_to_dec128(dst + k * 16, load_i32(in + k * 4));
      return DK_OK;
    case PQ_CONV_DEC64:
      for (int64_t k = 0; k < count; k++) i64_to_dec128(dst + k * 16, load_i64(in + k * 8));
      return DK_OK;
    case PQ_CONV_DEC_FIXED:
      switch (w_in) {
        case 1: dec_be_small_1(dst, in, count); return DK_OK;
        case 2: dec_be_small_2(dst, in, count); return DK_OK;
        case 3: dec_be_small_3(dst, in, count); return DK_OK;
        case 4: dec_be_small_4(dst, in, count); return DK_OK;
        case 5: dec_be_small_5(dst, in, count); return DK_OK;
        case 6: dec_be_small_6(dst, in, count); return DK_OK;
        case 7: dec_be_small_7(dst, in, count); return DK_OK;
        case 8: dec_be_small_8(dst, in, count); return DK_OK;
        default: break;
      }
      break;
    case PQ_CONV_MILLIS_TO_MICROS:
      for (int64_t k = 0; k < count; k++) {
        int64_t v = (int64_t)((uint64_t)load_i64(in + k * 8) * 1000u);
        memcpy(dst + k * 8, &v, 8);
      }
      return DK_OK;
    default: break;
  }
  for (int64_t k = 0; k < count; k++)
    DK_RETURN_NOT_OK(convert_one(n, b, k, dst + k * w_out, w_in, w_out, err));
  return DK_OK;
}

static int phys_width(const pq_anode *n) {
  switch (n->pq->el->type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32:
    case PQ_FLOAT: return 4;
    case PQ_INT64:
    case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FLBA: return n->pq->el->type_length;
    default: return 0;
  }
}

static dk_status assemble_leaf(dk_arr *a, const pq_anode *n, pq_leaf_batch *b,
                               dk_buf *scratch, dk_error *err) {
  levels l = batch_levels(b);
  int16_t max_def = n->pq->max_def;
  /* slot validity */
  int64_t n_slots = 0;
  const uint8_t *valid = NULL;
  if (!l.def) {
    n_slots = l.n;
  } else {
    dk__buf_clear(scratch);
    DK_RETURN_NOT_OK(dk__buf_reserve(scratch, (size_t)l.n, err));
    uint8_t *v = (uint8_t *)scratch->data;
    if (!l.rep) {
      for (int64_t i = 0; i < l.n; i++) v[i] = l.def[i] == (uint32_t)max_def;
      n_slots = l.n;
    } else {
      for (int64_t i = 0; i < l.n; i++)
        if (is_slot(&l, i, n->slot_rep, n->slot_def)) v[n_slots++] = l.def[i] == (uint32_t)max_def;
    }
    valid = v;
  }
  int64_t nulls = n_slots - b->n_dense;
  if (nulls < 0) return dk__error_set(err, DK_INTERNAL, "more values than slots");
  if (nulls == 0) valid = NULL;
  if (n->conv == PQ_CONV_NULL) {
    DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, n_slots, err));
    for (int64_t k = 0; k < n_slots; k++) dk__bit_clear(a->validity.data, a->length + k);
    dk__arr_advance(a, n_slots, n_slots);
    return DK_OK;
  }
  if (n->conv == PQ_CONV_COPY && !a->values.data && a->length == 0 && n_slots > 0) {
    /* zero copy: the dense values become the Arrow values buffer, spread in place */
    int64_t w = dk__atype_width(&a->type);
    DK_RETURN_NOT_OK(dk__abuf_reserve(&b->vals, b->alloc, n_slots * w - b->vals.len, err));
    a->values = b->vals;
    memset(&b->vals, 0, sizeof b->vals);
    DK_RETURN_NOT_OK(put_validity(a, valid, n_slots, nulls, err));
    if (valid) {
      uint8_t *d = a->values.data;
      int64_t j = b->n_dense;
      for (int64_t k = n_slots - 1; k >= 0; k--) {
        if (valid[k]) memmove(d + k * w, d + (--j) * w, (size_t)w);
        else memset(d + k * w, 0, (size_t)w);
      }
    }
    a->values.len = n_slots * w;
    dk__arr_advance(a, n_slots, nulls);
    return DK_OK;
  }
  DK_RETURN_NOT_OK(dk__arr_reserve(a, n_slots, err));
  DK_RETURN_NOT_OK(put_validity(a, valid, n_slots, nulls, err));
  int64_t base = a->length;
  if (n->conv == PQ_CONV_BYTES) {
    const int32_t *src = (const int32_t *)(const void *)b->offs.data;
    int32_t *dst = (int32_t *)(void *)a->values.data + base; /* dst[0] is the current end */
    int64_t data_base = a->data.len;
    if (data_base + b->data.len > INT32_MAX)
      return dk__error_set(err, DK_UNSUPPORTED, "array exceeds 2 GiB of strings; use smaller batches");
    if (!a->data.data && b->data.data) { /* zero copy: the batch's bytes become the Arrow data */
      a->data = b->data;
      memset(&b->data, 0, sizeof b->data);
    } else if (b->data.len > 0) {
      DK_RETURN_NOT_OK(dk__abuf_append(&a->data, a->alloc, b->data.data, b->data.len, err));
    }
    int32_t db = (int32_t)data_base;
    if (!valid) {
      for (int64_t k = 0; k < n_slots; k++) dst[k + 1] = db + src[k + 1];
    } else {
      int64_t j = 0;
      for (int64_t k = 0; k < n_slots; k++) {
        if (valid[k]) j++;
        dst[k + 1] = db + src[j];
      }
    }
    a->values.len += n_slots * 4;
  } else if (n->conv == PQ_CONV_BOOL) {
    const uint8_t *src = b->vals.data;
    uint8_t *bits = a->values.data;
    int64_t j = 0;
    for (int64_t k = 0; k < n_slots; k++) {
      int v = valid && !valid[k] ? 0 : src[j++];
      if (v) dk__bit_set(bits, base + k);
      else dk__bit_clear(bits, base + k);
    }
    a->values.len = (base + n_slots + 7) / 8;
  } else {
    int w_out = dk__atype_width(&a->type);
    int w_in = phys_width(n);
    uint8_t *dst = a->values.data + a->values.len;
    if (n->conv == PQ_CONV_COPY && !valid) {
      if (n_slots > 0) memcpy(dst, b->vals.data, (size_t)n_slots * (size_t)w_out);
    } else if (!valid) {
      DK_RETURN_NOT_OK(convert_dense(n, b, dst, n_slots, w_in, w_out, err));
    } else {
      int64_t j = 0;
      for (int64_t k = 0; k < n_slots; k++) {
        if (valid[k]) DK_RETURN_NOT_OK(convert_one(n, b, j++, dst + k * w_out, w_in, w_out, err));
        else memset(dst + k * w_out, 0, (size_t)w_out);
      }
    }
    a->values.len += n_slots * w_out;
  }
  dk__arr_advance(a, n_slots, nulls);
  return DK_OK;
}

static dk_status assemble(dk_arr *a, const pq_anode *n, pq_leaf_batch *const *lb, int64_t rows,
                          dk_buf *scratch, dk_error *err);

static dk_status assemble_group(dk_arr *a, const pq_anode *n, pq_leaf_batch *const *lb,
                                int64_t rows, dk_buf *scratch, dk_error *err) {
  levels l = batch_levels(lb[n->leaf]);
  int list = n->kind != PQ_AN_STRUCT;
  const pq_anode *child = list ? n->children[0] : NULL;
  /* count slots and nulls */
  int64_t n_slots = 0, nulls = 0;
  uint32_t dv = (uint32_t)n->def_valid;
  if (!l.def) {
    n_slots = l.n;
  } else if (!l.rep) { /* no repetition: every level is a slot */
    n_slots = l.n;
    for (int64_t i = 0; i < l.n; i++) nulls += l.def[i] < dv;
  } else {
    for (int64_t i = 0; i < l.n; i++)
      if (is_slot(&l, i, n->slot_rep, n->slot_def)) {
        n_slots++;
        nulls += l.def[i] < dv;
      }
  }
  if (nulls) {
    DK_RETURN_NOT_OK(dk__arr_ensure_validity(a, n_slots, err));
    uint8_t *bits = a->validity.data;
    int64_t k = a->length;
    if (!l.rep) {
      for (int64_t i = 0; i < l.n; i++, k++) {
        if (l.def[i] >= dv) dk__bit_set(bits, k);
        else dk__bit_clear(bits, k);
      }
    } else {
      for (int64_t i = 0; i < l.n; i++)
        if (is_slot(&l, i, n->slot_rep, n->slot_def)) {
          if (l.def[i] >= dv) dk__bit_set(bits, k);
          else dk__bit_clear(bits, k);
          k++;
        }
    }
  } else {
    DK_RETURN_NOT_OK(put_validity(a, NULL, n_slots, 0, err));
  }
  if (list) {
    if (l.n > 0 && (!l.rep || !l.def))
      return dk__error_set(err, DK_INTERNAL, "list without repetition levels");
    DK_RETURN_NOT_OK(dk__arr_reserve(a, n_slots, err));
    int32_t *off = (int32_t *)(void *)a->values.data + a->length;
    int64_t elems = a->children[0].length, k = 0;
    uint32_t sr = (uint32_t)n->slot_rep, sd = (uint32_t)n->slot_def;
    uint32_t cr = (uint32_t)child->slot_rep, cd = (uint32_t)child->slot_def;
    for (int64_t i = 0; i < l.n; i++) {
      uint32_t r = l.rep[i], d = l.def[i];
      if (r <= sr && d >= sd) {
        if (k > 0) off[k] = (int32_t)elems;
        k++;
      }
      elems += r <= cr && d >= cd;
    }
    if (elems > INT32_MAX)
      return dk__error_set(err, DK_UNSUPPORTED, "list exceeds 2^31 elements; use smaller batches");
    if (n_slots > 0) off[n_slots] = (int32_t)elems;
    a->values.len += n_slots * 4;
  }
  dk__arr_advance(a, n_slots, nulls);
  for (int i = 0; i < n->n_children; i++)
    DK_RETURN_NOT_OK(assemble(&a->children[i], n->children[i], lb, rows, scratch, err));
  return DK_OK;
}

static dk_status assemble(dk_arr *a, const pq_anode *n, pq_leaf_batch *const *lb, int64_t rows,
                          dk_buf *scratch, dk_error *err) {
  if (n->kind == PQ_AN_LEAF) return assemble_leaf(a, n, lb[n->leaf], scratch, err);
  return assemble_group(a, n, lb, rows, scratch, err);
}

dk_status dk_pq__assemble_field(dk_arr *a, const pq_anode *field, pq_leaf_batch *const *lb,
                                int64_t rows, dk_error *err) {
  dk_buf scratch;
  dk__buf_init(&scratch, a->alloc);
  dk_status st = assemble(a, field, lb, rows, &scratch, err);
  dk__buf_dispose(&scratch);
  return st;
}

dk_status dk_pq__assemble(dk_arr *a, const pq_anode *root, pq_leaf_batch *const *lb, int64_t rows,
                          dk_error *err) {
  dk_buf scratch;
  dk__buf_init(&scratch, a->alloc);
  dk_status st = DK_OK;
  for (int i = 0; st == DK_OK && i < root->n_children; i++)
    st = assemble(&a->children[i], root->children[i], lb, rows, &scratch, err);
  if (st == DK_OK) dk__arr_advance(a, rows, 0);
  dk__buf_dispose(&scratch);
  return st;
}
