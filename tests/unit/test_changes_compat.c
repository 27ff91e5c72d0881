/*
** test_changes_compat.c — read compatibility of schemas (src/changes/compat.c) against the
** cases of delta-spark's SchemaUtilsSuite ("Read Compatibility Checks": a field dropped,
** added nullable / non-nullable, renamed by case, its nullability tightened or relaxed under
** both settings of forbidTightenNullability, its type changed among int / string / struct /
** array / map — at the top level, in a nested struct, inside an array, a map key and a map
** value) and of DeltaColumnMapping.hasNoColumnMappingSchemaChanges (a physical column dropped
** or renamed, nested too; an upgrade to column mapping compares logical names; a downgrade
** is a change; partition columns must stay).
*/
#include <stdio.h>
#include <string.h>

#include "changes/changes_int.h"
#include "protocol/schema.h"
#include "test.h"

/* The places a struct can appear: the JSON before and after the struct's. */
static const char *const PLACES[][2] = {
    {"", ""},
    {"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":",
     ",\"nullable\":true,\"metadata\":{}}]}"},
    {"{\"type\":\"struct\",\"fields\":[{\"name\":\"array\",\"type\":{\"type\":\"array\","
     "\"elementType\":",
     ",\"containsNull\":true},\"nullable\":true,\"metadata\":{}}]}"},
    {"{\"type\":\"struct\",\"fields\":[{\"name\":\"map\",\"type\":{\"type\":\"map\",\"keyType\":",
     ",\"valueType\":\"string\",\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{}}]}"},
    {"{\"type\":\"struct\",\"fields\":[{\"name\":\"map\",\"type\":{\"type\":\"map\","
     "\"keyType\":\"string\",\"valueType\":",
     ",\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{}}]}"}};

/* The struct of a place: field "b" (int), plus `extra` (a field JSON) when not NULL. */
static const dk_type *schema_of(dk_arena *ar, int place, const char *extra) {
  char inner[1024], outer[2048];
  snprintf(inner, sizeof inner,
           "{\"type\":\"struct\",\"fields\":[{\"name\":\"b\",\"type\":\"integer\","
           "\"nullable\":true,\"metadata\":{}}%s%s]}",
           extra ? "," : "", extra ? extra : "");
  snprintf(outer, sizeof outer, "%s%s%s", PLACES[place][0], inner, PLACES[place][1]);
  const dk_type *t = NULL;
  dk_error err;
  dk_error_init(&err);
  if (dk_schema__parse(&t, ar, outer, strlen(outer), &err) != DK_OK) return NULL;
  return t;
}

static const char *field(char *buf, size_t cap, const char *name, const char *type, int nullable) {
  snprintf(buf, cap, "{\"name\":\"%s\",\"type\":%s,\"nullable\":%s,\"metadata\":{}}", name, type,
           nullable ? "true" : "false");
  return buf;
}

DK_TEST(changes__read_compatibility_as_spark) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  static const char *const types[] = {
      "\"integer\"", "\"string\"",
      "{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"string\",\"nullable\":true,"
      "\"metadata\":{}}]}",
      "{\"type\":\"array\",\"elementType\":\"integer\",\"containsNull\":true}",
      "{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"float\",\"valueContainsNull\":true}"};
  int checked = 0;
  for (int place = 0; place < 5; place++) {
    char f1[512], f2[512];
    const dk_type *without = schema_of(&ar, place, NULL);
    const dk_type *nullable = schema_of(&ar, place, field(f1, sizeof f1, "extra", "\"string\"", 1));
    const dk_type *nonnull = schema_of(&ar, place, field(f2, sizeof f2, "extra", "\"string\"", 0));
    const dk_type *mixed = schema_of(&ar, place, field(f1, sizeof f1, "eXtRa", "\"string\"", 1));
    CHECK(without && nullable && nonnull && mixed);
    /* dropping a field fails; adding one (nullable or not) does not; a case variation fails */
    CHECK(!dk_changes__read_compatible(nullable, without, false));
    CHECK(dk_changes__read_compatible(without, nullable, false));
    CHECK(dk_changes__read_compatible(without, nonnull, false));
    CHECK(!dk_changes__read_compatible(nullable, mixed, false));
    /* nullability: forbid_tighten blocks nullable -> non-null, else non-null -> nullable */
    CHECK(!dk_changes__read_compatible(nullable, nonnull, true));
    CHECK(dk_changes__read_compatible(nonnull, nullable, true));
    CHECK(!dk_changes__read_compatible(nonnull, nullable, false));
    CHECK(dk_changes__read_compatible(nullable, nonnull, false));
    /* any change of type fails */
    for (int a = 0; a < 5; a++)
      for (int b = 0; b < 5; b++) {
        if (a == b) continue;
        const dk_type *sa = schema_of(&ar, place, field(f1, sizeof f1, "extra", types[a], 1));
        const dk_type *sb = schema_of(&ar, place, field(f2, sizeof f2, "extra", types[b], 1));
        CHECK(sa && sb);
        CHECK(!dk_changes__read_compatible(sa, sb, false));
        CHECK(dk_changes__read_compatible(sa, sa, false));
        checked++;
      }
  }
  CHECK_EQ_INT(checked, 100);
  dk__arena_dispose(&ar);
}

