/*
** write/footer.c — Thrift serialization of the writer's PageHeaders and FileMetaData
** (apache/parquet-format parquet.thrift: PageHeader, DataPageHeader(V2), DictionaryPageHeader,
** FileMetaData, SchemaElement with LogicalType and the ConvertedType older readers need,
** RowGroup, ColumnChunk, ColumnMetaData, Statistics, PageEncodingStats, ColumnOrder).
** Fields are written in increasing id order, as the compact protocol's deltas expect.
*/
#include "codec/parquet/write/pqw.h"

dk_status dk_pqw__page_header(dk_buf *out, const pqw_page_header *h, dk_error *err) {
  dk_tpw w;
  dk_pqw__tp_init(&w, out, err);
  dk_pqw__tp_struct_begin(&w, 0);
  dk_pqw__tp_i32(&w, 1, h->type);
  dk_pqw__tp_i32(&w, 2, h->uncompressed);
  dk_pqw__tp_i32(&w, 3, h->compressed);
  if (h->type == PQ_PAGE_DATA) {
    dk_pqw__tp_struct_begin(&w, 5);
    dk_pqw__tp_i32(&w, 1, h->num_values);
    dk_pqw__tp_i32(&w, 2, h->encoding);
    dk_pqw__tp_i32(&w, 3, PQ_ENC_RLE);
    dk_pqw__tp_i32(&w, 4, PQ_ENC_RLE);
    dk_pqw__tp_struct_end(&w);
  } else if (h->type == PQ_PAGE_DICT) {
    dk_pqw__tp_struct_begin(&w, 7);
    dk_pqw__tp_i32(&w, 1, h->num_values);
    dk_pqw__tp_i32(&w, 2, h->encoding);
    dk_pqw__tp_struct_end(&w);
  } else {
    dk_pqw__tp_struct_begin(&w, 8);
    dk_pqw__tp_i32(&w, 1, h->num_values);
    dk_pqw__tp_i32(&w, 2, h->num_nulls);
    dk_pqw__tp_i32(&w, 3, h->num_rows);
    dk_pqw__tp_i32(&w, 4, h->encoding);
    dk_pqw__tp_i32(&w, 5, h->def_bytes);
    dk_pqw__tp_i32(&w, 6, h->rep_bytes);
    dk_pqw__tp_bool(&w, 7, h->is_compressed);
    dk_pqw__tp_struct_end(&w);
  }
  dk_pqw__tp_struct_end(&w);
  return w.st;
}

const char *dk_pqw__name(const pqw_field *f) {
  const pqw_field *p = f->parent;
  if (p && p->kind == PQW_LIST) return "element";
  if (p && p->kind == PQW_MAP) return "key_value";
  if (p && p->parent && p->parent->kind == PQW_MAP) return f->child_index == 0 ? "key" : "value";
  return f->name;
}

static int count_elements(const pqw_field *f) {
  int n = 1 + (f->kind == PQW_LIST);
  for (int i = 0; i < f->n_children; i++) n += count_elements(f->children[i]);
  return n;
}

static void element(dk_tpw *w, const pqw_field *f) {
  dk_pqw__tp_struct_begin(w, 0);
  if (f->kind == PQW_PRIM) {
    dk_pqw__tp_i32(w, 1, f->ptype);
    if (f->ptype == PQ_FLBA) dk_pqw__tp_i32(w, 2, f->type_length);
  }
  int repeated = f->parent && f->parent->kind == PQW_MAP;
  dk_pqw__tp_i32(w, 3, repeated ? PQ_REPEATED : f->nullable ? PQ_OPTIONAL : PQ_REQUIRED);
  const char *name = dk_pqw__name(f);
  dk_pqw__tp_binary(w, 4, name, strlen(name));
  if (f->kind != PQW_PRIM) dk_pqw__tp_i32(w, 5, f->kind == PQW_LIST ? 1 : f->n_children);
  /* converted type (6), scale (7), precision (8) */
  int ct = -1;
  switch (f->kind) {
    case PQW_LIST: ct = PQ_CT_LIST; break;
    case PQW_MAP: ct = PQ_CT_MAP; break;
    case PQW_PRIM:
      switch (f->logical) {
        case PQ_LT_STRING: ct = PQ_CT_UTF8; break;
        case PQ_LT_DECIMAL: ct = PQ_CT_DECIMAL; break;
        case PQ_LT_DATE: ct = PQ_CT_DATE; break;
        case PQ_LT_TIMESTAMP: ct = f->ts_utc ? PQ_CT_TIMESTAMP_MICROS : -1; break;
        case PQ_LT_INTEGER: ct = f->int_bits == 8 ? PQ_CT_INT_8 : PQ_CT_INT_16; break;
        default: break;
      }
      break;
    default: break;
  }
  if (ct >= 0) dk_pqw__tp_i32(w, 6, ct);
  if (f->kind == PQW_PRIM && f->logical == PQ_LT_DECIMAL) {
    dk_pqw__tp_i32(w, 7, f->scale);
    dk_pqw__tp_i32(w, 8, f->precision);
  }
  if (f->has_field_id) dk_pqw__tp_i32(w, 9, f->field_id);
  /* logicalType (10) */
  int lt = f->kind == PQW_LIST ? PQ_LT_LIST : f->kind == PQW_MAP ? PQ_LT_MAP
           : f->kind == PQW_PRIM ? f->logical : PQ_LT_NONE;
  if (lt != PQ_LT_NONE) {
    dk_pqw__tp_struct_begin(w, 10);
    dk_pqw__tp_struct_begin(w, (int16_t)lt);
    if (lt == PQ_LT_DECIMAL) {
      dk_pqw__tp_i32(w, 1, f->scale);
      dk_pqw__tp_i32(w, 2, f->precision);
    } else if (lt == PQ_LT_TIMESTAMP) {
      dk_pqw__tp_bool(w, 1, f->ts_utc);
      dk_pqw__tp_struct_begin(w, 2);          /* TimeUnit */
      dk_pqw__tp_struct_begin(w, PQ_UNIT_MICROS);
      dk_pqw__tp_struct_end(w);
      dk_pqw__tp_struct_end(w);
    } else if (lt == PQ_LT_INTEGER) {
      dk_pqw__tp_byte(w, 1, (int8_t)f->int_bits);
      dk_pqw__tp_bool(w, 2, 1);
    }
    dk_pqw__tp_struct_end(w);
    dk_pqw__tp_struct_end(w);
  }
  dk_pqw__tp_struct_end(w);
}

