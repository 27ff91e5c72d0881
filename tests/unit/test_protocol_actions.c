/*
** test_protocol_actions.c — Delta actions parsed into typed structs and written back
** (src/protocol/actions.c). Oracle: every action line of every commit file of the shared
** corpus, as Delta-Spark (0.x to 4.0) and the Delta Kernel tests wrote them. Each line is
** parsed and written again; the result must be the same JSON (same members and values), and
** byte for byte the line itself unless the writer laid its fields out in another order than
** today's delta-spark (older RemoveFile put stats before deletionVector; a few writers ordered
** metaData fields differently) or escaped a character another way — those lines are counted
** and capped. Also: hand-built structs serialise as delta-spark writes them.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "codec/json/json.h"
#include "protocol/actions.h"
#include "test.h"

/* Same JSON value: objects by key whatever the order, numbers by their text. */
static bool json_equal(const dk_json_value *a, const dk_json_value *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case DK_JSON_NULL: return true;
    case DK_JSON_BOOL: return a->u.b == b->u.b;
    case DK_JSON_NUMBER: return a->len == b->len && !memcmp(a->u.num, b->u.num, a->len);
    case DK_JSON_STRING: return a->len == b->len && !memcmp(a->u.str, b->u.str, a->len);
    case DK_JSON_ARRAY:
      if (a->len != b->len) return false;
      for (uint32_t i = 0; i < a->len; i++)
        if (!json_equal(&a->u.items[i], &b->u.items[i])) return false;
      return true;
    case DK_JSON_OBJECT:
      if (a->len != b->len) return false;
      for (uint32_t i = 0; i < a->len; i++) {
        const dk_json_value *o = dk__json_getn(b, a->u.members[i].key, a->u.members[i].klen);
        if (!o || !json_equal(&a->u.members[i].value, o)) return false;
      }
      return true;
  }
  return false;
}

typedef struct tally {
  int lines, exact, reordered, bad;
  char first_bad[1024];
} tally;

static void check_line(tally *t, const char *line, size_t n, const char *file) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 16 * 1024);
  dk_json_value *v;
  dk_buf out;
  dk__buf_init(&out, NULL);
  dk_error err;
  dk_error_init(&err);
  bool ok = dk__json_parse(&v, &ar, line, n, &err) == DK_OK && v->type == DK_JSON_OBJECT &&
            v->len == 1;
  if (ok) {
    dk__action a;
    ok = dk_protocol__action_parse(&a, v->u.members[0].key, &v->u.members[0].value, &ar, &err) ==
         DK_OK;
    if (ok && a.kind == DK_ACTION_UNKNOWN) { /* nothing to write back */
      dk__buf_dispose(&out);
      dk__arena_dispose(&ar);
      return;
    }
    ok = ok && dk_protocol__action_write(&out, &a, &err) == DK_OK;
  }
  t->lines++;
  if (ok) {
    dk_json_value *w;
    ok = out.len > 0 && out.data[out.len - 1] == '\n' &&
         dk__json_parse(&w, &ar, out.data, out.len - 1, &err) == DK_OK && json_equal(v, w);
    if (ok && out.len - 1 == n && !memcmp(out.data, line, n))
      t->exact++;
    else if (ok)
      t->reordered++;
  }
  if (!ok) {
    if (!t->bad)
      snprintf(t->first_bad, sizeof t->first_bad, "%s: %.300s -> %.300s (%s)", file, line,
               out.data ? out.data : "", err.message);
    t->bad++;
  }
  dk__buf_dispose(&out);
  dk__arena_dispose(&ar);
}

static bool is_commit(const char *name) {
  size_t n = strlen(name);
  return n == 25 && !strcmp(name + 20, ".json");
}

static void walk(const char *dir, int depth, tally *t) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  bool is_log = strlen(dir) >= 10 && !strcmp(dir + strlen(dir) - 10, "_delta_log");
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb)) continue;
    if (S_ISDIR(sb.st_mode)) {
      if (depth < 5) walk(path, depth + 1, t);
    } else if (is_log && is_commit(e->d_name)) {
      FILE *f = fopen(path, "rb");
      if (!f) continue;
      char *buf = malloc((size_t)sb.st_size + 1);
      size_t got = fread(buf, 1, (size_t)sb.st_size, f);
      fclose(f);
      buf[got] = 0;
      for (char *p = buf; p < buf + got;) {
        char *nl = memchr(p, '\n', (size_t)(buf + got - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(buf + got - p);
        while (n && p[n - 1] == '\r') n--;
        if (n) check_line(t, p, n, path);
        p = nl ? nl + 1 : buf + got;
      }
      free(buf);
    }
  }
  closedir(d);
}

DK_TEST(protocol_actions__corpus_round_trip) {
  tally t;
  memset(&t, 0, sizeof t);
  walk(dk_test_data_dir(), 0, &t);
  fprintf(stderr, "  actions: %d corpus lines, %d written back byte for byte, %d as the same "
                  "JSON in another field order\n",
          t.lines, t.exact, t.reordered);
  if (t.bad) dk_test_fail(__FILE__, __LINE__, "%d lines differ; first: %s", t.bad, t.first_bad);
  CHECK_EQ_INT(t.bad, 0);
  CHECK(t.lines > 1000);
  CHECK(t.exact * 10 >= t.lines * 9); /* today's field order is nearly every writer's */
}

