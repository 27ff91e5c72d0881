/*
** metadata.c — decodes Parquet's Thrift metadata: FileMetaData, SchemaElement, RowGroup,
** ColumnChunk, ColumnMetaData, Statistics, PageHeader, OffsetIndex, ColumnIndex
** (apache/parquet-format src/main/thrift/parquet.thrift, field ids as declared there), and
** builds the schema tree with Dremel definition/repetition levels.
*/
#include "codec/parquet/metadata.h"

#define FIELD_LOOP(t, s, ft, id)                        \
  dk_tp_struct s;                                       \
  DK_RETURN_NOT_OK(dk_pq__tp_struct_begin(t, &s));          \
  for (;;) {                                            \
    int ft;                                             \
    int16_t id;                                         \
    DK_RETURN_NOT_OK(dk_pq__tp_field(t, &s, &ft, &id));     \
    if (ft == DK_TP_STOP) break;

#define FIELD_LOOP_END(t) \
  }                       \
  dk_pq__tp_struct_end(t);

static void *tp_alloc(dk_tp *t, dk_arena *ar, size_t count, size_t size) {
  if (count == 0) count = 1;
  void *p = dk__arena_alloc(ar, count * size, t->err);
  if (p) memset(p, 0, count * size);
  return p;
}

static dk_status tp_string(dk_tp *t, dk_arena *ar, int ft, const char **out) {
  const uint8_t *p;
  uint32_t n = 0;
  DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &p, &n));
  *out = dk__arena_strndup(ar, (const char *)p, n, t->err);
  return *out ? DK_OK : DK_NOMEM;
}

/* ---- LogicalType ---------------------------------------------------------------------- */

static dk_status parse_time_unit(dk_tp *t, int ft, int *unit) {
  if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "TimeUnit is not a struct");
  *unit = 0;
  FIELD_LOOP(t, s, ft2, id)
    if (id >= 1 && id <= 3 && ft2 == DK_TP_STRUCT) *unit = id;
    DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
  FIELD_LOOP_END(t)
  return DK_OK;
}

static dk_status parse_logical(dk_tp *t, pq_logical *lt) {
  memset(lt, 0, sizeof *lt);
  FIELD_LOOP(t, s, ft, id)
    if (ft != DK_TP_STRUCT) {
      DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
      continue;
    }
    switch (id) {
      case PQ_LT_DECIMAL: {
        lt->kind = PQ_LT_DECIMAL;
        FIELD_LOOP(t, s2, ft2, id2)
          if (id2 == 1) DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &lt->scale));
          else if (id2 == 2) DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &lt->precision));
          else DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
        FIELD_LOOP_END(t)
        break;
      }
      case PQ_LT_TIME:
      case PQ_LT_TIMESTAMP: {
        lt->kind = id;
        FIELD_LOOP(t, s2, ft2, id2)
          if (id2 == 1) DK_RETURN_NOT_OK(dk_pq__tp_bool(t, ft2, &lt->adjusted));
          else if (id2 == 2) DK_RETURN_NOT_OK(parse_time_unit(t, ft2, &lt->unit));
          else DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
        FIELD_LOOP_END(t)
        break;
      }
      case PQ_LT_INTEGER: {
        lt->kind = PQ_LT_INTEGER;
        FIELD_LOOP(t, s2, ft2, id2)
          if (id2 == 1) {
            int64_t v = 0;
            DK_RETURN_NOT_OK(dk_pq__tp_int(t, ft2, &v));
            lt->bit_width = (int)v;
          } else if (id2 == 2) {
            DK_RETURN_NOT_OK(dk_pq__tp_bool(t, ft2, &lt->is_signed));
          } else {
            DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
          }
        FIELD_LOOP_END(t)
        break;
      }
      case PQ_LT_STRING: case PQ_LT_MAP: case PQ_LT_LIST: case PQ_LT_ENUM: case PQ_LT_DATE:
      case PQ_LT_UNKNOWN: case PQ_LT_JSON: case PQ_LT_BSON: case PQ_LT_UUID: case PQ_LT_FLOAT16:
        lt->kind = id;
        DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
        break;
      default:
        lt->kind = PQ_LT_OTHER;
        DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  return DK_OK;
}