static void elements(dk_tpw *w, const pqw_field *f) {
  element(w, f);
  if (f->kind == PQW_LIST) { /* the repeated middle group */
    dk_pqw__tp_struct_begin(w, 0);
    dk_pqw__tp_i32(w, 3, PQ_REPEATED);
    dk_pqw__tp_binary(w, 4, "list", 4);
    dk_pqw__tp_i32(w, 5, 1);
    dk_pqw__tp_struct_end(w);
  }
  for (int i = 0; i < f->n_children; i++) elements(w, f->children[i]);
}

static void path_names(dk_tpw *w, const pqw_field *leaf) {
  const pqw_field *chain[256];
  int n = 0, extra = 0;
  for (const pqw_field *f = leaf; f && f->depth >= 0 && n < 256; f = f->parent) {
    chain[n++] = f;
    extra += f->kind == PQW_LIST;
  }
  dk_pqw__tp_list(w, 3, DK_TP_BINARY, (size_t)(n + extra));
  for (int i = n - 1; i >= 0; i--) {
    const char *nm = dk_pqw__name(chain[i]);
    dk_pqw__tp_elem_binary(w, nm, strlen(nm));
    if (chain[i]->kind == PQW_LIST) dk_pqw__tp_elem_binary(w, "list", 4);
  }
}

static void column_chunk(dk_tpw *w, const pqw_footer_in *in, const pqw_field *leaf,
                         const pqw_chunk_meta *m) {
  dk_pqw__tp_struct_begin(w, 0);
  dk_pqw__tp_i64(w, 2, 0);
  dk_pqw__tp_struct_begin(w, 3);
  dk_pqw__tp_i32(w, 1, leaf->ptype);
  int encs[3], ne = 0;
  if (m->n_pages_plain || m->n_dict_pages_plain) encs[ne++] = PQ_ENC_PLAIN;
  if (leaf->def || leaf->rep) encs[ne++] = PQ_ENC_RLE;
  if (m->n_pages_dict) encs[ne++] = PQ_ENC_RLE_DICT;
  dk_pqw__tp_list(w, 2, DK_TP_I32, (size_t)ne);
  for (int i = 0; i < ne; i++) dk_pqw__tp_elem_i32(w, encs[i]);
  path_names(w, leaf);
  dk_pqw__tp_i32(w, 4, in->o->codec);
  dk_pqw__tp_i64(w, 5, m->num_values);
  dk_pqw__tp_i64(w, 6, m->total_uncompressed);
  dk_pqw__tp_i64(w, 7, m->total_compressed);
  dk_pqw__tp_i64(w, 9, m->data_offset);
  if (m->dict_offset >= 0) dk_pqw__tp_i64(w, 11, m->dict_offset);
  if (m->has_stats) {
    dk_pqw__tp_struct_begin(w, 12);
    dk_pqw__tp_i64(w, 3, m->null_count);
    if (m->has_minmax) {
      dk_pqw__tp_binary(w, 5, m->max.data, m->max.len);
      dk_pqw__tp_binary(w, 6, m->min.data, m->min.len);
    }
    if (m->float_nan_count) dk_pqw__tp_i64(w, 9, m->nan_count);
    dk_pqw__tp_struct_end(w);
  }
  int nes = (m->n_dict_pages_plain > 0) + (m->n_pages_dict > 0) + (m->n_pages_plain > 0);
  dk_pqw__tp_list(w, 13, DK_TP_STRUCT, (size_t)nes);
  if (m->n_dict_pages_plain) {
    dk_pqw__tp_struct_begin(w, 0);
    dk_pqw__tp_i32(w, 1, PQ_PAGE_DICT);
    dk_pqw__tp_i32(w, 2, PQ_ENC_PLAIN);
    dk_pqw__tp_i32(w, 3, (int32_t)m->n_dict_pages_plain);
    dk_pqw__tp_struct_end(w);
  }
  int dp = in->o->page_v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA;
  for (int pass = 0; pass < 2; pass++) {
    int64_t cnt = pass == 0 ? m->n_pages_dict : m->n_pages_plain;
    if (!cnt) continue;
    dk_pqw__tp_struct_begin(w, 0);
    dk_pqw__tp_i32(w, 1, dp);
    dk_pqw__tp_i32(w, 2, pass == 0 ? PQ_ENC_RLE_DICT : PQ_ENC_PLAIN);
    dk_pqw__tp_i32(w, 3, (int32_t)cnt);
    dk_pqw__tp_struct_end(w);
  }
  dk_pqw__tp_struct_end(w); /* ColumnMetaData */
  if (m->offset_index.len) {
    dk_pqw__tp_i64(w, 4, m->oi_offset);
    dk_pqw__tp_i32(w, 5, (int32_t)m->offset_index.len);
  }
  if (m->column_index.len) {
    dk_pqw__tp_i64(w, 6, m->ci_offset);
    dk_pqw__tp_i32(w, 7, (int32_t)m->column_index.len);
  }
  dk_pqw__tp_struct_end(w);
}