static const char *write1(dk_buf *b, const dk__action *a) {
  dk__buf_clear(b);
  if (dk_protocol__action_write(b, a, NULL) != DK_OK) return "<error>";
  return b->data;
}

DK_TEST(protocol_actions__written_as_delta_spark_writes) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk__action a;
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_ADD;
  dk_str pv[4] = {{"p", 1}, {"x y", 3}, {"q", 1}, {NULL, 0}};
  a.u.add = (dk__add){.path = {"p=x%20y/f.parquet", 17}, .n_pv = 2, .pv = pv, .size = 10,
                      .mtime = 5, .data_change = 1, .stats = {"{\"numRecords\":1}", 16},
                      .has_dv = 1, .dv_type = 'u', .dv_path = {"ab^-aqEH.-t@S}K{vb[*k^", 22},
                      .dv_offset = 1, .dv_size = 36, .dv_card = 2, .dv_max_row_index = -1,
                      .has_drcv = 1, .drcv = 3};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"add\":{\"path\":\"p=x%20y/f.parquet\",\"partitionValues\":{\"p\":\"x y\","
               "\"q\":null},\"size\":10,\"modificationTime\":5,\"dataChange\":true,\"stats\":"
               "\"{\\\"numRecords\\\":1}\",\"deletionVector\":{\"storageType\":\"u\","
               "\"pathOrInlineDv\":\"ab^-aqEH.-t@S}K{vb[*k^\",\"offset\":1,\"sizeInBytes\":36,"
               "\"cardinality\":2},\"defaultRowCommitVersion\":3}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_REMOVE;
  a.u.remove = (dk__remove){.path = {"f.parquet", 9}, .deletion_timestamp = 7, .data_change = 1,
                            .extended_file_metadata = 1, .has_pv = 1, .size = 10,
                            .dv_max_row_index = -1};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"remove\":{\"path\":\"f.parquet\",\"deletionTimestamp\":7,\"dataChange\":true,"
               "\"extendedFileMetadata\":true,\"partitionValues\":{},\"size\":10}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_PROTOCOL;
  const char *const rf[] = {"deletionVectors"}, *const wf[] = {"deletionVectors", "appendOnly"};
  a.u.protocol = (dk_protocol){3, 7, 1, rf, 2, wf, 1, 1};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":"
               "[\"deletionVectors\"],\"writerFeatures\":[\"deletionVectors\",\"appendOnly\"]}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_METADATA;
  const char *const keys[] = {"delta.appendOnly"}, *const vals[] = {"true"};
  const char *const pcols[] = {"p"};
  a.u.metadata = (dk_metadata){.id = "t1", .format_provider = "parquet",
                               .schema_string = "{\"type\":\"struct\",\"fields\":[]}",
                               .created_time = 1, .n_partition_columns = 1,
                               .partition_columns = pcols, .n_configuration = 1,
                               .config_keys = keys, .config_values = vals};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"metaData\":{\"id\":\"t1\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
               "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[]}\","
               "\"partitionColumns\":[\"p\"],\"configuration\":{\"delta.appendOnly\":\"true\"},"
               "\"createdTime\":1}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_TXN;
  a.u.txn = (dk__txn_action){{"app", 3}, 4, -1};
  CHECK_EQ_STR(write1(&b, &a), "{\"txn\":{\"appId\":\"app\",\"version\":4}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_DOMAIN_METADATA;
  a.u.domain = (dk__domain_action){{"delta.rowTracking", 17}, {"{\"rowIdHighWaterMark\":9}", 24}, 0};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"domainMetadata\":{\"domain\":\"delta.rowTracking\",\"configuration\":"
               "\"{\\\"rowIdHighWaterMark\\\":9}\",\"removed\":false}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_CDC;
  a.u.cdc = (dk__cdc){.path = {"_change_data/c.parquet", 22}, .size = 3};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"cdc\":{\"path\":\"_change_data/c.parquet\",\"partitionValues\":{},\"size\":3,"
               "\"dataChange\":false}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_SIDECAR;
  a.u.sidecar = (dk__sidecar){{"s.parquet", 9}, 100, 5, {NULL, 0}};
  CHECK_EQ_STR(write1(&b, &a),
               "{\"sidecar\":{\"path\":\"s.parquet\",\"sizeInBytes\":100,\"modificationTime\":5}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_CHECKPOINT_METADATA;
  a.u.checkpoint_metadata.version = 10;
  CHECK_EQ_STR(write1(&b, &a), "{\"checkpointMetadata\":{\"version\":10}}\n");
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_UNKNOWN;
  CHECK_STATUS(dk_protocol__action_write(&b, &a, NULL), DK_INVALID);
  dk__buf_dispose(&b);
}