/* ---- SchemaElement -------------------------------------------------------------------- */

static dk_status parse_schema_el(dk_tp *t, dk_arena *ar, pq_schema_el *e) {
  memset(e, 0, sizeof *e);
  e->type = -1;
  e->repetition = -1;
  e->converted = -1;
  int has_name = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: {
        int32_t v = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
        if (v < 0 || v > PQ_FLBA) return dk_pq__tp_fail(t, "unknown physical type");
        e->type = v;
        break;
      }
      case 2: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &e->type_length)); break;
      case 3: {
        int32_t v = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
        if (v < 0 || v > 2) return dk_pq__tp_fail(t, "unknown repetition type");
        e->repetition = v;
        break;
      }
      case 4: DK_RETURN_NOT_OK(tp_string(t, ar, ft, &e->name)); has_name = 1; break;
      case 5: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &e->num_children)); break;
      case 6: {
        int32_t v = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
        e->converted = v;
        break;
      }
      case 7: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &e->scale)); break;
      case 8: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &e->precision)); break;
      case 9: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &e->field_id)); e->has_field_id = 1; break;
      case 10:
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "LogicalType is not a struct");
        DK_RETURN_NOT_OK(parse_logical(t, &e->logical));
        break;
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (!has_name) return dk_pq__tp_fail(t, "schema element without a name");
  if (e->num_children < 0) return dk_pq__tp_fail(t, "negative num_children");
  return DK_OK;
}

/* ---- Statistics ----------------------------------------------------------------------- */

static dk_status parse_stats(dk_tp *t, pq_stats *st) {
  memset(st, 0, sizeof *st);
  const uint8_t *lmin = NULL, *lmax = NULL;
  uint32_t lmin_len = 0, lmax_len = 0;
  int has_lmin = 0, has_lmax = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &lmax, &lmax_len)); has_lmax = 1; break;
      case 2: DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &lmin, &lmin_len)); has_lmin = 1; break;
      case 3: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &st->null_count)); st->has_null_count = 1; break;
      case 4: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &st->distinct_count)); st->has_distinct = 1; break;
      case 5: DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &st->max, &st->max_len)); st->has_max = 1; break;
      case 6: DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &st->min, &st->min_len)); st->has_min = 1; break;
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (!st->has_min && !st->has_max && has_lmin && has_lmax) {
    st->min = lmin, st->min_len = lmin_len, st->has_min = 1;
    st->max = lmax, st->max_len = lmax_len, st->has_max = 1;
    st->legacy = 1;
  }
  return DK_OK;
}

/* ---- ColumnMetaData / ColumnChunk / RowGroup ------------------------------------------ */

static dk_status parse_column_meta(dk_tp *t, dk_arena *ar, pq_column_meta *c) {
  int seen = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: {
        int32_t v = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
        if (v < 0 || v > PQ_FLBA) return dk_pq__tp_fail(t, "unknown physical type");
        c->type = v;
        seen |= 1;
        break;
      }
      case 2: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        c->encodings = tp_alloc(t, ar, n, sizeof(int32_t));
        if (!c->encodings) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++) DK_RETURN_NOT_OK(dk_pq__tp_i32(t, et, &c->encodings[i]));
        c->n_encodings = (int)n;
        break;
      }
      case 3: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        c->path = tp_alloc(t, ar, n, sizeof(char *));
        if (!c->path) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++) DK_RETURN_NOT_OK(tp_string(t, ar, et, &c->path[i]));
        c->n_path = (int)n;
        break;
      }
      case 4: {
        int32_t v = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
        c->codec = v;
        break;
      }
      case 5: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->num_values)); seen |= 2; break;
      case 6: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->total_uncompressed)); break;
      case 7: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->total_compressed)); seen |= 4; break;
      case 9: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->data_page_offset)); seen |= 8; break;
      case 11: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->dictionary_page_offset)); break;
      case 12:
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "Statistics is not a struct");
        DK_RETURN_NOT_OK(parse_stats(t, &c->stats));
        c->has_stats = 1;
        break;
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (seen != 15) return dk_pq__tp_fail(t, "ColumnMetaData misses a required field");
  if (c->num_values < 0 || c->total_compressed < 0 || c->data_page_offset < 0)
    return dk_pq__tp_fail(t, "negative size or offset in ColumnMetaData");
  return DK_OK;
}

