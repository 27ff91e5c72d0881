/*
** features.c — the writer side of the protocol (PROTOCOL.md "Protocol Evolution", "Table
** Features"; write-path.md §1.3): which writer versions and features dk writes, the features
** legacy versions imply, and the protocol a new table needs for its properties and types.
**
** A transaction refuses (DK_UNSUPPORTED, naming the feature) any table whose writer protocol
** lists a feature outside `writable`. Features whose obligations live in the rows
** (invariants, CHECK constraints, generated and identity columns) are enforced, or the write
** refused, by the data path that sees the rows; files an engine adds itself are its own.
*/
#include "txn/txn_int.h"

static const char *const writable[] = {
    "appendOnly",         "invariants",        "checkConstraints",    "changeDataFeed",
    "generatedColumns",   "identityColumns",   "columnMapping",       "timestampNtz",
    "deletionVectors",    "rowTracking",       "domainMetadata",      "inCommitTimestamp",
    "v2Checkpoint",       "vacuumProtocolCheck", "typeWidening",      "typeWidening-preview",
    "clustering",         "allowColumnDefaults", "variantType",       "variantType-preview",
};

/* Features implied by a legacy writer version (PROTOCOL.md "Legacy" table). */
static const struct { const char *name; int writer; int reader; } legacy[] = {
    {"appendOnly", 2, 1},      {"invariants", 2, 1},      {"checkConstraints", 3, 1},
    {"changeDataFeed", 4, 1},  {"generatedColumns", 4, 1}, {"columnMapping", 5, 2},
    {"identityColumns", 6, 1},
};

static int in_list(const char *const *l, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (l[i] && strcmp(l[i], s) == 0) return 1;
  return 0;
}

int dk_txn__protocol_supports(const dk_protocol *p, const char *feature) {
  if (p->min_writer_version >= 7)
    return in_list(p->writer_features, p->n_writer_features, feature) ||
           in_list(p->reader_features, p->n_reader_features, feature);
  for (size_t i = 0; i < DK_ARRAY_LEN(legacy); i++)
    if (strcmp(legacy[i].name, feature) == 0) return p->min_writer_version >= legacy[i].writer;
  return 0;
}

dk_status dk_txn__check_write_protocol(const dk_protocol *p, dk_error *err) {
  DK_RETURN_NOT_OK(dk_protocol__check_read(p, err));
  if (p->min_writer_version < 1)
    return dk__error_set(err, DK_CORRUPT, "protocol: invalid minWriterVersion %d",
                         (int)p->min_writer_version);
  if (p->min_writer_version > 7)
    return dk__error_set(err, DK_UNSUPPORTED,
                         "protocol: unsupported writer version (minWriterVersion %d; dk writes 1 "
                         "to 7)",
                         (int)p->min_writer_version);
  if (p->min_writer_version < 7) return DK_OK;
  for (size_t i = 0; i < p->n_writer_features; i++) {
    const char *f = p->writer_features[i];
    if (!in_list(writable, DK_ARRAY_LEN(writable), f ? f : ""))
      return dk__error_set(err, DK_UNSUPPORTED,
                           "protocol: table requires writer feature '%s', which dk does not "
                           "support for writing",
                           f ? f : "(null)");
  }
  return DK_OK;
}

/* Every feature of prev (listed or implied) must still be supported by next. */
int dk_txn__protocol_removes_features(const dk_protocol *next, const dk_protocol *prev) {
  for (size_t i = 0; i < DK_ARRAY_LEN(legacy); i++)
    if (dk_txn__protocol_supports(prev, legacy[i].name) &&
        !dk_txn__protocol_supports(next, legacy[i].name))
      return 1;
  if (prev->min_writer_version >= 7)
    for (size_t i = 0; i < prev->n_writer_features; i++)
      if (!dk_txn__protocol_supports(next, prev->writer_features[i])) return 1;
  return 0;
}

static int type_has(const dk_type *t, dk_type_id id) {
  if (!t) return 0;
  if (t->id == id) return 1;
  switch (t->id) {
    case DK_TYPE_STRUCT:
      for (size_t i = 0; i < t->n_fields; i++)
        if (type_has(t->fields[i].type, id)) return 1;
      return 0;
    case DK_TYPE_ARRAY: return type_has(t->element, id);
    case DK_TYPE_MAP: return type_has(t->key, id) || type_has(t->value, id);
    default: return 0;
  }
}

typedef struct feat_set {
  const char *names[32];
  int rw[32];
  size_t n;
} feat_set;

static void feat_add(feat_set *s, const char *name, int reader_writer) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return;
  if (s->n < 32) {
    s->names[s->n] = name;
    s->rw[s->n++] = reader_writer;
  }
}

/* Sets a writer-version-7 protocol's feature lists from fs (reader features, and reader
 * version 3, when any is a reader-writer feature). */
