/*
** test_history_range.c — commit ranges hand out typed actions (src/history/history.c). Oracle:
** the commit files of every corpus table, read line by line as JSON: each range action has
** the kind, the version and the field values of its line (paths URL-decoded), in log order,
** for every field the typed views carry (add/remove/cdc, metaData, protocol, txn,
** domainMetadata, commitInfo).
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "codec/json/json.h"
#include "dk/history.h"
#include "test.h"
#include "util/util.h"

static bool same_str(const char *got, const dk_json_value *v) {
  size_t n;
  const char *s = dk__json_as_str(v, &n);
  if (!s) return got == NULL;
  return got && strlen(got) == n && !memcmp(got, s, n);
}

static bool same_i64(int64_t got, const dk_json_value *v, int64_t absent) {
  int64_t x;
  return dk__json_as_i64(v, &x) ? got == x : got == absent;
}

static int hexv(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The decoded path as the range gives it, for paths under the table (no file: URI). */
static bool same_path(const char *got, const dk_json_value *v) {
  size_t n;
  const char *s = dk__json_as_str(v, &n);
  if (!s || !got) return false;
  if (!strncmp(s, "file:", 5) || s[0] == '/') return true; /* canonicalised: not compared */
  char buf[4096];
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < sizeof buf; i++) {
    if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 && hexv(s[i + 2]) >= 0) {
      buf[k++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
      i += 2;
    } else {
      buf[k++] = s[i];
    }
  }
  buf[k] = 0;
  return !strcmp(buf, got);
}

static const char *check_file(const dk_action_file *f, const dk_json_value *b, int kind) {
  if (!f) return "no file view";
  if (!same_path(f->path, dk__json_get(b, "path"))) return "path";
  if (!same_i64(f->size, dk__json_get(b, "size"), -1)) return "size";
  if (kind == DK_ACTION_ADD && !same_i64(f->modification_time, dk__json_get(b, "modificationTime"), 0))
    return "modificationTime";
  if (kind == DK_ACTION_REMOVE &&
      !same_i64(f->deletion_timestamp, dk__json_get(b, "deletionTimestamp"), -1))
    return "deletionTimestamp";
  if (kind != DK_ACTION_CDC && !same_str(f->stats, dk__json_get(b, "stats"))) return "stats";
  const dk_json_value *pv = dk__json_get(b, "partitionValues");
  size_t npv = pv && pv->type == DK_JSON_OBJECT ? pv->len : 0;
  if (f->n_partition_values != npv) return "partitionValues count";
  for (size_t i = 0; i < npv; i++) {
    if (strcmp(f->partition_kv[2 * i], pv->u.members[i].key)) return "partition key";
    if (!same_str(f->partition_kv[2 * i + 1], &pv->u.members[i].value)) return "partition value";
  }
  bool dc;
  if (kind != DK_ACTION_CDC && dk__json_as_bool(dk__json_get(b, "dataChange"), &dc) &&
      f->data_change != dc)
    return "dataChange";
  const dk_json_value *dv = dk__json_get(b, "deletionVector");
  if ((dv && dv->type == DK_JSON_OBJECT) != (f->dv != NULL)) return "deletionVector presence";
  if (f->dv) {
    if (!same_str(f->dv->path_or_inline_dv, dk__json_get(dv, "pathOrInlineDv"))) return "dv path";
    if (!same_i64(f->dv->cardinality, dk__json_get(dv, "cardinality"), 0)) return "dv cardinality";
  }
  if (!same_i64(f->has_default_row_commit_version ? f->default_row_commit_version : -7,
                dk__json_get(b, "defaultRowCommitVersion"), -7))
    return "defaultRowCommitVersion";
  return NULL;
}

