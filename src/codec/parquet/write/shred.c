/*
** write/shred.c — Arrow arrays to Dremel definition/repetition levels (apache/parquet-format
** README "Nested Encoding"; the 3-level LIST and MAP layouts of LogicalTypes.md).
**
** A top-level primitive column takes a direct path: no repetition levels, definition levels
** straight from the validity bitmap, values contiguous when there are no nulls. Anything
** nested walks the leaf's path row by row: a null at a node ends the walk with that node's
** definition level; an empty list emits the list's own level; list elements after the first
** repeat at the element's repetition level. Slots are physical (the array's offset included;
** struct children share their parent's slot space, list children are addressed by offsets).
*/
#include "arrow/array.h"
#include "codec/parquet/write/pqw.h"

typedef struct walk {
  pqw_col *c;
  pqw_field *const *fields;
  uint16_t *def, *rep;
  int64_t *idx;
  int64_t n_lv, cap_lv, n_idx, cap_idx;
  int64_t row;             /* current row (messages) */
  dk_error *err;
} walk;

static dk_status grow(walk *w, int64_t need_lv, int64_t need_idx) {
  pqw_col *c = w->c;
  if (w->n_lv + need_lv > w->cap_lv) {
    int64_t cap = DK_MAX(w->cap_lv * 2, w->n_lv + need_lv + 1024);
    /* the buffers' len tracks what is filled, so growing keeps it */
    if (c->max_def) {
      c->sh_def.len = (size_t)w->n_lv * 2;
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->sh_def, (size_t)(cap - w->n_lv) * 2, w->err));
      w->def = (uint16_t *)(void *)c->sh_def.data;
    }
    if (c->max_rep) {
      c->sh_rep.len = (size_t)w->n_lv * 2;
      DK_RETURN_NOT_OK(dk__buf_reserve(&c->sh_rep, (size_t)(cap - w->n_lv) * 2, w->err));
      w->rep = (uint16_t *)(void *)c->sh_rep.data;
    }
    w->cap_lv = cap;
  }
  if (w->n_idx + need_idx > w->cap_idx) {
    int64_t cap = DK_MAX(w->cap_idx * 2, w->n_idx + need_idx + 1024);
    c->sh_idx.len = (size_t)w->n_idx * 8;
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->sh_idx, (size_t)(cap - w->n_idx) * 8, w->err));
    w->idx = (int64_t *)(void *)c->sh_idx.data;
    w->cap_idx = cap;
  }
  return DK_OK;
}

static inline dk_status emit(walk *w, int16_t d, int16_t r, int64_t slot) {
  if (DK_UNLIKELY(w->n_lv >= w->cap_lv || w->n_idx >= w->cap_idx)) DK_RETURN_NOT_OK(grow(w, 1, 1));
  if (w->c->max_def) w->def[w->n_lv] = (uint16_t)d;
  if (w->c->max_rep) w->rep[w->n_lv] = (uint16_t)r;
  w->n_lv++;
  if (slot >= 0) w->idx[w->n_idx++] = slot;
  return DK_OK;
}

/* Rows where path[k..] is null because path[k] is: counted once per field, by its first leaf,
** for fields outside lists and maps. */
static void count_null(walk *w, int k) {
  pqw_col *c = w->c;
  for (int j = k; j < c->path_len; j++) {
    const pqw_field *f = c->path[j];
    if (f->first_leaf == c->leaf->leaf && !f->under_repeated) w->fields[f->index]->null_rows++;
  }
}

static dk_status not_nullable(walk *w, const pqw_field *f) {
  return dk__error_set(w->err, DK_INVALID,
                       "Parquet writer: column '%s' is not nullable but has a null (row %lld)",
                       f->name, (long long)w->row);
}

static dk_status walk_node(walk *w, int k, const struct ArrowArray *a, int64_t slot, int16_t def,
                           int16_t rep) {
  const pqw_field *f = w->c->path[k];
  const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
  if (valid && !dk__bit_get(valid, slot)) {
    if (!f->nullable) return not_nullable(w, f);
    count_null(w, k);
    return emit(w, def, rep, -1);
  }
  int16_t d = (int16_t)(def + (f->nullable ? 1 : 0));
  switch (f->kind) {
    case PQW_PRIM: return emit(w, d, rep, slot);
    case PQW_STRUCT: {
      const pqw_field *ch = w->c->path[k + 1];
      const struct ArrowArray *ca = a->children[ch->child_index];
      return walk_node(w, k + 1, ca, ca->offset + slot, d, rep);
    }
    default: { /* LIST / MAP */
      int64_t o0, o1;
      if (f->format[1] == 'L') {
        const int64_t *o = a->buffers[1];
        o0 = o[slot], o1 = o[slot + 1];
      } else {
        const int32_t *o = a->buffers[1];
        o0 = o[slot], o1 = o[slot + 1];
      }
      if (o0 >= o1) return emit(w, d, rep, -1); /* empty: the list's own level */
      const struct ArrowArray *ca = a->children[0];
      int16_t erep = w->c->path[k + 1]->rep;
      for (int64_t j = o0; j < o1; j++)
        DK_RETURN_NOT_OK(walk_node(w, k + 1, ca, ca->offset + j, (int16_t)(d + 1),
                                   j == o0 ? rep : erep));
      return DK_OK;
    }
  }
}