static dk_status fill_features(dk_protocol *out, dk_arena *ar, const feat_set *fs, dk_error *err) {
  int any_rw = 0;
  for (size_t i = 0; i < fs->n; i++) any_rw |= fs->rw[i];
  if (any_rw) out->min_reader_version = 3;
  else if (out->min_reader_version < 1) out->min_reader_version = 1;
  const char **w = dk__arena_alloc(ar, (fs->n + 1) * sizeof *w, err);
  const char **r = dk__arena_alloc(ar, (fs->n + 1) * sizeof *r, err);
  if (!w || !r) return DK_NOMEM;
  size_t nr = 0;
  for (size_t i = 0; i < fs->n; i++) {
    w[i] = fs->names[i];
    if (fs->rw[i]) r[nr++] = fs->names[i];
  }
  out->writer_features = w;
  out->n_writer_features = fs->n;
  out->has_writer_features = 1;
  out->reader_features = r;
  out->n_reader_features = nr;
  out->has_reader_features = out->min_reader_version >= 3;
  return DK_OK;
}

static int is_rw_feature(const char *f) {
  static const char *const rw[] = {"columnMapping", "deletionVectors", "timestampNtz",
                                   "v2Checkpoint", "vacuumProtocolCheck", "typeWidening",
                                   "typeWidening-preview", "variantType", "variantType-preview"};
  return in_list(rw, DK_ARRAY_LEN(rw), f);
}

/* The features metadata m and its schema need (fs), and the legacy versions that would
 * carry them (*reader, *writer) unless *need_features (only table features can). */
static dk_status derive_features(feat_set *fs_out, int *reader_out, int *writer_out,
                                 int *need_out, dk_arena *ar, const txn_meta *m,
                                 const dk_type *schema, dk_error *err) {
  int reader = 1, writer = 2, need_features = 0;
  feat_set fs = {.n = 0};
  const char *cm = dk_txn__meta_conf(m, "delta.columnMapping.mode");
  if (cm && strcmp(cm, "none") != 0) {
    reader = 2;
    writer = 5;
    feat_add(&fs, "columnMapping", 1);
  }
  if (dk_txn__conf_true(m, "delta.enableChangeDataFeed")) {
    if (writer < 4) writer = 4;
    feat_add(&fs, "changeDataFeed", 0);
  }
  for (size_t i = 0; i < m->n_conf; i++)
    if (!strncmp(m->conf[2 * i], "delta.constraints.", 18)) {
      if (writer < 3) writer = 3;
      feat_add(&fs, "checkConstraints", 0);
    }
  if (dk_txn__conf_true(m, "delta.enableDeletionVectors")) {
    feat_add(&fs, "deletionVectors", 1);
    need_features = 1;
  }
  if (type_has(schema, DK_TYPE_TIMESTAMP_NTZ)) {
    feat_add(&fs, "timestampNtz", 1);
    need_features = 1;
  }
  if (type_has(schema, DK_TYPE_VARIANT)) {
    feat_add(&fs, "variantType", 1);
    need_features = 1;
  }
  if (dk_txn__conf_true(m, "delta.enableRowTracking")) {
    feat_add(&fs, "rowTracking", 0);
    feat_add(&fs, "domainMetadata", 0);
    need_features = 1;
  }
  if (dk_txn__conf_true(m, "delta.enableInCommitTimestamps")) {
    feat_add(&fs, "inCommitTimestamp", 0);
    need_features = 1;
  }
  const char *cp = dk_txn__meta_conf(m, "delta.checkpointPolicy");
  if (cp && strcmp(cp, "v2") == 0) {
    feat_add(&fs, "v2Checkpoint", 1);
    need_features = 1;
  }
  if (dk_txn__conf_true(m, "delta.enableTypeWidening")) {
    feat_add(&fs, "typeWidening", 1);
    need_features = 1;
  }
  for (size_t i = 0; i < m->n_conf; i++) {
    const char *k = m->conf[2 * i], *v = m->conf[2 * i + 1];
    if (strncmp(k, "delta.feature.", 14) != 0) continue;
    if (strcmp(v, "supported") != 0 && strcmp(v, "enabled") != 0)
      return dk__error_set(err, DK_INVALID, "table property %s: '%s' (expected 'supported')", k,
                           v);
    const char *f = dk__arena_strndup(ar, k + 14, strlen(k + 14), err);
    if (!f) return DK_NOMEM;
    feat_add(&fs, f, is_rw_feature(f));
    need_features = 1;
  }
  *fs_out = fs;
  *reader_out = reader;
  *writer_out = writer;
  *need_out = need_features;
  return DK_OK;
}

dk_status dk_txn__derive_protocol(dk_protocol *out, dk_arena *ar, const txn_meta *m,
                                  const dk_type *schema, dk_error *err) {
  memset(out, 0, sizeof *out);
  int reader, writer, need_features;
  feat_set fs;
  DK_RETURN_NOT_OK(derive_features(&fs, &reader, &writer, &need_features, ar, m, schema, err));
  if (!need_features) {
    out->min_reader_version = reader;
    out->min_writer_version = writer;
    return DK_OK;
  }
  /* table features: list every feature (implied legacy ones included once upgraded) */
  out->min_writer_version = 7;
  return fill_features(out, ar, &fs, err);
}

