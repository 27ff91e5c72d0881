/*
** actions.c — Delta log actions: the JSON of one action line parsed into the typed structs of
** actions.h, and those structs written back as delta-spark writes them.
**
** Parsing follows PROTOCOL.md "Actions": required fields missing or of the wrong type are
** DK_CORRUPT naming the action; unknown fields are ignored; optional fields keep "absent"
** apart from their defaults (dataChange defaults to true for add and remove, as readers
** treat it). Writing follows delta-spark's Jackson serialisation of its action case classes
** (spark/.../actions/actions.scala): fields in declaration order, absent optional fields
** (None / null) left out, partitionValues always written for add and cdc, cdc's dataChange
** after its other fields, metaData's format as {"provider":...,"options":{}}; strings with
** '"', '\\' and control characters escaped, UTF-8 passed through (json.h). commitInfo is
** free-form and is written back as the JSON text it was read as.
*/
#include <inttypes.h>
#include <stdio.h>

#include "protocol/actions.h"

/* Object lookup by a string literal without a strlen per call (the hot path of replay). */
#define JGET(o, lit) dk__json_getn((o), "" lit, sizeof(lit) - 1) /* literals only */
#define get_i64(o, k, out) dk__json_as_i64(JGET((o), k), (out))
#define get_str(o, k, n) dk__json_as_str(JGET((o), k), (n))

static const struct {
  const char *key;
  dk_action_kind kind;
} kinds[] = {{"add", DK_ACTION_ADD},
             {"remove", DK_ACTION_REMOVE},
             {"metaData", DK_ACTION_METADATA},
             {"protocol", DK_ACTION_PROTOCOL},
             {"txn", DK_ACTION_TXN},
             {"cdc", DK_ACTION_CDC},
             {"commitInfo", DK_ACTION_COMMIT_INFO},
             {"domainMetadata", DK_ACTION_DOMAIN_METADATA},
             {"checkpointMetadata", DK_ACTION_CHECKPOINT_METADATA},
             {"sidecar", DK_ACTION_SIDECAR}};

dk_action_kind dk_protocol__action_kind(const char *key, size_t len) {
  for (size_t i = 0; i < DK_ARRAY_LEN(kinds); i++)
    if (strlen(kinds[i].key) == len && !memcmp(kinds[i].key, key, len)) return kinds[i].kind;
  return DK_ACTION_UNKNOWN;
}