static dk_status parse_column_chunk(dk_tp *t, dk_arena *ar, pq_column_meta *c) {
  memset(c, 0, sizeof *c);
  c->dictionary_page_offset = -1;
  c->offset_index_offset = c->column_index_offset = -1;
  int has_meta = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: {
        const uint8_t *fp;
        uint32_t fl = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_binary(t, ft, &fp, &fl));
        if (fl > 0)
          return dk__error_set(t->err, DK_UNSUPPORTED,
                               "column chunks in other files (file_path) are not supported");
        break;
      }
      case 3:
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "ColumnMetaData is not a struct");
        DK_RETURN_NOT_OK(parse_column_meta(t, ar, c));
        has_meta = 1;
        break;
      case 4: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->offset_index_offset)); break;
      case 5: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &c->offset_index_length)); break;
      case 6: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &c->column_index_offset)); break;
      case 7: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &c->column_index_length)); break;
      case 8:
      case 9:
        return dk__error_set(t->err, DK_UNSUPPORTED, "encrypted Parquet columns are not supported");
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (!has_meta) return dk_pq__tp_fail(t, "column chunk without ColumnMetaData");
  return DK_OK;
}

static dk_status parse_row_group(dk_tp *t, dk_arena *ar, pq_row_group *rg) {
  memset(rg, 0, sizeof *rg);
  int seen = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        if (et != DK_TP_STRUCT) return dk_pq__tp_fail(t, "ColumnChunk list of non-structs");
        rg->columns = tp_alloc(t, ar, n, sizeof *rg->columns);
        if (!rg->columns) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++)
          DK_RETURN_NOT_OK(parse_column_chunk(t, ar, &rg->columns[i]));
        rg->n_columns = (int)n;
        seen |= 1;
        break;
      }
      case 2: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &rg->total_byte_size)); break;
      case 3: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &rg->num_rows)); seen |= 2; break;
      case 5: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &rg->file_offset)); break;
      case 6: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &rg->total_compressed_size)); break;
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (seen != 3) return dk_pq__tp_fail(t, "RowGroup misses columns or num_rows");
  if (rg->num_rows < 0) return dk_pq__tp_fail(t, "negative num_rows in RowGroup");
  return DK_OK;
}

/* ---- FileMetaData --------------------------------------------------------------------- */

dk_status dk_pq__parse_file_meta(pq_file_meta *out, dk_arena *ar, const uint8_t *buf, size_t len,
                                 int64_t base, dk_error *err) {
  dk_tp tp, *t = &tp;
  dk_pq__tp_init(t, buf, len, base, "footer", err);
  memset(out, 0, sizeof *out);
  int seen = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &out->version)); break;
      case 2: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        if (et != DK_TP_STRUCT) return dk_pq__tp_fail(t, "schema list of non-structs");
        out->schema = tp_alloc(t, ar, n, sizeof *out->schema);
        if (!out->schema) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++) DK_RETURN_NOT_OK(parse_schema_el(t, ar, &out->schema[i]));
        out->n_schema = (int)n;
        seen |= 1;
        break;
      }
      case 3: DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft, &out->num_rows)); seen |= 2; break;
      case 4: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        if (et != DK_TP_STRUCT) return dk_pq__tp_fail(t, "row group list of non-structs");
        out->row_groups = tp_alloc(t, ar, n, sizeof *out->row_groups);
        if (!out->row_groups) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++)
          DK_RETURN_NOT_OK(parse_row_group(t, ar, &out->row_groups[i]));
        out->n_row_groups = (int)n;
        seen |= 4;
        break;
      }
      case 5: {
        int et;
        uint32_t n = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n));
        if (et != DK_TP_STRUCT) return dk_pq__tp_fail(t, "key/value list of non-structs");
        out->kv_keys = tp_alloc(t, ar, n, sizeof(char *));
        out->kv_values = tp_alloc(t, ar, n, sizeof(char *));
        if (!out->kv_keys || !out->kv_values) return DK_NOMEM;
        for (uint32_t i = 0; i < n; i++) {
          out->kv_values[i] = "";
          out->kv_keys[i] = "";
          FIELD_LOOP(t, s2, ft2, id2)
            if (id2 == 1) DK_RETURN_NOT_OK(tp_string(t, ar, ft2, &out->kv_keys[i]));
            else if (id2 == 2) DK_RETURN_NOT_OK(tp_string(t, ar, ft2, &out->kv_values[i]));
            else DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
          FIELD_LOOP_END(t)
        }
        out->n_kv = (int)n;
        break;
      }
      case 6: DK_RETURN_NOT_OK(tp_string(t, ar, ft, &out->created_by)); break;
      case 8:
        return dk__error_set(err, DK_UNSUPPORTED, "encrypted Parquet files are not supported");
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (seen != 7) return dk_pq__tp_fail(t, "FileMetaData misses schema, num_rows or row_groups");
  if (out->n_schema < 1) return dk_pq__tp_fail(t, "empty schema");
  return DK_OK;
}

