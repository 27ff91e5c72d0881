/*
** write_actions.c — test tool: writes a small Delta table's log entirely with dk's action
** serializer (src/protocol/actions.c), for tests/python/test_protocol_actions.py to read back
** with delta-rs, pyarrow's JSON reader and dk. Usage: dk_test_write_actions TABLE_DIR
**
** v0: commitInfo, protocol 1/2, metaData (id long, p string, partitioned by p), two adds
**     (p=a with stats and tags; p=null);
** v1: commitInfo, remove of the p=a file with extended metadata, an add whose path needs
**     URL-encoding ("p=b c/f 2.parquet"), a txn;
** v2: commitInfo, protocol 3/7 with deletionVectors and domainMetadata, a domainMetadata, and
**     an add replacing the p=null file with a deletion vector (remove + add of the same path).
*/
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "protocol/actions.h"

static dk_str S(const char *s) {
  dk_str v = {s, s ? strlen(s) : 0};
  return v;
}

static int put(const char *dir, int v, const dk_buf *b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/_delta_log/%020d.json", dir, v);
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  fwrite(b->data, 1, b->len, f);
  return fclose(f) != 0;
}

static int emit(dk_buf *b, const dk__action *a) {
  dk_error err;
  dk_error_init(&err);
  if (dk_protocol__action_write(b, a, &err) != DK_OK) {
    fprintf(stderr, "write_actions: %s\n", err.message);
    return 1;
  }
  return 0;
}

static dk__action commit_info(const char *json) {
  dk__action a;
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_COMMIT_INFO;
  a.u.commit_info.json = S(json);
  return a;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TABLE_DIR\n", argv[0]);
    return 2;
  }
  char log[4096];
  snprintf(log, sizeof log, "%s/_delta_log", argv[1]);
  mkdir(argv[1], 0755);
  mkdir(log, 0755);
  dk_buf b;
  dk__buf_init(&b, NULL);
  int rc = 0;
  dk__action a;

  /* v0 */
  a = commit_info("{\"timestamp\":1700000000000,\"operation\":\"WRITE\",\"operationParameters\":"
                  "{\"mode\":\"Append\",\"partitionBy\":\"[\\\"p\\\"]\"},\"isBlindAppend\":true}");
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_PROTOCOL;
  a.u.protocol.min_reader_version = 1;
  a.u.protocol.min_writer_version = 2;
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_METADATA;
  static const char *const pcols[] = {"p"};
  a.u.metadata = (dk_metadata){
      .id = "5a6c2b3e-0000-4000-8000-000000000001",
      .format_provider = "parquet",
      .schema_string = "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\","
                       "\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\","
                       "\"nullable\":true,\"metadata\":{}}]}",
      .n_partition_columns = 1,
      .partition_columns = pcols,
      .created_time = 1700000000000};
  rc |= emit(&b, &a);
  dk_str pv_a[2] = {S("p"), S("a")}, pv_null[2] = {S("p"), {NULL, 0}};
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_ADD;
  a.u.add = (dk__add){.path = S("p=a/part-0.parquet"), .n_pv = 1, .pv = pv_a, .size = 100,
                      .mtime = 1700000000001, .data_change = 1,
                      .stats = S("{\"numRecords\":3,\"minValues\":{\"id\":1},\"maxValues\":"
                                 "{\"id\":3},\"nullCount\":{\"id\":0}}"),
                      .tags_json = S("{\"INSERTION_TIME\":\"1700000000001000\"}"),
                      .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  a.u.add = (dk__add){.path = S("p=__HIVE_DEFAULT_PARTITION__/part-1.parquet"), .n_pv = 1,
                      .pv = pv_null, .size = 200, .mtime = 1700000000002, .data_change = 1,
                      .stats = S("{\"numRecords\":5}"), .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  rc |= put(argv[1], 0, &b);

  /* v1 */
  dk__buf_clear(&b);
  a = commit_info("{\"timestamp\":1700000001000,\"operation\":\"DELETE\",\"operationParameters\":"
                  "{\"predicate\":\"[\\\"(p = 'a')\\\"]\"}}");
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_REMOVE;
  a.u.remove = (dk__remove){.path = S("p=a/part-0.parquet"), .deletion_timestamp = 1700000001000,
                            .data_change = 1, .extended_file_metadata = 1, .has_pv = 1,
                            .n_pv = 1, .pv = pv_a, .size = 100,
                            .stats = S("{\"numRecords\":3}"), .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  dk_str pv_b[2] = {S("p"), S("b c")};
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_ADD;
  a.u.add = (dk__add){.path = S("p=b%20c/f%202.parquet"), .n_pv = 1, .pv = pv_b, .size = 300,
                      .mtime = 1700000001001, .data_change = 1, .stats = S("{\"numRecords\":7}"),
                      .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_TXN;
  a.u.txn = (dk__txn_action){S("stream-1"), 42, 1700000001000};
  rc |= emit(&b, &a);
  rc |= put(argv[1], 1, &b);

  /* v2 */
  dk__buf_clear(&b);
  a = commit_info("{\"timestamp\":1700000002000,\"operation\":\"DELETE\"}");
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_PROTOCOL;
  static const char *const rf[] = {"deletionVectors"};
  static const char *const wf[] = {"deletionVectors", "domainMetadata"};
  a.u.protocol = (dk_protocol){3, 7, 1, rf, 2, wf, 1, 1};
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_DOMAIN_METADATA;
  a.u.domain = (dk__domain_action){S("dk.test"), S("{\"k\":1}"), 0};
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_REMOVE;
  a.u.remove = (dk__remove){.path = S("p=__HIVE_DEFAULT_PARTITION__/part-1.parquet"),
                            .deletion_timestamp = 1700000002000, .data_change = 1,
                            .extended_file_metadata = 1, .has_pv = 1, .n_pv = 1, .pv = pv_null,
                            .size = 200, .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  memset(&a, 0, sizeof a);
  a.kind = DK_ACTION_ADD;
  a.u.add = (dk__add){.path = S("p=__HIVE_DEFAULT_PARTITION__/part-1.parquet"), .n_pv = 1,
                      .pv = pv_null, .size = 200, .mtime = 1700000000002, .data_change = 1,
                      .stats = S("{\"numRecords\":5}"), .has_dv = 1, .dv_type = 'u',
                      .dv_path = S("ab^-aqEH.-t@S}K{vb[*k^"), .dv_offset = 1, .dv_size = 36,
                      .dv_card = 2, .dv_max_row_index = -1};
  rc |= emit(&b, &a);
  rc |= put(argv[1], 2, &b);
  dk__buf_dispose(&b);
  return rc;
}
