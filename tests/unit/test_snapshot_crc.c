/* test_snapshot_crc.c — metadata-only snapshots built from the Spark-written version checksum
** files (N.crc) of the golden tables must agree with a full log replay of the same version:
** protocol, metadata, schema, file count and bytes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

static int same_protocol(const dk_protocol *a, const dk_protocol *b) {
  if (a->min_reader_version != b->min_reader_version ||
      a->min_writer_version != b->min_writer_version ||
      a->n_reader_features != b->n_reader_features || a->n_writer_features != b->n_writer_features)
    return 0;
  for (size_t i = 0; i < a->n_writer_features; i++)
    if (strcmp(a->writer_features[i], b->writer_features[i])) return 0;
  for (size_t i = 0; i < a->n_reader_features; i++)
    if (strcmp(a->reader_features[i], b->reader_features[i])) return 0;
  return 1;
}

static int check_version(const char *root, int64_t v) {
  dk_error err = {0};
  dk_table *t;
  if (dk_table_open(&t, root, NULL, &err) != DK_OK) return 1;
  dk_snapshot *full = NULL, *crc = NULL;
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, v, 0, 0, 0};
  int bad = 0;
  if (dk_snapshot_open(&full, t, &o, &err) != DK_OK) {
    fprintf(stderr, "  %s@%lld: %s\n", root, (long long)v, err.message);
    bad = 1;
  }
  o.metadata_only = 1;
  if (!bad && dk_snapshot_open(&crc, t, &o, &err) != DK_OK) {
    fprintf(stderr, "  %s@%lld crc: %s\n", root, (long long)v, err.message);
    bad = 1;
  }
  if (!bad) {
    const dk_metadata *a = dk_snapshot_metadata(full), *b = dk_snapshot_metadata(crc);
    if (dk_snapshot_has_file_list(crc)) bad |= 2; /* the .crc must have been used */
    if (!same_protocol(dk_snapshot_protocol(full), dk_snapshot_protocol(crc))) bad |= 4;
    if (strcmp(a->id, b->id) || strcmp(a->schema_string, b->schema_string) ||
        a->n_partition_columns != b->n_partition_columns ||
        a->n_configuration != b->n_configuration)
      bad |= 8;
    if (dk_snapshot_num_files(full) != dk_snapshot_num_files(crc)) bad |= 16;
    if (dk_snapshot_total_bytes(full) != dk_snapshot_total_bytes(crc)) bad |= 32;
    if (dk_snapshot_version(full) != dk_snapshot_version(crc)) bad |= 64;
    dk_file_entry f;
    if (dk_snapshot_file(&f, crc, 0, &err) == DK_OK) bad |= 128;
    if (bad)
      fprintf(stderr, "  %s@%lld: crc snapshot differs (mask %d; files %lld vs %lld)\n", root,
              (long long)v, bad, (long long)dk_snapshot_num_files(full),
              (long long)dk_snapshot_num_files(crc));
  }
  dk_snapshot_free(full);
  dk_snapshot_free(crc);
  dk_table_free(t);
  return bad;
}

DK_TEST(snapshot__crc_metadata_only_matches_replay) {
  const char *tables[] = {"delta-golden/commit-info-containing-arbitrary-operationParams-types",
                          "delta-golden/collations-preview-table", "delta-golden/collations-table",
                          "delta-golden/kernel-timestamp-partition-col-ISO8601",
                          "delta-kernel-defaults/spark-shredded-variant-preview-delta"};
  int checked = 0, failures = 0;
  for (size_t i = 0; i < DK_ARRAY_LEN(tables); i++) {
    char root[4096], log[4200];
    snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), tables[i]);
    snprintf(log, sizeof log, "%s/_delta_log", root);
    DIR *d = opendir(log);
    CHECK(d != NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t n = strlen(e->d_name);
      if (n != 24 || strcmp(e->d_name + 20, ".crc")) continue;
      failures += check_version(root, atoll(e->d_name)) != 0;
      checked++;
    }
    closedir(d);
  }
  fprintf(stderr, "  %d checksum files compared with full replays\n", checked);
  CHECK(checked >= 9);
  CHECK_EQ_INT(failures, 0);
}
