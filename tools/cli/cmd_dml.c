/*
** cmd_dml.c — the row-level DML commands of the dk tool (include/dk/dml.h):
**   dk delete TABLE [--where EXPR] [--no-deletion-vectors] [--json]
**   dk update TABLE --set "col = EXPR" [--set ...] [--where EXPR] [--no-deletion-vectors] [--json]
** One commit each (none when no row matches); a summary line, or the metrics as JSON.
** Exit 4 on a commit conflict.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dk/dml.h"
#include "dk/table.h"

static int dml_fail(const char *cmd, const dk_error *err) {
  fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err->code), err->message);
  return err->code == DK_CONFLICT ? 4 : 1;
}

static void print_metrics(const dk_dml_metrics *m, const dk_commit_result *r) {
  printf("{\"version\":%lld,\"num_deleted_rows\":%lld,\"num_updated_rows\":%lld,"
         "\"num_inserted_rows\":%lld,\"num_copied_rows\":%lld,\"num_added_files\":%lld,"
         "\"num_removed_files\":%lld,\"num_deletion_vectors_added\":%lld,"
         "\"num_deletion_vectors_removed\":%lld,\"num_deletion_vectors_updated\":%lld,"
         "\"num_added_change_files\":%lld,\"num_files_after_skipping\":%lld,"
         "\"num_dv_files\":%lld,\"dv_bytes\":%lld,\"num_added_bytes\":%lld,"
         "\"execution_time_ms\":%lld}\n",
         (long long)r->committed_version, (long long)m->num_deleted_rows,
         (long long)m->num_updated_rows, (long long)m->num_inserted_rows,
         (long long)m->num_copied_rows, (long long)m->num_added_files,
         (long long)m->num_removed_files, (long long)m->num_deletion_vectors_added,
         (long long)m->num_deletion_vectors_removed, (long long)m->num_deletion_vectors_updated,
         (long long)m->num_added_change_files, (long long)m->num_files_after_skipping,
         (long long)m->num_dv_files, (long long)m->dv_bytes, (long long)m->num_added_bytes,
         (long long)m->execution_time_ms);
}

int dk_cli_delete(int argc, char **argv) {
  const char *uri = NULL, *where = NULL;
  int json = 0, no_dv = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--where") && i + 1 < argc) where = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--no-deletion-vectors")) no_dv = 1;
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else return dk_cli_usage("delete");
  }
  if (!uri) return dk_cli_usage("delete");
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_dml_options o = {.version = DK_DML_OPTIONS_VERSION,
                      .deletion_vectors = no_dv ? DK_DML_DV_NEVER : DK_DML_DV_TABLE};
  dk_dml_metrics m = {.version = DK_DML_METRICS_VERSION};
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  int rc = 0;
  if (dk_cli_table_open(uri, &t, &err) != DK_OK ||
      dk_table_delete(&m, &r, t, where, &o, NULL, &err) != DK_OK)
    rc = dml_fail("delete", &err);
  else if (json)
    print_metrics(&m, &r);
  else if (r.committed_version < 0)
    printf("%s: no row matched, nothing committed\n", uri);
  else
    printf("%s: deleted %lld rows as version %lld (%lld deletion vectors, %lld files removed, "
           "%lld files added)\n",
           uri, (long long)m.num_deleted_rows, (long long)r.committed_version,
           (long long)(m.num_deletion_vectors_added + m.num_deletion_vectors_updated),
           (long long)m.num_removed_files, (long long)m.num_added_files);
  dk_table_free(t);
  return rc;
}

/* "col = expr" (the column may be `quoted`) into name and value text, in buf. */
static int split_set(char *buf, const char **col, const char **val) {
  char *p = buf;
  while (*p == ' ') p++;
  char *eq;
  if (*p == '`') {
    char *end = strchr(p + 1, '`');
    if (!end) return -1;
    *end = 0;
    *col = p + 1;
    eq = strchr(end + 1, '=');
  } else {
    eq = strchr(p, '=');
    if (!eq) return -1;
    char *e = eq;
    while (e > p && e[-1] == ' ') e--;
    *e = 0;
    *col = p;
  }
  if (!eq || !**col) return -1;
  *val = eq + 1;
  return 0;
}

int dk_cli_update(int argc, char **argv) {
  const char *uri = NULL, *where = NULL;
  int json = 0, no_dv = 0, rc = 0;
  size_t n = 0;
  const char **set = calloc((size_t)argc + 1, 2 * sizeof *set);
  char **bufs = calloc((size_t)argc + 1, sizeof *bufs);
  if (!set || !bufs) {
    free(set);
    free(bufs);
    fprintf(stderr, "dk update: out of memory\n");
    return 1;
  }
  for (int i = 0; i < argc && !rc; i++) {
    if (!strcmp(argv[i], "--where") && i + 1 < argc) {
      where = argv[++i];
    } else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
      bufs[n] = strdup(argv[++i]);
      if (!bufs[n] || split_set(bufs[n], &set[2 * n], &set[2 * n + 1]) != 0) {
        fprintf(stderr, "dk update: --set needs \"column = expression\", not '%s'\n", argv[i]);
        rc = 2;
      }
      n++;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--no-deletion-vectors")) {
      no_dv = 1;
    } else if (!uri && argv[i][0] != '-') {
      uri = argv[i];
    } else {
      rc = dk_cli_usage("update");
    }
  }
  if (!rc && (!uri || !n)) rc = dk_cli_usage("update");
  dk_table *t = NULL;
  if (!rc) {
    dk_error err;
    dk_error_init(&err);
    dk_dml_options o = {.version = DK_DML_OPTIONS_VERSION,
                        .deletion_vectors = no_dv ? DK_DML_DV_NEVER : DK_DML_DV_TABLE};
    dk_dml_metrics m = {.version = DK_DML_METRICS_VERSION};
    dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
    if (dk_cli_table_open(uri, &t, &err) != DK_OK ||
        dk_table_update(&m, &r, t, set, n, where, &o, NULL, &err) != DK_OK)
      rc = dml_fail("update", &err);
    else if (json)
      print_metrics(&m, &r);
    else if (r.committed_version < 0)
      printf("%s: no row matched, nothing committed\n", uri);
    else
      printf("%s: updated %lld rows as version %lld (%lld deletion vectors, %lld files removed, "
             "%lld files added)\n",
             uri, (long long)m.num_updated_rows, (long long)r.committed_version,
             (long long)(m.num_deletion_vectors_added + m.num_deletion_vectors_updated),
             (long long)m.num_removed_files, (long long)m.num_added_files);
  }
  dk_table_free(t);
  for (size_t i = 0; i < n; i++) free(bufs[i]);
  free(bufs);
  free(set);
  return rc;
}