/* ---- PageHeader ----------------------------------------------------------------------- */

static dk_status parse_enc(dk_tp *t, int ft, int *out) {
  int32_t v = 0;
  DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &v));
  *out = v;
  return DK_OK;
}

dk_status dk_pq__parse_page_header(pq_page_header *h, const uint8_t *buf, size_t len,
                                   int64_t base, size_t *consumed, dk_error *err) {
  dk_tp tp, *t = &tp;
  dk_pq__tp_init(t, buf, len, base, "page header", err);
  memset(h, 0, sizeof *h);
  h->is_compressed = 1;
  int seen = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &h->type)); seen |= 1; break;
      case 2: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &h->uncompressed_size)); seen |= 2; break;
      case 3: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &h->compressed_size)); seen |= 4; break;
      case 4: {
        int32_t crc = 0;
        DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &crc));
        h->crc = (uint32_t)crc;
        h->has_crc = 1;
        break;
      }
      case 5: {
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "DataPageHeader is not a struct");
        h->has_data = 1;
        FIELD_LOOP(t, s2, ft2, id2)
          switch (id2) {
            case 1: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->num_values)); break;
            case 2: DK_RETURN_NOT_OK(parse_enc(t, ft2, &h->encoding)); break;
            case 3: DK_RETURN_NOT_OK(parse_enc(t, ft2, &h->def_encoding)); break;
            case 4: DK_RETURN_NOT_OK(parse_enc(t, ft2, &h->rep_encoding)); break;
            default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
          }
        FIELD_LOOP_END(t)
        break;
      }
      case 7: {
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "DictionaryPageHeader is not a struct");
        h->has_dict = 1;
        FIELD_LOOP(t, s2, ft2, id2)
          switch (id2) {
            case 1: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->num_values)); break;
            case 2: DK_RETURN_NOT_OK(parse_enc(t, ft2, &h->encoding)); break;
            default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
          }
        FIELD_LOOP_END(t)
        break;
      }
      case 8: {
        if (ft != DK_TP_STRUCT) return dk_pq__tp_fail(t, "DataPageHeaderV2 is not a struct");
        h->has_v2 = 1;
        FIELD_LOOP(t, s2, ft2, id2)
          switch (id2) {
            case 1: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->num_values)); break;
            case 2: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->num_nulls)); break;
            case 3: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->num_rows)); break;
            case 4: DK_RETURN_NOT_OK(parse_enc(t, ft2, &h->encoding)); break;
            case 5: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->def_bytes)); break;
            case 6: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &h->rep_bytes)); break;
            case 7: DK_RETURN_NOT_OK(dk_pq__tp_bool(t, ft2, &h->is_compressed)); break;
            default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
          }
        FIELD_LOOP_END(t)
        break;
      }
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (seen != 7) return dk_pq__tp_fail(t, "PageHeader misses type or sizes");
  if (h->uncompressed_size < 0 || h->compressed_size < 0)
    return dk_pq__tp_fail(t, "negative page size");
  if (h->num_values < 0 || h->num_nulls < 0 || h->num_rows < 0 || h->def_bytes < 0 ||
      h->rep_bytes < 0)
    return dk_pq__tp_fail(t, "negative count in page header");
  *consumed = (size_t)(t->p - t->start);
  return DK_OK;
}

/* ---- page index ----------------------------------------------------------------------- */

