/*
** offset.c — stream offsets as Delta's DeltaSourceOffset JSON (delta-spark
** sources/DeltaSourceOffset.scala; ../shared/reference/spark-v2-connector-spec.md §7.3), so a
** dk stream resumes from its own saved offsets or from a Spark streaming checkpoint of the
** same table, and Spark from dk's.
**
** Serialized form: {"sourceVersion":S,"reservoirId":ID,"reservoirVersion":V,"index":I,
** "isStartingVersion":B}. In memory the index before a commit's first file is BASE (-100);
** it is written as -1 with sourceVersion 1 (what older readers expect) and read back from -1
** when sourceVersion < 3. The metadata-change indexes (-20, -19) force sourceVersion 3.
** sourceVersion 2 is reserved and rejected, as are versions newer than 3, the END index
** (never serialized) and -1 under sourceVersion 3 (Spark asserts against it).
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codec/json/json.h"
#include "dk/changes.h"
#include "util/util.h"

#define SOURCE_VERSION_CURRENT 3
#define INDEX_BASE_V1 (-1)
#define INDEX_END (INT64_MAX - 100)

static int is_metadata_index(int64_t i) {
  return i == DK_STREAM_INDEX_METADATA_CHANGE || i == DK_STREAM_INDEX_POST_METADATA_CHANGE;
}

/* Appends s JSON-escaped; returns the length it needs. */
static size_t put_json_str(char *buf, size_t cap, size_t at, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = at;
#define PUT(c)                        \
  do {                                \
    if (n + 1 < cap) buf[n] = (c);    \
    n++;                              \
  } while (0)
  PUT('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      PUT('\\');
      PUT((char)*p);
    } else if (*p < 0x20) {
      PUT('\\');
      PUT('u');
      PUT('0');
      PUT('0');
      PUT(hex[*p >> 4]);
      PUT(hex[*p & 15]);
    } else {
      PUT((char)*p);
    }
  }
  PUT('"');
#undef PUT
  return n - at;
}

size_t dk_stream_offset_json(char *buf, size_t cap, const dk_stream_offset *o,
                             const char *table_id) {
  int64_t index = o->index == DK_STREAM_INDEX_BASE ? INDEX_BASE_V1 : o->index;
  int sv = is_metadata_index(o->index) ? 3 : 1;
  int k = snprintf(buf, cap, "{\"sourceVersion\":%d,\"reservoirId\":", sv);
  size_t n = k > 0 ? (size_t)k : 0;
  n += put_json_str(buf, cap, n, table_id ? table_id : "");
  char tail[160];
  int t = snprintf(tail, sizeof tail,
                   ",\"reservoirVersion\":%" PRId64 ",\"index\":%" PRId64
                   ",\"isStartingVersion\":%s}",
                   o->version, index, o->is_initial_snapshot ? "true" : "false");
  if (n < cap) snprintf(buf + n, cap - n, "%s", tail);
  n += (size_t)t;
  if (cap) buf[n < cap ? n : cap - 1] = 0;
  return n;
}

static dk_status want_i64(int64_t *out, const dk_json_value *obj, const char *key,
                          dk_error *err) {
  const dk_json_value *v = dk__json_get(obj, key);
  if (!v || !dk__json_as_i64(v, out))
    return dk__error_set(err, DK_INVALID,
                         "invalid stream offset: \"%s\" is %s (expected an integer)", key,
                         v ? "not an integer" : "missing");
  return DK_OK;
}

dk_status dk_stream_offset_parse(dk_stream_offset *out, const char *json, size_t len,
                                 const char *table_id, dk_error *err) {
  memset(out, 0, sizeof *out);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1024);
  dk_json_value *root = NULL;
  dk_status st = dk__json_parse(&root, &ar, json, len, err);
  if (st != DK_OK) {
    if (st != DK_NOMEM) {
      dk__error_prefix(err, "invalid stream offset (not JSON)");
      if (err) err->code = DK_INVALID;
      st = DK_INVALID;
    }
    goto done;
  }
  if (root->type != DK_JSON_OBJECT) {
    st = dk__error_set(err, DK_INVALID, "invalid stream offset: not a JSON object");
    goto done;
  }
  int64_t sv, version, index;
  if ((st = want_i64(&sv, root, "sourceVersion", err)) != DK_OK) goto done;
  if (sv < 1 || sv == 2 || sv > SOURCE_VERSION_CURRENT) {
    st = dk__error_set(err, DK_INVALID,
                       "invalid stream offset: sourceVersion %" PRId64
                       " (dk reads 1 and 3; 2 is reserved)",
                       sv);
    goto done;
  }
  if ((st = want_i64(&version, root, "reservoirVersion", err)) != DK_OK) goto done;
  if ((st = want_i64(&index, root, "index", err)) != DK_OK) goto done;
  const dk_json_value *id = dk__json_get(root, "reservoirId");
  const dk_json_value *init = dk__json_get(root, "isStartingVersion");
  bool is_init = false;
  if (!id || id->type != DK_JSON_STRING) {
    st = dk__error_set(err, DK_INVALID, "invalid stream offset: \"reservoirId\" is %s",
                       id ? "not a string" : "missing");
    goto done;
  }
  if (init && !dk__json_is_null(init) && !dk__json_as_bool(init, &is_init)) {
    st = dk__error_set(err, DK_INVALID,
                       "invalid stream offset: \"isStartingVersion\" is not a boolean");
    goto done;
  }
  if (version < 0) {
    st = dk__error_set(err, DK_INVALID,
                       "invalid stream offset: reservoirVersion %" PRId64 " is negative",
                       version);
    goto done;
  }
  if (sv < 3 && index == INDEX_BASE_V1) index = DK_STREAM_INDEX_BASE;
  if (index == INDEX_END || index == INDEX_BASE_V1 ||
      (index < 0 && index != DK_STREAM_INDEX_BASE && !is_metadata_index(index)) ||
      (is_metadata_index(index) && sv < 3)) {
    st = dk__error_set(err, DK_INVALID,
                       "invalid stream offset: index %" PRId64 " under sourceVersion %" PRId64,
                       index, sv);
    goto done;
  }
  if (table_id && strcmp(dk__json_as_str(id, NULL), table_id) != 0) {
    st = dk__error_set(err, DK_INVALID,
                       "the stream offset belongs to table %s, not to this table (%s): "
                       "a checkpoint of another table (DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_"
                       "SOURCE)",
                       dk__json_as_str(id, NULL), table_id);
    goto done;
  }
  out->version = version;
  out->index = index;
  out->is_initial_snapshot = is_init;
done:
  dk__arena_dispose(&ar);
  return st;
}

int dk_stream_offset_compare(const dk_stream_offset *a, const dk_stream_offset *b) {
  if (a->version != b->version) return a->version < b->version ? -1 : 1;
  if (a->index != b->index) return a->index < b->index ? -1 : 1;
  return 0;
}