/* A metaData action with a schema of fields (name, physical name) and partition columns. */
typedef struct meta_fixture {
  dk_metadata md;
  const char *keys[2], *vals[2];
  char schema[2048];
  dk_changes__meta m;
} meta_fixture;

static void make_meta(meta_fixture *f, dk_arena *ar, const char *mode, const char *const *names,
                      const char *const *phys, int n, const char *const *parts, size_t np) {
  memset(f, 0, sizeof *f);
  size_t o = (size_t)snprintf(f->schema, sizeof f->schema, "{\"type\":\"struct\",\"fields\":[");
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(f->schema + o, sizeof f->schema - o,
                          "%s{\"name\":\"%s\",\"type\":\"integer\",\"nullable\":true,"
                          "\"metadata\":{\"delta.columnMapping.id\":%d,"
                          "\"delta.columnMapping.physicalName\":\"%s\"}}",
                          i ? "," : "", names[i], i + 1, phys ? phys[i] : names[i]);
  snprintf(f->schema + o, sizeof f->schema - o, "]}");
  f->md.id = "t";
  f->md.schema_string = f->schema;
  f->keys[0] = "delta.columnMapping.mode";
  f->vals[0] = mode;
  f->md.config_keys = f->keys;
  f->md.config_values = f->vals;
  f->md.n_configuration = 1;
  f->md.partition_columns = parts;
  f->md.n_partition_columns = np;
  dk_error err;
  dk_error_init(&err);
  if (dk_changes__meta_of(&f->m, &f->md, ar, &err) != DK_OK) f->m.schema = NULL;
}

static bool no_changes(const meta_fixture *newer, const meta_fixture *older) {
  bool ok = false;
  dk_error err;
  dk_error_init(&err);
  if (dk_changes__no_cm_schema_changes(&ok, &newer->m, &older->m, NULL, &err) != DK_OK)
    return false;
  return ok;
}

DK_TEST(changes__column_mapping_schema_changes_as_spark) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  static const char *const n3[] = {"id", "a", "b"}, *const p3[] = {"col-1", "col-2", "col-3"};
  static const char *const n_add[] = {"id", "a", "b", "c"},
                           *const p_add[] = {"col-1", "col-2", "col-3", "col-4"};
  static const char *const n_ren[] = {"id", "a2", "b"};
  static const char *const n_drop[] = {"id", "a"}, *const p_drop[] = {"col-1", "col-2"};
  static const char *const part_a[] = {"a"};
  meta_fixture base, add, ren, drop, plain, plain_ren, repart;
  make_meta(&base, &ar, "name", n3, p3, 3, NULL, 0);
  make_meta(&add, &ar, "name", n_add, p_add, 4, NULL, 0);
  make_meta(&ren, &ar, "name", n_ren, p3, 3, NULL, 0);
  make_meta(&drop, &ar, "name", n_drop, p_drop, 2, NULL, 0);
  make_meta(&plain, &ar, "none", n3, NULL, 3, NULL, 0);
  make_meta(&plain_ren, &ar, "none", n_ren, NULL, 3, NULL, 0);
  make_meta(&repart, &ar, "name", n3, p3, 3, part_a, 1);
  CHECK(base.m.schema && add.m.schema && ren.m.schema && drop.m.schema && plain.m.schema &&
        plain_ren.m.schema && repart.m.schema);
  CHECK(base.m.mode == DK_COLUMN_MAPPING_NAME && plain.m.mode == DK_COLUMN_MAPPING_NONE);
  CHECK(no_changes(&add, &base));    /* ADD COLUMN */
  CHECK(!no_changes(&base, &add));   /* the other way round it is a DROP */
  CHECK(!no_changes(&ren, &base));   /* RENAME: one physical name, another logical one */
  CHECK(!no_changes(&drop, &base));  /* DROP COLUMN */
  CHECK(!no_changes(&repart, &base)); /* partition columns changed */
  /* an upgrade in between: the old table's physical names are its logical ones */
  meta_fixture up;
  make_meta(&up, &ar, "name", n3, NULL, 3, NULL, 0);
  CHECK(no_changes(&up, &plain));
  CHECK(!no_changes(&up, &plain_ren));
  CHECK(!no_changes(&plain, &base)); /* a downgrade */
  CHECK(no_changes(&plain_ren, &plain)); /* neither under column mapping: none */
  dk__arena_dispose(&ar);
}