dk_status dk_txn__protocol_union(dk_protocol *out, dk_arena *ar, const dk_protocol *a,
                                 const dk_protocol *b, dk_error *err) {
  memset(out, 0, sizeof *out);
  out->min_reader_version = DK_MAX(a->min_reader_version, b->min_reader_version);
  out->min_writer_version = DK_MAX(a->min_writer_version, b->min_writer_version);
  if (out->min_writer_version < 7) return DK_OK;
  /* every feature either supports, legacy ones spelled out */
  feat_set fs = {.n = 0};
  const dk_protocol *both[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    const dk_protocol *p = both[k];
    for (size_t i = 0; i < DK_ARRAY_LEN(legacy); i++)
      if (dk_txn__protocol_supports(p, legacy[i].name))
        feat_add(&fs, legacy[i].name, is_rw_feature(legacy[i].name));
    if (p->min_writer_version >= 7)
      for (size_t i = 0; i < p->n_writer_features; i++)
        feat_add(&fs, p->writer_features[i], is_rw_feature(p->writer_features[i]));
  }
  return fill_features(out, ar, &fs, err);
}

/* The features protocol p supports, listed (writer version 7) or implied (legacy), into fs. */
static void feat_add_supported(feat_set *fs, const dk_protocol *p) {
  for (size_t i = 0; i < DK_ARRAY_LEN(legacy); i++)
    if (dk_txn__protocol_supports(p, legacy[i].name))
      feat_add(fs, legacy[i].name, is_rw_feature(legacy[i].name));
  if (p->min_writer_version >= 7)
    for (size_t i = 0; i < p->n_writer_features; i++)
      feat_add(fs, p->writer_features[i], is_rw_feature(p->writer_features[i]));
}

dk_status dk_txn__protocol_upgrade(dk_protocol *out, int *upgraded, dk_arena *ar,
                                   const dk_protocol *cur, const txn_meta *m,
                                   const dk_type *schema, int reader_v, int writer_v,
                                   dk_error *err) {
  *upgraded = 0;
  *out = *cur;
  feat_set want;
  int r0, w0, nf;
  DK_RETURN_NOT_OK(derive_features(&want, &r0, &w0, &nf, ar, m, schema, err));
  for (size_t i = 0; i < DK_ARRAY_LEN(legacy); i++)
    if (writer_v >= legacy[i].writer && writer_v < 7)
      feat_add(&want, legacy[i].name, is_rw_feature(legacy[i].name));
  int missing = reader_v > cur->min_reader_version || writer_v > cur->min_writer_version;
  int only_versions = 1; /* nothing beyond what the asked-for legacy versions imply */
  for (size_t i = 0; i < want.n; i++) {
    if (!dk_txn__protocol_supports(cur, want.names[i])) missing = 1;
    int implied = 0;
    for (size_t k = 0; k < DK_ARRAY_LEN(legacy); k++)
      if (!strcmp(legacy[k].name, want.names[i]) && writer_v >= legacy[k].writer) implied = 1;
    if (!implied && !dk_txn__protocol_supports(cur, want.names[i])) only_versions = 0;
  }
  if (!missing) return DK_OK;
  *upgraded = 1;
  memset(out, 0, sizeof *out);
  if (cur->min_writer_version < 7 && only_versions && writer_v < 7 && reader_v < 3) {
    /* legacy versions asked for on a legacy table stay legacy */
    out->min_reader_version = DK_MAX(cur->min_reader_version, reader_v);
    out->min_writer_version = DK_MAX(cur->min_writer_version, writer_v);
    return DK_OK;
  }
  /* table features: every feature the table had (implied ones spelled out) and the new ones */
  feat_set fs = {.n = 0};
  feat_add_supported(&fs, cur);
  for (size_t i = 0; i < want.n; i++) feat_add(&fs, want.names[i], want.rw[i]);
  int reader = DK_MAX(cur->min_reader_version, DK_MAX(reader_v, 1));
  for (size_t i = 0; i < fs.n; i++) {
    if (!strcmp(fs.names[i], "columnMapping")) reader = DK_MAX(reader, 2);
    else if (fs.rw[i]) reader = 3;
  }
  out->min_reader_version = reader;
  out->min_writer_version = 7;
  const char **w = dk__arena_alloc(ar, (fs.n + 1) * sizeof *w, err);
  const char **r = dk__arena_alloc(ar, (fs.n + 1) * sizeof *r, err);
  if (!w || !r) return DK_NOMEM;
  size_t nr = 0;
  for (size_t i = 0; i < fs.n; i++) {
    w[i] = fs.names[i];
    if (fs.rw[i] && reader >= 3) r[nr++] = fs.names[i];
  }
  out->writer_features = w;
  out->n_writer_features = fs.n;
  out->has_writer_features = 1;
  out->reader_features = r;
  out->n_reader_features = nr;
  out->has_reader_features = reader >= 3;
  return DK_OK;
}