dk_status dk_pq__parse_offset_index(pq_page_location **out, int *n, dk_arena *ar,
                                    const uint8_t *buf, size_t len, int64_t base, dk_error *err) {
  dk_tp tp, *t = &tp;
  dk_pq__tp_init(t, buf, len, base, "offset index", err);
  *out = NULL;
  *n = 0;
  FIELD_LOOP(t, s, ft, id)
    if (id == 1) {
      int et;
      uint32_t cnt = 0;
      DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &cnt));
      if (et != DK_TP_STRUCT) return dk_pq__tp_fail(t, "page locations are not structs");
      pq_page_location *loc = tp_alloc(t, ar, cnt, sizeof *loc);
      if (!loc) return DK_NOMEM;
      for (uint32_t i = 0; i < cnt; i++) {
        FIELD_LOOP(t, s2, ft2, id2)
          if (id2 == 1) DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft2, &loc[i].offset));
          else if (id2 == 2) DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft2, &loc[i].compressed_size));
          else if (id2 == 3) DK_RETURN_NOT_OK(dk_pq__tp_i64(t, ft2, &loc[i].first_row));
          else DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft2));
        FIELD_LOOP_END(t)
      }
      *out = loc;
      *n = (int)cnt;
    } else {
      DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  return DK_OK;
}

static dk_status parse_binary_list(dk_tp *t, dk_arena *ar, int ft, const uint8_t ***vals,
                                   uint32_t **lens, uint32_t *n) {
  int et;
  DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, n));
  *vals = tp_alloc(t, ar, *n, sizeof **vals);
  *lens = tp_alloc(t, ar, *n, sizeof **lens);
  if (!*vals || !*lens) return DK_NOMEM;
  for (uint32_t i = 0; i < *n; i++) DK_RETURN_NOT_OK(dk_pq__tp_binary(t, et, &(*vals)[i], &(*lens)[i]));
  return DK_OK;
}

dk_status dk_pq__parse_column_index(pq_column_index *out, dk_arena *ar, const uint8_t *buf,
                                    size_t len, int64_t base, dk_error *err) {
  dk_tp tp, *t = &tp;
  dk_pq__tp_init(t, buf, len, base, "column index", err);
  memset(out, 0, sizeof *out);
  uint32_t n_null = 0, n_min = 0, n_max = 0, n_cnt = 0;
  FIELD_LOOP(t, s, ft, id)
    switch (id) {
      case 1: {
        int et;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n_null));
        out->null_pages = tp_alloc(t, ar, n_null, 1);
        if (!out->null_pages) return DK_NOMEM;
        for (uint32_t i = 0; i < n_null; i++) {
          if (t->p >= t->end) return dk_pq__tp_fail(t, "truncated bool list");
          out->null_pages[i] = *t->p++ == 1;
        }
        break;
      }
      case 2: DK_RETURN_NOT_OK(parse_binary_list(t, ar, ft, &out->mins, &out->min_lens, &n_min)); break;
      case 3: DK_RETURN_NOT_OK(parse_binary_list(t, ar, ft, &out->maxs, &out->max_lens, &n_max)); break;
      case 4: DK_RETURN_NOT_OK(dk_pq__tp_i32(t, ft, &out->boundary_order)); break;
      case 5: {
        int et;
        DK_RETURN_NOT_OK(dk_pq__tp_list(t, ft, &et, &n_cnt));
        out->null_counts = tp_alloc(t, ar, n_cnt, sizeof(int64_t));
        if (!out->null_counts) return DK_NOMEM;
        for (uint32_t i = 0; i < n_cnt; i++) DK_RETURN_NOT_OK(dk_pq__tp_i64(t, et, &out->null_counts[i]));
        break;
      }
      default: DK_RETURN_NOT_OK(dk_pq__tp_skip(t, ft));
    }
  FIELD_LOOP_END(t)
  if (n_min != n_null || n_max != n_null || (out->null_counts && n_cnt != n_null))
    return dk_pq__tp_fail(t, "column index lists differ in length");
  out->n_pages = (int)n_null;
  return DK_OK;
}

/* ---- schema tree ---------------------------------------------------------------------- */

