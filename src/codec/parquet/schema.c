/*
** schema.c — maps a Parquet schema tree to Arrow fields (apache/parquet-format
** LogicalTypes.md: logical and converted types, LIST/MAP backward-compatibility rules), and
** records for each Arrow field the Dremel conditions used by assemble.c.
*/
#include <stdio.h>

#include "codec/parquet/reader.h"

typedef struct ctx {
  dk_parquet_file *f;
  dk_error *err;
} ctx;

static pq_anode *anode_new(ctx *c, int kind, const pq_node *pq, const char *name, int n_children) {
  pq_anode *a = dk__arena_alloc(&c->f->arena, sizeof *a, c->err);
  if (!a) return NULL;
  memset(a, 0, sizeof *a);
  a->kind = kind;
  a->name = name;
  a->pq = pq;
  a->leaf = pq ? pq->first_leaf : 0;
  if (pq && pq->el->has_field_id) a->has_field_id = 1, a->field_id = pq->el->field_id;
  a->n_children = n_children;
  if (n_children > 0) {
    a->children = dk__arena_alloc(&c->f->arena, sizeof(pq_anode *) * (size_t)n_children, c->err);
    if (!a->children) return NULL;
  }
  return a;
}

static int is_list(const pq_schema_el *e) {
  return e->logical.kind == PQ_LT_LIST || e->converted == PQ_CT_LIST;
}
static int is_map(const pq_schema_el *e) {
  return e->logical.kind == PQ_LT_MAP || e->converted == PQ_CT_MAP ||
         e->converted == PQ_CT_MAP_KEY_VALUE;
}

static dk_status unsupported(ctx *c, const pq_schema_el *e, const char *what) {
  return dk__error_set(c->err, DK_UNSUPPORTED, "Parquet column '%s': unsupported %s", e->name,
                       what);
}

static dk_status corrupt(ctx *c, const pq_schema_el *e, const char *what) {
  return dk__error_set(c->err, DK_CORRUPT, "corrupt Parquet schema at column '%s': %s", e->name,
                       what);
}

/* Decimal arrow type and conversion for a leaf. */
static dk_status leaf_decimal(ctx *c, pq_anode *a, const pq_schema_el *e, int32_t precision,
                              int32_t scale) {
  if (precision < 1 || precision > 38 || scale < 0 || scale > precision)
    return unsupported(c, e, "decimal precision/scale");
  a->type = dk__atype_decimal(precision, scale);
  switch (e->type) {
    case PQ_INT32: a->conv = PQ_CONV_DEC32; break;
    case PQ_INT64: a->conv = PQ_CONV_DEC64; break;
    case PQ_FLBA:
      if (e->type_length > 16) return unsupported(c, e, "decimal wider than 16 bytes");
      a->conv = PQ_CONV_DEC_FIXED;
      break;
    case PQ_BYTE_ARRAY: a->conv = PQ_CONV_DEC_BYTES; break;
    default: return corrupt(c, e, "DECIMAL on a non-integer, non-binary type");
  }
  return DK_OK;
}