/* Unset bits of bits[first, first + n) (reads only the bytes holding them). */
static int64_t count_unset(const uint8_t *bits, int64_t first, int64_t n) {
  int64_t set = 0, i = first, end = first + n;
  for (; i < end && (i & 7); i++) set += dk__bit_get(bits, i);
  for (; i + 64 <= end; i += 64) {
    uint64_t word;
    memcpy(&word, bits + (i >> 3), 8);
    set += __builtin_popcountll(word);
  }
  for (; i < end; i++) set += dk__bit_get(bits, i);
  return n - set;
}

dk_status dk_pqw__shred(pqw_col *c, const struct ArrowArray *col_arr, int64_t row0, int64_t n,
                        pqw_field *const *fields, dk_error *err) {
  const pqw_field *top = c->path[0];
  pqw_input in;
  memset(&in, 0, sizeof in);
  in.arr = col_arr;
  if (top->kind == PQW_PRIM) {
    int64_t first = col_arr->offset + row0;
    const uint8_t *valid = col_arr->null_count != 0 ? col_arr->buffers[0] : NULL;
    int64_t nulls = valid ? count_unset(valid, first, n) : 0;
    if (nulls && !top->nullable) {
      walk w0 = {c, fields, NULL, NULL, NULL, 0, 0, 0, 0, row0, err};
      for (int64_t i = 0; i < n; i++)
        if (!dk__bit_get(valid, first + i)) {
          w0.row = row0 + i;
          break;
        }
      return not_nullable(&w0, top);
    }
    in.n_levels = n;
    in.n_values = n - nulls;
    in.first = first;
    if (top->nullable) fields[top->index]->null_rows += nulls;
    if (!nulls) return dk_pqw__col_write(c, &in, err); /* no def levels given: all are max */
    dk__buf_clear(&c->sh_def);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->sh_def, 2 * (size_t)n, err));
    uint16_t *def = (uint16_t *)(void *)c->sh_def.data;
    dk__buf_clear(&c->sh_idx);
    DK_RETURN_NOT_OK(dk__buf_reserve(&c->sh_idx, 8 * (size_t)(n - nulls) + 8, err));
    int64_t *idx = (int64_t *)(void *)c->sh_idx.data, k = 0;
    for (int64_t i = 0; i < n; i++) {
      int v = dk__bit_get(valid, first + i);
      def[i] = (uint16_t)v;
      idx[k] = first + i;
      k += v;
    }
    in.idx = idx;
    in.def = def;
    return dk_pqw__col_write(c, &in, err);
  }
  /* nested */
  dk__buf_clear(&c->sh_def);
  dk__buf_clear(&c->sh_rep);
  dk__buf_clear(&c->sh_idx);
  walk w = {c, fields, NULL, NULL, NULL, 0, 0, 0, 0, row0, err};
  DK_RETURN_NOT_OK(grow(&w, n, n));
  /* the leaf's Arrow array (the one the value slots index) */
  const struct ArrowArray *leaf_arr = col_arr;
  for (int k = 1; k < c->path_len; k++) {
    const pqw_field *f = c->path[k];
    leaf_arr = f->parent->kind == PQW_STRUCT ? leaf_arr->children[f->child_index]
                                             : leaf_arr->children[0];
  }
  for (int64_t i = 0; i < n; i++) {
    w.row = row0 + i;
    DK_RETURN_NOT_OK(walk_node(&w, 0, col_arr, col_arr->offset + row0 + i, 0, 0));
  }
  in.arr = leaf_arr;
  in.def = c->max_def ? w.def : NULL;
  in.rep = c->max_rep ? w.rep : NULL;
  in.n_levels = w.n_lv;
  in.idx = w.idx;
  in.n_values = w.n_idx;
  return dk_pqw__col_write(c, &in, err);
}