typedef struct schema_ctx {
  const pq_schema_el *els;
  int n, pos;
  dk_arena *ar;
  pq_node **leaves;
  int n_leaves;
  dk_error *err;
} schema_ctx;

static dk_status build_node(schema_ctx *c, pq_node *parent, int depth, pq_node **out) {
  if (c->pos >= c->n)
    return dk__error_set(c->err, DK_CORRUPT, "corrupt Parquet schema: num_children exceeds elements");
  if (depth > 64) return dk__error_set(c->err, DK_CORRUPT, "corrupt Parquet schema: nested too deeply");
  const pq_schema_el *e = &c->els[c->pos++];
  pq_node *nd = dk__arena_alloc(c->ar, sizeof *nd, c->err);
  if (!nd) return DK_NOMEM;
  memset(nd, 0, sizeof *nd);
  nd->el = e;
  nd->parent = parent;
  nd->leaf = -1;
  nd->max_def = parent ? parent->max_def : 0;
  nd->max_rep = parent ? parent->max_rep : 0;
  if (parent) {
    if (e->repetition == PQ_OPTIONAL) nd->max_def++;
    if (e->repetition == PQ_REPEATED) nd->max_def++, nd->max_rep++;
  }
  nd->first_leaf = c->n_leaves;
  if (e->num_children == 0 && parent) {
    if (e->type < 0)
      return dk__error_set(c->err, DK_CORRUPT, "corrupt Parquet schema: leaf '%s' has no type", e->name);
    if (e->type == PQ_FLBA && (e->type_length <= 0 || e->type_length > (1 << 20)))
      return dk__error_set(c->err, DK_CORRUPT,
                           "corrupt Parquet schema: bad FIXED_LEN_BYTE_ARRAY length %d for '%s'",
                           e->type_length, e->name);
    nd->leaf = c->n_leaves++;
  } else {
    if (e->num_children > c->n - c->pos)
      return dk__error_set(c->err, DK_CORRUPT, "corrupt Parquet schema: num_children exceeds elements");
    nd->children = dk__arena_alloc(c->ar, sizeof(pq_node *) * (size_t)(e->num_children + 1), c->err);
    if (!nd->children) return DK_NOMEM;
    nd->n_children = e->num_children;
    for (int i = 0; i < e->num_children; i++)
      DK_RETURN_NOT_OK(build_node(c, nd, depth + 1, &nd->children[i]));
  }
  nd->n_leaves = c->n_leaves - nd->first_leaf;
  *out = nd;
  return DK_OK;
}

static void collect_leaves(pq_node *nd, pq_node **leaves) {
  if (nd->leaf >= 0) leaves[nd->leaf] = nd;
  for (int i = 0; i < nd->n_children; i++) collect_leaves(nd->children[i], leaves);
}

dk_status dk_pq__build_schema(pq_node **root, pq_node ***leaves, int *n_leaves, dk_arena *ar,
                              const pq_schema_el *els, int n, dk_error *err) {
  schema_ctx c = {els, n, 0, ar, NULL, 0, err};
  DK_RETURN_NOT_OK(build_node(&c, NULL, 0, root));
  if (c.pos != n)
    return dk__error_set(err, DK_CORRUPT, "corrupt Parquet schema: %d elements left over", n - c.pos);
  *leaves = dk__arena_alloc(ar, sizeof(pq_node *) * (size_t)(c.n_leaves + 1), err);
  if (!*leaves) return DK_NOMEM;
  collect_leaves(*root, *leaves);
  *n_leaves = c.n_leaves;
  return DK_OK;
}

const char *dk_pq__type_name(int type) {
  static const char *names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
                                "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type <= PQ_FLBA ? names[type] : "GROUP";
}

const char *dk_pq__encoding_name(int enc) {
  switch (enc) {
    case PQ_ENC_PLAIN: return "PLAIN";
    case PQ_ENC_PLAIN_DICT: return "PLAIN_DICTIONARY";
    case PQ_ENC_RLE: return "RLE";
    case PQ_ENC_BIT_PACKED: return "BIT_PACKED";
    case PQ_ENC_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ_ENC_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case PQ_ENC_RLE_DICT: return "RLE_DICTIONARY";
    case PQ_ENC_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
    default: return "UNKNOWN";
  }
}