static dk_status leaf_type(ctx *c, pq_anode *a, const pq_schema_el *e) {
  const pq_logical *lt = &e->logical;
  int ct = e->converted;
  a->conv = PQ_CONV_COPY;
  if (lt->kind == PQ_LT_UNKNOWN) {
    a->type = dk__atype_make(DK_AT_NA);
    a->conv = PQ_CONV_NULL;
    return DK_OK;
  }
  if (lt->kind == PQ_LT_DECIMAL) return leaf_decimal(c, a, e, lt->precision, lt->scale);
  if (lt->kind == PQ_LT_NONE && ct == PQ_CT_DECIMAL)
    return leaf_decimal(c, a, e, e->precision, e->scale);
  switch (e->type) {
    case PQ_BOOLEAN:
      a->type = dk__atype_make(DK_AT_BOOL);
      a->conv = PQ_CONV_BOOL;
      return DK_OK;
    case PQ_INT32: {
      int bits = 32, sign = 1;
      if (lt->kind == PQ_LT_INTEGER) bits = lt->bit_width, sign = lt->is_signed;
      else if (lt->kind == PQ_LT_NONE && ct >= PQ_CT_UINT_8 && ct <= PQ_CT_INT_64) {
        static const int cb[] = {8, 16, 32, 64, 8, 16, 32, 64};
        bits = cb[ct - PQ_CT_UINT_8];
        sign = ct >= PQ_CT_INT_8;
      }
      if (lt->kind == PQ_LT_DATE || (lt->kind == PQ_LT_NONE && ct == PQ_CT_DATE)) {
        a->type = dk__atype_make(DK_AT_DATE32);
        return DK_OK;
      }
      if ((lt->kind == PQ_LT_TIME && lt->unit == PQ_UNIT_MILLIS) ||
          (lt->kind == PQ_LT_NONE && ct == PQ_CT_TIME_MILLIS)) {
        a->type = dk__atype_make(DK_AT_TIME32);
        a->type.unit = DK_TU_MILLI;
        return DK_OK;
      }
      switch (bits) {
        case 8: a->type = dk__atype_make(sign ? DK_AT_INT8 : DK_AT_UINT8); a->conv = PQ_CONV_I8; break;
        case 16: a->type = dk__atype_make(sign ? DK_AT_INT16 : DK_AT_UINT16); a->conv = PQ_CONV_I16; break;
        case 32: a->type = dk__atype_make(sign ? DK_AT_INT32 : DK_AT_UINT32); break;
        default: return corrupt(c, e, "INTEGER bit width does not fit INT32");
      }
      return DK_OK;
    }
    case PQ_INT64: {
      if (lt->kind == PQ_LT_TIMESTAMP || (lt->kind == PQ_LT_NONE && (ct == PQ_CT_TIMESTAMP_MILLIS ||
                                                                     ct == PQ_CT_TIMESTAMP_MICROS))) {
        int unit = lt->kind == PQ_LT_TIMESTAMP ? lt->unit
                   : ct == PQ_CT_TIMESTAMP_MILLIS ? PQ_UNIT_MILLIS : PQ_UNIT_MICROS;
        int adjusted = lt->kind == PQ_LT_TIMESTAMP ? lt->adjusted : 1;
        const char *tz = adjusted ? "UTC" : NULL;
        if (unit == PQ_UNIT_NANOS) {
          a->type = dk__atype_timestamp(DK_TU_NANO, tz);
        } else {
          a->type = dk__atype_timestamp(DK_TU_MICRO, tz);
          if (unit == PQ_UNIT_MILLIS) a->conv = PQ_CONV_MILLIS_TO_MICROS;
          else if (unit != PQ_UNIT_MICROS) return corrupt(c, e, "unknown timestamp unit");
        }
        return DK_OK;
      }
      if (lt->kind == PQ_LT_TIME || (lt->kind == PQ_LT_NONE && ct == PQ_CT_TIME_MICROS)) {
        int unit = lt->kind == PQ_LT_TIME ? lt->unit : PQ_UNIT_MICROS;
        if (unit != PQ_UNIT_MICROS && unit != PQ_UNIT_NANOS) return corrupt(c, e, "bad TIME unit");
        a->type = dk__atype_make(DK_AT_TIME64);
        a->type.unit = unit == PQ_UNIT_MICROS ? DK_TU_MICRO : DK_TU_NANO;
        return DK_OK;
      }
      int sign = 1;
      if (lt->kind == PQ_LT_INTEGER) {
        if (lt->bit_width != 64) return corrupt(c, e, "INTEGER bit width does not match INT64");
        sign = lt->is_signed;
      } else if (lt->kind == PQ_LT_NONE && ct == PQ_CT_UINT_64) {
        sign = 0;
      }
      a->type = dk__atype_make(sign ? DK_AT_INT64 : DK_AT_UINT64);
      return DK_OK;
    }
    case PQ_INT96:
      a->type = dk__atype_timestamp(DK_TU_MICRO, "UTC");
      a->conv = PQ_CONV_INT96;
      return DK_OK;
    case PQ_FLOAT: a->type = dk__atype_make(DK_AT_FLOAT); return DK_OK;
    case PQ_DOUBLE: a->type = dk__atype_make(DK_AT_DOUBLE); return DK_OK;
    case PQ_BYTE_ARRAY: {
      int str = lt->kind == PQ_LT_STRING || lt->kind == PQ_LT_ENUM || lt->kind == PQ_LT_JSON ||
                (lt->kind == PQ_LT_NONE && (ct == PQ_CT_UTF8 || ct == PQ_CT_ENUM || ct == PQ_CT_JSON));
      a->type = dk__atype_make(str ? DK_AT_STRING : DK_AT_BINARY);
      a->conv = PQ_CONV_BYTES;
      return DK_OK;
    }
    case PQ_FLBA:
      if (lt->kind == PQ_LT_FLOAT16 && e->type_length == 2) {
        a->type = dk__atype_make(DK_AT_FLOAT16);
        return DK_OK;
      }
      a->type = dk__atype_make(DK_AT_FIXED_BINARY);
      a->type.byte_width = e->type_length;
      return DK_OK;
    default: return corrupt(c, e, "unknown physical type");
  }
}

static dk_status build(ctx *c, const pq_node *nd, int16_t slot_rep, int16_t slot_def,
                       int as_required, pq_anode **out);

/* The element (or the repeated node itself) of a list whose repeated node is `m`. */
static dk_status build_repeated_element(ctx *c, const pq_node *m, const pq_node *list_group,
                                        pq_anode **out) {
  const pq_schema_el *me = m->el;
  int two_level = m->leaf >= 0 || m->n_children != 1 || !strcmp(me->name, "array") ||
                  (list_group && strlen(me->name) == strlen(list_group->el->name) + 6 &&
                   !strncmp(me->name, list_group->el->name, strlen(list_group->el->name)) &&
                   !strcmp(me->name + strlen(list_group->el->name), "_tuple"));
  if (two_level) return build(c, m, m->max_rep, m->max_def, 1, out);
  if (m->children[0]->el->repetition == PQ_REPEATED)
    return build(c, m->children[0], m->max_rep, m->max_def, 0, out);
  return build(c, m->children[0], m->max_rep, m->max_def, 0, out);
}