dk_status dk_pqw__footer(dk_buf *out, const pqw_footer_in *in, dk_error *err) {
  const pqw_schema *s = in->schema;
  dk_tpw w;
  dk_pqw__tp_init(&w, out, err);
  dk_pqw__tp_struct_begin(&w, 0);
  dk_pqw__tp_i32(&w, 1, 2);
  int n_el = 1;
  for (int i = 0; i < s->root->n_children; i++) n_el += count_elements(s->root->children[i]);
  dk_pqw__tp_list(&w, 2, DK_TP_STRUCT, (size_t)n_el);
  dk_pqw__tp_struct_begin(&w, 0);
  dk_pqw__tp_binary(&w, 4, "schema", 6);
  dk_pqw__tp_i32(&w, 5, s->root->n_children);
  dk_pqw__tp_struct_end(&w);
  for (int i = 0; i < s->root->n_children; i++) elements(&w, s->root->children[i]);
  dk_pqw__tp_i64(&w, 3, in->num_rows);
  dk_pqw__tp_list(&w, 4, DK_TP_STRUCT, (size_t)in->n_rgs);
  for (int r = 0; r < in->n_rgs; r++) {
    const pqw_rg_meta *rg = &in->rgs[r];
    dk_pqw__tp_struct_begin(&w, 0);
    dk_pqw__tp_list(&w, 1, DK_TP_STRUCT, (size_t)s->n_leaves);
    for (int c = 0; c < s->n_leaves; c++) column_chunk(&w, in, s->leaves[c], &rg->chunks[c]);
    dk_pqw__tp_i64(&w, 2, rg->total_byte_size);
    dk_pqw__tp_i64(&w, 3, rg->num_rows);
    dk_pqw__tp_i64(&w, 5, rg->file_offset);
    dk_pqw__tp_i64(&w, 6, rg->total_compressed);
    if (r <= INT16_MAX) dk_pqw__tp_i16(&w, 7, (int16_t)r);
    dk_pqw__tp_struct_end(&w);
  }
  if (in->n_kv) {
    dk_pqw__tp_list(&w, 5, DK_TP_STRUCT, in->n_kv);
    for (size_t i = 0; i < in->n_kv; i++) {
      dk_pqw__tp_struct_begin(&w, 0);
      dk_pqw__tp_binary(&w, 1, in->kv_keys[i], strlen(in->kv_keys[i]));
      if (in->kv_values[i]) dk_pqw__tp_binary(&w, 2, in->kv_values[i], strlen(in->kv_values[i]));
      dk_pqw__tp_struct_end(&w);
    }
  }
  dk_pqw__tp_binary(&w, 6, in->created_by, strlen(in->created_by));
  dk_pqw__tp_list(&w, 7, DK_TP_STRUCT, (size_t)s->n_leaves);
  for (int c = 0; c < s->n_leaves; c++) {
    dk_pqw__tp_struct_begin(&w, 0);
    dk_pqw__tp_struct_begin(&w, 1); /* TYPE_ORDER */
    dk_pqw__tp_struct_end(&w);
    dk_pqw__tp_struct_end(&w);
  }
  dk_pqw__tp_struct_end(&w);
  return w.st;
}