static const char *kind_name(dk_action_kind k) {
  for (size_t i = 0; i < DK_ARRAY_LEN(kinds); i++)
    if (kinds[i].kind == k) return kinds[i].key;
  return NULL;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static dk_str opt_view(const dk_json_value *o, const char *key, size_t klen) {
  dk_str s = {NULL, 0};
  s.ptr = dk__json_as_str(dk__json_getn(o, key, klen), &s.len);
  return s;
}
#define VIEW(o, lit) opt_view((o), "" lit, sizeof(lit) - 1)

static int opt_bool(const dk_json_value *o, const char *key, size_t klen, int dflt) {
  bool b;
  return dk__json_as_bool(dk__json_getn(o, key, klen), &b) ? b : dflt;
}
#define BOOL(o, lit, d) opt_bool((o), "" lit, sizeof(lit) - 1, (d))

/* partitionValues: a map of strings (null values allowed), as 2*n views in `ar`. */
static dk_status parse_pv(const dk_json_value *pv, const char *what, dk_arena *ar, size_t *n,
                          const dk_str **out, dk_error *err) {
  *n = 0;
  *out = NULL;
  if (!pv || pv->type != DK_JSON_OBJECT || !pv->len) return DK_OK;
  dk_str *kv = dk__arena_alloc(ar, 2 * (size_t)pv->len * sizeof *kv, err);
  if (!kv) return DK_NOMEM;
  for (uint32_t i = 0; i < pv->len; i++) {
    const dk_json_member *m = &pv->u.members[i];
    kv[2 * i].ptr = m->key;
    kv[2 * i].len = m->klen;
    kv[2 * i + 1].ptr = dk__json_as_str(&m->value, &kv[2 * i + 1].len);
    if (!kv[2 * i + 1].ptr && m->value.type != DK_JSON_NULL)
      return dk__error_set(err, DK_CORRUPT, "log: %s: partition value of '%s' is not a string",
                           what, m->key);
  }
  *out = kv;
  *n = pv->len;
  return DK_OK;
}

/* An object as its compact JSON text in `ar` (tags, commitInfo). */
static dk_status render(dk_str *out, const dk_json_value *v, dk_arena *ar, dk_error *err) {
  out->ptr = NULL;
  out->len = 0;
  if (!v || v->type != DK_JSON_OBJECT) return DK_OK;
  dk_buf b;
  dk__buf_init(&b, ar->alloc);
  dk_status s = dk__json_write_value(&b, v, err);
  if (s == DK_OK) {
    char *t = dk__arena_strndup(ar, b.data ? b.data : "", b.len, err);
    if (!t) s = DK_NOMEM;
    out->ptr = t;
    out->len = b.len;
  }
  dk__buf_dispose(&b);
  return s;
}

/* A deletionVector descriptor; path_or_inline_dv borrows the JSON string (NUL-terminated). */
static dk_status parse_dv(dk_dv_descriptor *dv, int64_t *max_row_index, const dk_json_value *v,
                          const char *what, dk_error *err) {
  size_t tn, pn;
  const char *t = get_str(v, "storageType", &tn);
  const char *p = get_str(v, "pathOrInlineDv", &pn);
  if (!t || tn != 1 || !p)
    return dk__error_set(err, DK_CORRUPT, "log: %s has a malformed deletionVector", what);
  memset(dv, 0, sizeof *dv);
  dv->storage_type = t[0];
  if (dv->storage_type != 'u' && dv->storage_type != 'i' && dv->storage_type != 'p')
    return dk__error_set(err, DK_CORRUPT, "log: %s: unknown deletionVector storageType '%c'", what,
                         t[0]);
  dv->path_or_inline_dv = p;
  int64_t x;
  dv->offset = get_i64(v, "offset", &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
  dv->size_in_bytes = get_i64(v, "sizeInBytes", &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : 0;
  dv->cardinality = get_i64(v, "cardinality", &x) ? x : -1; /* absent: refused for adds */
  *max_row_index = get_i64(v, "maxRowIndex", &x) ? x : -1;
  return DK_OK;
}

/* Whether member m is named by the literal lit. */
#define IS_KEY(m, lit) ((m)->klen == sizeof(lit) - 1 && !memcmp((m)->key, "" lit, sizeof(lit) - 1))

/* add actions are most of a log: their fields come from one pass over the members (of a key
 * given twice the last counts, as with dk__json_getn) instead of a lookup per field. */
static dk_status parse_add(dk__add *a, const dk_json_value *v, dk_arena *ar, dk_error *err) {
  memset(a, 0, sizeof *a);
  const dk_json_value *path = NULL, *size = NULL, *mtime = NULL, *dc = NULL, *pv = NULL;
  const dk_json_value *stats = NULL, *tags = NULL, *dvv = NULL, *brid = NULL, *drcv = NULL;
  const dk_json_value *clus = NULL;
  if (v && v->type == DK_JSON_OBJECT) {
    for (uint32_t i = 0; i < v->len; i++) {
      const dk_json_member *m = &v->u.members[i];
      if (IS_KEY(m, "path")) path = &m->value;
      else if (IS_KEY(m, "size")) size = &m->value;
      else if (IS_KEY(m, "modificationTime")) mtime = &m->value;
      else if (IS_KEY(m, "dataChange")) dc = &m->value;
      else if (IS_KEY(m, "partitionValues")) pv = &m->value;
      else if (IS_KEY(m, "stats")) stats = &m->value;
      else if (IS_KEY(m, "tags")) tags = &m->value;
      else if (IS_KEY(m, "deletionVector")) dvv = &m->value;
      else if (IS_KEY(m, "baseRowId")) brid = &m->value;
      else if (IS_KEY(m, "defaultRowCommitVersion")) drcv = &m->value;
      else if (IS_KEY(m, "clusteringProvider")) clus = &m->value;
    }
  }
  a->path.ptr = dk__json_as_str(path, &a->path.len);
  if (!dk__json_as_i64(size, &a->size)) a->size = -1;
  if (!dk__json_as_i64(mtime, &a->mtime)) a->mtime = 0;
  bool b;
  a->data_change = dk__json_as_bool(dc, &b) ? b : 1;
  DK_RETURN_NOT_OK(parse_pv(pv, "add", ar, &a->n_pv, &a->pv, err));
  a->stats.ptr = dk__json_as_str(stats, &a->stats.len);
  DK_RETURN_NOT_OK(render(&a->tags_json, tags, ar, err));
  a->dv_max_row_index = -1;
  if (dvv && dvv->type == DK_JSON_OBJECT) {
    dk_dv_descriptor dv;
    DK_RETURN_NOT_OK(parse_dv(&dv, &a->dv_max_row_index, dvv, "add", err));
    a->has_dv = 1;
    a->dv_type = dv.storage_type;
    a->dv_path.ptr = dv.path_or_inline_dv;
    a->dv_path.len = strlen(dv.path_or_inline_dv);
    a->dv_offset = dv.offset;
    a->dv_size = dv.size_in_bytes;
    a->dv_card = dv.cardinality;
  }
  a->has_brid = dk__json_as_i64(brid, &a->brid);
  a->has_drcv = dk__json_as_i64(drcv, &a->drcv);
  a->clustering_provider.ptr = dk__json_as_str(clus, &a->clustering_provider.len);
  return DK_OK;
}

static dk_status parse_remove(dk__remove *r, const dk_json_value *v, dk_arena *ar,
                              dk_error *err) {
  memset(r, 0, sizeof *r);
  r->path = VIEW(v, "path");
  r->dv_max_row_index = -1;
  const dk_json_value *dvv = JGET(v, "deletionVector");
  if (dvv && dvv->type == DK_JSON_OBJECT) {
    dk_dv_descriptor *dv = dk__arena_alloc(ar, sizeof *dv, err);
    if (!dv) return DK_NOMEM;
    DK_RETURN_NOT_OK(parse_dv(dv, &r->dv_max_row_index, dvv, "remove", err));
    r->dv = dv;
  }
  if (!get_i64(v, "deletionTimestamp", &r->deletion_timestamp)) r->deletion_timestamp = -1;
  if (!get_i64(v, "size", &r->size)) r->size = -1;
  r->data_change = BOOL(v, "dataChange", 1);
  r->extended_file_metadata = BOOL(v, "extendedFileMetadata", -1);
  const dk_json_value *pv = JGET(v, "partitionValues");
  r->has_pv = pv && pv->type == DK_JSON_OBJECT;
  DK_RETURN_NOT_OK(parse_pv(pv, "remove", ar, &r->n_pv, &r->pv, err));
  r->stats = VIEW(v, "stats");
  DK_RETURN_NOT_OK(render(&r->tags_json, JGET(v, "tags"), ar, err));
  r->has_brid = get_i64(v, "baseRowId", &r->brid);
  r->has_drcv = get_i64(v, "defaultRowCommitVersion", &r->drcv);
  return DK_OK;
}

static dk_status parse_cdc(dk__cdc *c, const dk_json_value *v, dk_arena *ar, dk_error *err) {
  memset(c, 0, sizeof *c);
  c->path = VIEW(v, "path");
  if (!c->path.ptr) return dk__error_set(err, DK_CORRUPT, "log: cdc action without a path");
  if (!get_i64(v, "size", &c->size)) c->size = -1;
  c->data_change = BOOL(v, "dataChange", 0);
  DK_RETURN_NOT_OK(parse_pv(JGET(v, "partitionValues"), "cdc", ar, &c->n_pv, &c->pv, err));
  return render(&c->tags_json, JGET(v, "tags"), ar, err);
}

/* An array of strings: NULL/0 when absent or null, an empty (non-NULL) array when []. */
static dk_status str_array(const dk_json_value *v, const char *what, dk_arena *ar,
                           const char *const **out, size_t *n, dk_error *err) {
  *out = NULL;
  *n = 0;
  if (!v || v->type == DK_JSON_NULL) return DK_OK;
  if (v->type != DK_JSON_ARRAY) return dk__error_set(err, DK_CORRUPT, "log: %s is not an array", what);
  if (!v->len) {
    static const char *const empty[1] = {NULL};
    *out = empty;
    return DK_OK;
  }
  const char **arr = dk__arena_alloc(ar, sizeof *arr * v->len, err);
  if (!arr) return DK_NOMEM;
  for (uint32_t i = 0; i < v->len; i++) {
    size_t sn;
    arr[i] = dk__json_as_str(&v->u.items[i], &sn);
    if (!arr[i]) return dk__error_set(err, DK_CORRUPT, "log: %s has a non-string entry", what);
  }
  *out = arr;
  *n = v->len;
  return DK_OK;
}

static dk_status parse_protocol(dk_protocol *p, const dk_json_value *v, dk_arena *ar,
                                dk_error *err) {
  memset(p, 0, sizeof *p);
  int64_t r, w;
  if (!get_i64(v, "minReaderVersion", &r) || !get_i64(v, "minWriterVersion", &w) ||
      r > INT32_MAX || w > INT32_MAX || r < INT32_MIN || w < INT32_MIN)
    return dk__error_set(err, DK_CORRUPT,
                         "log: protocol action without valid minReaderVersion/minWriterVersion");
  p->min_reader_version = (int32_t)r;
  p->min_writer_version = (int32_t)w;
  const dk_json_value *rf = JGET(v, "readerFeatures"), *wf = JGET(v, "writerFeatures");
  DK_RETURN_NOT_OK(str_array(rf, "readerFeatures", ar, &p->reader_features, &p->n_reader_features, err));
  DK_RETURN_NOT_OK(str_array(wf, "writerFeatures", ar, &p->writer_features, &p->n_writer_features, err));
  p->has_reader_features = rf && rf->type == DK_JSON_ARRAY;
  p->has_writer_features = wf && wf->type == DK_JSON_ARRAY;
  return DK_OK;
}

static const char *opt_cstr(const dk_json_value *o, const char *k) {
  size_t n;
  return dk__json_as_str(dk__json_get(o, k), &n);
}

/* A metaData field that must be a string when present: any other type (an object, a number)
 * is corrupt, never read as absent (a schemaString object would pass for an empty schema). */
static dk_status typed_field(const dk_json_value *o, const char *k, dk_json_type type,
                             const char *tn, dk_error *err) {
  const dk_json_value *x = dk__json_get(o, k);
  DK_RETURN_IF(x && x->type != DK_JSON_NULL && x->type != type, DK_CORRUPT, err,
               "log: metaData.%s is not %s", k, tn);
  return DK_OK;
}

static dk_status parse_metadata(dk_metadata *m, const dk_json_value *v, dk_arena *ar,
                                dk_error *err) {
  memset(m, 0, sizeof *m);
  static const char *const strings[] = {"id", "name", "description", "schemaString"};
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    DK_RETURN_NOT_OK(typed_field(v, strings[i], DK_JSON_STRING, "a string", err));
  DK_RETURN_NOT_OK(typed_field(v, "configuration", DK_JSON_OBJECT, "an object", err));
  DK_RETURN_NOT_OK(typed_field(v, "format", DK_JSON_OBJECT, "an object", err));
  m->id = opt_cstr(v, "id");
  if (!m->id) return dk__error_set(err, DK_CORRUPT, "log: metaData action without an id");
  m->name = opt_cstr(v, "name");
  m->description = opt_cstr(v, "description");
  m->schema_string = opt_cstr(v, "schemaString");
  m->format_provider = opt_cstr(JGET(v, "format"), "provider");
  if (!m->format_provider) m->format_provider = "parquet";
  if (!get_i64(v, "createdTime", &m->created_time)) m->created_time = -1;
  DK_RETURN_NOT_OK(str_array(JGET(v, "partitionColumns"), "partitionColumns", ar,
                             &m->partition_columns, &m->n_partition_columns, err));
  const dk_json_value *cfg = JGET(v, "configuration");
  if (cfg && cfg->type == DK_JSON_OBJECT && cfg->len) {
    const char **keys = dk__arena_alloc(ar, sizeof *keys * cfg->len, err);
    const char **vals = dk__arena_alloc(ar, sizeof *vals * cfg->len, err);
    if (!keys || !vals) return DK_NOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < cfg->len; i++) {
      const dk_json_member *mm = &cfg->u.members[i];
      size_t vn;
      const char *s = dk__json_as_str(&mm->value, &vn);
      if (!s) continue; /* null values: treated as unset */
      keys[n] = mm->key;
      vals[n] = s;
      n++;
    }
    m->config_keys = keys;
    m->config_values = vals;
    m->n_configuration = n;
  }
  return DK_OK;
}

dk_status dk_protocol__action_parse(dk__action *out, const char *key, const dk_json_value *v,
                                    dk_arena *ar, dk_error *err) {
  memset(out, 0, sizeof *out);
  size_t klen = strlen(key);
  out->name.ptr = key;
  out->name.len = klen;
  out->kind = dk_protocol__action_kind(key, klen);
  if (out->kind == DK_ACTION_UNKNOWN) return DK_OK;
  if (!v || v->type != DK_JSON_OBJECT)
    return dk__error_set(err, DK_CORRUPT, "log: %s action is not an object", key);
  int64_t x;
  switch (out->kind) {
    case DK_ACTION_ADD: return parse_add(&out->u.add, v, ar, err);
    case DK_ACTION_REMOVE: return parse_remove(&out->u.remove, v, ar, err);
    case DK_ACTION_CDC: return parse_cdc(&out->u.cdc, v, ar, err);
    case DK_ACTION_METADATA: return parse_metadata(&out->u.metadata, v, ar, err);
    case DK_ACTION_PROTOCOL: return parse_protocol(&out->u.protocol, v, ar, err);
    case DK_ACTION_TXN: {
      dk__txn_action *t = &out->u.txn;
      t->app_id = VIEW(v, "appId");
      if (!t->app_id.ptr || !get_i64(v, "version", &t->version))
        return dk__error_set(err, DK_CORRUPT, "log: txn action without appId/version");
      if (!get_i64(v, "lastUpdated", &t->last_updated)) t->last_updated = -1;
      return DK_OK;
    }
    case DK_ACTION_DOMAIN_METADATA: {
      dk__domain_action *d = &out->u.domain;
      d->domain = VIEW(v, "domain");
      if (!d->domain.ptr)
        return dk__error_set(err, DK_CORRUPT, "log: domainMetadata without a domain");
      d->configuration = VIEW(v, "configuration");
      d->removed = BOOL(v, "removed", 0);
      return DK_OK;
    }
    case DK_ACTION_COMMIT_INFO: {
      dk__commit_info *c = &out->u.commit_info;
      c->timestamp = get_i64(v, "timestamp", &x) ? x : -1;
      c->in_commit_timestamp = get_i64(v, "inCommitTimestamp", &x) ? x : -1;
      c->operation = VIEW(v, "operation");
      return render(&c->json, v, ar, err);
    }
    case DK_ACTION_CHECKPOINT_METADATA: {
      dk__checkpoint_metadata *c = &out->u.checkpoint_metadata;
      if (!get_i64(v, "version", &c->version))
        return dk__error_set(err, DK_CORRUPT, "log: checkpointMetadata without a version");
      return render(&c->tags_json, JGET(v, "tags"), ar, err);
    }
    case DK_ACTION_SIDECAR: {
      dk__sidecar *s = &out->u.sidecar;
      s->path = VIEW(v, "path");
      if (!s->path.ptr) return dk__error_set(err, DK_CORRUPT, "log: sidecar action without a path");
      s->size_in_bytes = get_i64(v, "sizeInBytes", &x) ? x : -1;
      s->modification_time = get_i64(v, "modificationTime", &x) ? x : -1;
      return render(&s->tags_json, JGET(v, "tags"), ar, err);
    }
    default: return DK_OK;
  }
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct wr {
  dk_buf *b;
  dk_error *err;
  dk_status st;
  int first;              /* no field written yet in the current object */
} wr;

static void w_raw(wr *w, const char *s, size_t n) {
  if (w->st == DK_OK) w->st = dk__buf_append(w->b, s, n, w->err);
}
static void w_lit(wr *w, const char *s) { w_raw(w, s, strlen(s)); }
static void w_str(wr *w, const char *s, size_t n) {
  if (w->st == DK_OK) w->st = dk__json_write_str(w->b, s ? s : "", s ? n : 0, w->err);
}
static void w_key(wr *w, const char *k) {
  if (!w->first) w_lit(w, ",");
  w->first = 0;
  w_str(w, k, strlen(k));
  w_lit(w, ":");
}
static void w_open(wr *w) {
  w_lit(w, "{");
  w->first = 1;
}
static void w_close(wr *w) {
  w_lit(w, "}");
  w->first = 0;
}
static void f_str(wr *w, const char *k, dk_str s) {
  if (!s.ptr) return;
  w_key(w, k);
  w_str(w, s.ptr, s.len);
}
static void f_cstr(wr *w, const char *k, const char *s) {
  if (!s) return;
  w_key(w, k);
  w_str(w, s, strlen(s));
}
static void f_i64(wr *w, const char *k, int64_t v) {
  char t[32];
  int n = snprintf(t, sizeof t, "%" PRId64, v);
  w_key(w, k);
  w_raw(w, t, (size_t)n);
}
static void f_bool(wr *w, const char *k, int v) {
  w_key(w, k);
  w_lit(w, v ? "true" : "false");
}
/* A JSON object given as text (tags): written as it is. */
static void f_json(wr *w, const char *k, dk_str s) {
  if (!s.ptr) return;
  w_key(w, k);
  w_raw(w, s.ptr, s.len);
}
static void f_pv(wr *w, const char *k, size_t n, const dk_str *pv) {
  w_key(w, k);
  w_lit(w, "{");
  for (size_t i = 0; i < n; i++) {
    if (i) w_lit(w, ",");
    w_str(w, pv[2 * i].ptr, pv[2 * i].len);
    w_lit(w, ":");
    if (pv[2 * i + 1].ptr) w_str(w, pv[2 * i + 1].ptr, pv[2 * i + 1].len);
    else w_lit(w, "null");
  }
  w_lit(w, "}");
}
static void f_strs(wr *w, const char *k, const char *const *a, size_t n) {
  w_key(w, k);
  w_lit(w, "[");
  for (size_t i = 0; i < n; i++) {
    if (i) w_lit(w, ",");
    w_str(w, a[i], strlen(a[i]));
  }
  w_lit(w, "]");
}
static void f_dv(wr *w, char type, const char *path, size_t plen, int32_t offset, int32_t size,
                 int64_t card, int64_t max_row_index) {
  w_key(w, "deletionVector");
  w_open(w);
  char t[2] = {type, 0};
  f_cstr(w, "storageType", t);
  w_key(w, "pathOrInlineDv");
  w_str(w, path, plen);
  if (offset >= 0) f_i64(w, "offset", offset);
  f_i64(w, "sizeInBytes", size);
  f_i64(w, "cardinality", card);
  if (max_row_index >= 0) f_i64(w, "maxRowIndex", max_row_index);
  w_close(w);
}

static void write_add(wr *w, const dk__add *a) {
  f_str(w, "path", a->path);
  f_pv(w, "partitionValues", a->n_pv, a->pv);
  f_i64(w, "size", a->size);
  f_i64(w, "modificationTime", a->mtime);
  f_bool(w, "dataChange", a->data_change);
  f_str(w, "stats", a->stats);
  f_json(w, "tags", a->tags_json);
  if (a->has_dv)
    f_dv(w, a->dv_type, a->dv_path.ptr, a->dv_path.len, a->dv_offset, a->dv_size, a->dv_card,
         a->dv_max_row_index);
  if (a->has_brid) f_i64(w, "baseRowId", a->brid);
  if (a->has_drcv) f_i64(w, "defaultRowCommitVersion", a->drcv);
  f_str(w, "clusteringProvider", a->clustering_provider);
}

static void write_remove(wr *w, const dk__remove *r) {
  f_str(w, "path", r->path);
  if (r->deletion_timestamp >= 0) f_i64(w, "deletionTimestamp", r->deletion_timestamp);
  f_bool(w, "dataChange", r->data_change);
  if (r->extended_file_metadata >= 0) f_bool(w, "extendedFileMetadata", r->extended_file_metadata);
  if (r->has_pv) f_pv(w, "partitionValues", r->n_pv, r->pv);
  if (r->size >= 0) f_i64(w, "size", r->size);
  f_json(w, "tags", r->tags_json);
  if (r->dv)
    f_dv(w, r->dv->storage_type, r->dv->path_or_inline_dv, strlen(r->dv->path_or_inline_dv),
         r->dv->offset, r->dv->size_in_bytes, r->dv->cardinality, r->dv_max_row_index);
  if (r->has_brid) f_i64(w, "baseRowId", r->brid);
  if (r->has_drcv) f_i64(w, "defaultRowCommitVersion", r->drcv);
  f_str(w, "stats", r->stats);
}

static void write_metadata(wr *w, const dk_metadata *m) {
  f_cstr(w, "id", m->id);
  f_cstr(w, "name", m->name);
  f_cstr(w, "description", m->description);
  w_key(w, "format");
  w_open(w);
  f_cstr(w, "provider", m->format_provider ? m->format_provider : "parquet");
  w_key(w, "options");
  w_lit(w, "{}");
  w_close(w);
  f_cstr(w, "schemaString", m->schema_string);
  f_strs(w, "partitionColumns", m->partition_columns, m->n_partition_columns);
  w_key(w, "configuration");
  w_open(w);
  for (size_t i = 0; i < m->n_configuration; i++) f_cstr(w, m->config_keys[i], m->config_values[i]);
  w_close(w);
  if (m->created_time >= 0) f_i64(w, "createdTime", m->created_time);
}

dk_status dk_protocol__action_write(dk_buf *b, const dk__action *a, dk_error *err) {
  const char *name = kind_name(a->kind);
  if (!name) return dk__error_set(err, DK_INVALID, "log: cannot write an action of unknown kind");
  wr w = {b, err, DK_OK, 1};
  size_t start = b->len;
  w_open(&w);
  w_key(&w, name);
  w_open(&w);
  switch (a->kind) {
    case DK_ACTION_ADD: write_add(&w, &a->u.add); break;
    case DK_ACTION_REMOVE: write_remove(&w, &a->u.remove); break;
    case DK_ACTION_CDC: {
      const dk__cdc *c = &a->u.cdc;
      f_str(&w, "path", c->path);
      f_pv(&w, "partitionValues", c->n_pv, c->pv);
      f_i64(&w, "size", c->size);
      f_json(&w, "tags", c->tags_json);
      f_bool(&w, "dataChange", c->data_change);
      break;
    }
    case DK_ACTION_METADATA: write_metadata(&w, &a->u.metadata); break;
    case DK_ACTION_PROTOCOL: {
      const dk_protocol *p = &a->u.protocol;
      f_i64(&w, "minReaderVersion", p->min_reader_version);
      f_i64(&w, "minWriterVersion", p->min_writer_version);
      if (p->has_reader_features)
        f_strs(&w, "readerFeatures", p->reader_features, p->n_reader_features);
      if (p->has_writer_features)
        f_strs(&w, "writerFeatures", p->writer_features, p->n_writer_features);
      break;
    }
    case DK_ACTION_TXN:
      f_str(&w, "appId", a->u.txn.app_id);
      f_i64(&w, "version", a->u.txn.version);
      if (a->u.txn.last_updated >= 0) f_i64(&w, "lastUpdated", a->u.txn.last_updated);
      break;
    case DK_ACTION_DOMAIN_METADATA: {
      const dk__domain_action *d = &a->u.domain;
      f_str(&w, "domain", d->domain);
      dk_str cfg = d->configuration.ptr ? d->configuration : (dk_str){"", 0};
      f_str(&w, "configuration", cfg);
      f_bool(&w, "removed", d->removed);
      break;
    }
    case DK_ACTION_COMMIT_INFO: /* free-form: the object as given */
      b->len = start;
      w.first = 1;
      w_lit(&w, "{\"commitInfo\":");
      if (a->u.commit_info.json.ptr) w_raw(&w, a->u.commit_info.json.ptr, a->u.commit_info.json.len);
      else w_lit(&w, "{}");
      w_lit(&w, "}\n");
      return w.st;
    case DK_ACTION_CHECKPOINT_METADATA:
      f_i64(&w, "version", a->u.checkpoint_metadata.version);
      f_json(&w, "tags", a->u.checkpoint_metadata.tags_json);
      break;
    case DK_ACTION_SIDECAR: {
      const dk__sidecar *s = &a->u.sidecar;
      f_str(&w, "path", s->path);
      f_i64(&w, "sizeInBytes", s->size_in_bytes);
      f_i64(&w, "modificationTime", s->modification_time);
      f_json(&w, "tags", s->tags_json);
      break;
    }
    default: break;
  }
  w_close(&w);
  w_close(&w);
  w_lit(&w, "\n");
  if (w.st != DK_OK) b->len = start;
  return w.st;
}