/* as_required: build node `nd` ignoring its own repetition (a repeated node's element). */
static dk_status build(ctx *c, const pq_node *nd, int16_t slot_rep, int16_t slot_def,
                       int as_required, pq_anode **out) {
  const pq_schema_el *e = nd->el;
  pq_anode *a;
  if (e->repetition == PQ_REPEATED && !as_required) {
    /* an unannotated repeated field: a non-null list of required elements */
    a = anode_new(c, PQ_AN_LIST, nd, e->name, 1);
    if (!a) return DK_NOMEM;
    a->type = dk__atype_make(DK_AT_LIST);
    a->nullable = 0;
    a->def_valid = slot_def;
    a->slot_rep = slot_rep, a->slot_def = slot_def;
    DK_RETURN_NOT_OK(build(c, nd, nd->max_rep, nd->max_def, 1, &a->children[0]));
    *out = a;
    return DK_OK;
  }
  int16_t def_valid = nd->max_def;
  int nullable = !as_required && e->repetition == PQ_OPTIONAL;
  if (nd->leaf >= 0) {
    a = anode_new(c, PQ_AN_LEAF, nd, e->name, 0);
    if (!a) return DK_NOMEM;
    DK_RETURN_NOT_OK(leaf_type(c, a, e));
  } else if (is_list(e) && nd->n_children == 1 && nd->children[0]->el->repetition == PQ_REPEATED) {
    a = anode_new(c, PQ_AN_LIST, nd, e->name, 1);
    if (!a) return DK_NOMEM;
    a->type = dk__atype_make(DK_AT_LIST);
    DK_RETURN_NOT_OK(build_repeated_element(c, nd->children[0], nd, &a->children[0]));
  } else if (is_map(e) && nd->n_children == 1 && nd->children[0]->el->repetition == PQ_REPEATED &&
             nd->children[0]->n_children == 2) {
    const pq_node *m = nd->children[0];
    a = anode_new(c, PQ_AN_MAP, nd, e->name, 1);
    if (!a) return DK_NOMEM;
    a->type = dk__atype_make(DK_AT_MAP);
    pq_anode *ent = anode_new(c, PQ_AN_STRUCT, m, "entries", 2);
    if (!ent) return DK_NOMEM;
    ent->has_field_id = 0;
    ent->type = dk__atype_make(DK_AT_STRUCT);
    ent->nullable = 0;
    ent->def_valid = m->max_def;
    ent->slot_rep = m->max_rep, ent->slot_def = m->max_def;
    for (int i = 0; i < 2; i++)
      DK_RETURN_NOT_OK(build(c, m->children[i], m->max_rep, m->max_def, 0, &ent->children[i]));
    ent->children[0]->nullable = 0; /* Arrow map keys are never null */
    a->children[0] = ent;
  } else {
    if (nd->n_children == 0) return corrupt(c, e, "group without children");
    a = anode_new(c, PQ_AN_STRUCT, nd, e->name, nd->n_children);
    if (!a) return DK_NOMEM;
    a->type = dk__atype_make(DK_AT_STRUCT);
    for (int i = 0; i < nd->n_children; i++)
      DK_RETURN_NOT_OK(build(c, nd->children[i], slot_rep, slot_def, 0, &a->children[i]));
  }
  a->nullable = nullable;
  a->def_valid = def_valid;
  a->slot_rep = slot_rep;
  a->slot_def = slot_def;
  *out = a;
  return DK_OK;
}

dk_status dk_pq__build_anodes(dk_parquet_file *f, dk_error *err) {
  ctx c = {f, err};
  const pq_node *root = f->root;
  pq_anode *a = anode_new(&c, PQ_AN_STRUCT, root, "", root->n_children);
  if (!a) return DK_NOMEM;
  a->type = dk__atype_make(DK_AT_STRUCT);
  a->has_field_id = 0;
  for (int i = 0; i < root->n_children; i++)
    DK_RETURN_NOT_OK(build(&c, root->children[i], 0, 0, 0, &a->children[i]));
  f->aroot = a;
  return DK_OK;
}

dk_status dk_pq__anode_schema(struct ArrowSchema *out, const pq_anode *n, dk_error *err) {
  DK_RETURN_NOT_OK(dk__schema_init(out, &n->type, n->name, n->nullable ? ARROW_FLAG_NULLABLE : 0,
                                  n->n_children, err));
  dk_status st = DK_OK;
  if (n->has_field_id) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", (int)n->field_id);
    const char *k = "PARQUET:field_id", *v = buf;
    st = dk__schema_set_metadata(out, &k, &v, 1, err);
  }
  for (int i = 0; st == DK_OK && i < n->n_children; i++)
    st = dk_pq__anode_schema(out->children[i], n->children[i], err);
  if (st) dk__schema_release(out);
  return st;
}