static const char *check_action(const dk_action *a, const char *key, const dk_json_value *b,
                                int64_t v) {
  if (a->version != v) return "version";
  if (!strcmp(key, "add") || !strcmp(key, "remove") || !strcmp(key, "cdc")) {
    int kind = key[0] == 'a' ? DK_ACTION_ADD : key[0] == 'r' ? DK_ACTION_REMOVE : DK_ACTION_CDC;
    if ((int)a->kind != kind) return "kind";
    if (a->path != a->file->path) return "path alias";
    return check_file(a->file, b, kind);
  }
  if (!strcmp(key, "metaData")) {
    if (a->kind != DK_ACTION_METADATA || !a->metadata) return "kind";
    if (!same_str(a->metadata->id, dk__json_get(b, "id"))) return "id";
    if (!same_str(a->metadata->schema_string, dk__json_get(b, "schemaString"))) return "schema";
    const dk_json_value *pc = dk__json_get(b, "partitionColumns");
    if (pc && pc->type == DK_JSON_ARRAY && a->metadata->n_partition_columns != pc->len)
      return "partitionColumns";
    return NULL;
  }
  if (!strcmp(key, "protocol")) {
    if (a->kind != DK_ACTION_PROTOCOL || !a->protocol) return "kind";
    if (!same_i64(a->protocol->min_reader_version, dk__json_get(b, "minReaderVersion"), -1))
      return "minReaderVersion";
    const dk_json_value *rf = dk__json_get(b, "readerFeatures");
    if ((rf && rf->type == DK_JSON_ARRAY) != (a->protocol->has_reader_features != 0))
      return "readerFeatures";
    return NULL;
  }
  if (!strcmp(key, "txn")) {
    if (a->kind != DK_ACTION_TXN || !a->txn) return "kind";
    if (!same_str(a->txn->app_id, dk__json_get(b, "appId"))) return "appId";
    if (!same_i64(a->txn->version, dk__json_get(b, "version"), -1)) return "txn version";
    return NULL;
  }
  if (!strcmp(key, "domainMetadata")) {
    if (a->kind != DK_ACTION_DOMAIN_METADATA || !a->domain) return "kind";
    if (!same_str(a->domain->domain, dk__json_get(b, "domain"))) return "domain";
    return NULL;
  }
  if (!strcmp(key, "commitInfo")) {
    if (a->kind != DK_ACTION_COMMIT_INFO || !a->commit_info) return "kind";
    if (!same_i64(a->commit_info->timestamp, dk__json_get(b, "timestamp"), -1)) return "timestamp";
    if (!same_str(a->commit_info->operation, dk__json_get(b, "operation"))) return "operation";
    if (!a->commit_info->json || a->commit_info->json[0] != '{') return "json";
    return NULL;
  }
  return a->kind == DK_ACTION_UNKNOWN || a->kind == DK_ACTION_CHECKPOINT_METADATA ||
                 a->kind == DK_ACTION_SIDECAR
             ? NULL
             : "kind of an unknown action";
}

typedef struct tally {
  int tables, actions, bad;
  char first[1024];
} tally;

/* Compares the range over every commit of table `dir` with its commit files. */
static void check_table(tally *t, const char *dir) {
  dk_table *tb;
  if (dk_table_open(&tb, dir, NULL, NULL) != DK_OK) return;
  int64_t lo = -1, hi = -1;
  char log[4200];
  snprintf(log, sizeof log, "%s/_delta_log", dir);
  DIR *d = opendir(log);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strlen(e->d_name) != 25 || strcmp(e->d_name + 20, ".json")) continue;
    int64_t v = strtoll(e->d_name, NULL, 10);
    if (lo < 0 || v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (d) closedir(d);
  dk_commit_range *r = NULL;
  dk_error err;
  dk_error_init(&err);
  if (lo < 0 || dk_commit_range_open(&r, tb, lo, hi, &err) != DK_OK) { /* gaps: skip */
    dk_table_free(tb);
    return;
  }
  t->tables++;
  size_t k = 0;
  for (int64_t v = lo; v <= hi; v++) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%020lld.json", log, (long long)v);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
      dk_arena ar;
      dk__arena_init(&ar, NULL, 16 * 1024);
      dk_json_value *j;
      if (dk__json_parse(&j, &ar, line, (size_t)n, NULL) == DK_OK && j->type == DK_JSON_OBJECT) {
        for (uint32_t i = 0; i < j->len; i++) {
          if (j->u.members[i].value.type != DK_JSON_OBJECT) continue;
          const dk_action *a = dk_commit_range_action(r, k++);
          const char *why = a ? check_action(a, j->u.members[i].key, &j->u.members[i].value, v)
                              : "missing";
          t->actions++;
          if (why && !t->bad++)
            snprintf(t->first, sizeof t->first, "%s v%lld %s: %s", dir, (long long)v,
                     j->u.members[i].key, why);
        }
      }
      dk__arena_dispose(&ar);
    }
    free(line);
    fclose(f);
  }
  if (k != dk_commit_range_count(r) && !t->bad++)
    snprintf(t->first, sizeof t->first, "%s: %zu actions in the range, %zu in the files", dir,
             dk_commit_range_count(r), k);
  dk_commit_range_free(r);
  dk_table_free(tb);
}

static void walk(const char *dir, int depth, tally *t) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) || !S_ISDIR(sb.st_mode)) continue;
    if (!strcmp(e->d_name, "_delta_log")) check_table(t, dir);
    else if (depth < 4) walk(path, depth + 1, t);
  }
  closedir(d);
}

DK_TEST(history_range__typed_actions_match_the_commits) {
  tally t;
  memset(&t, 0, sizeof t);
  walk(dk_test_data_dir(), 0, &t);
  fprintf(stderr, "  commit ranges: %d tables, %d actions compared with their lines\n", t.tables,
          t.actions);
  if (t.bad) dk_test_fail(__FILE__, __LINE__, "%d mismatches; first: %s", t.bad, t.first);
  CHECK_EQ_INT(t.bad, 0);
  CHECK(t.tables > 50 && t.actions > 1000);
}
