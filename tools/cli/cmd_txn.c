/*
** cmd_txn.c — the writing commands of the dk tool:
**   dk create TABLE --schema "a long, b string" [--partition-by b] [--property k=v]...
**            [--replace | --if-not-exists]
**   dk vacuum TABLE [--retain-hours N] [--dry-run] [--no-retention-check]
**   dk restore TABLE --version N
**   dk checkpoint TABLE [--version N]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "cli.h"
#include "dk/maintenance.h"
#include "dk/txn.h"

/* mkdir -p */
static int mkdir_p(const char *path) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return -1;
  for (char *c = p + 1; *c; c++)
    if (*c == '/') {
      *c = 0;
      if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
      *c = '/';
    }
  return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static int fail(const char *cmd, const dk_error *err) {
  fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err->code), err->message);
  return err->code == DK_CONFLICT ? 4 : 1;
}

int dk_cli_create(int argc, char **argv) {
  const char *uri = NULL, *schema = NULL, *parts = NULL;
  const char *props[128];
  size_t n_props = 0;
  char *prop_buf[64];
  size_t n_buf = 0;
  dk_create_mode mode = DK_CREATE_ERROR_IF_EXISTS;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--schema") && i + 1 < argc) schema = argv[++i];
    else if (!strcmp(argv[i], "--partition-by") && i + 1 < argc) parts = argv[++i];
    else if (!strcmp(argv[i], "--property") && i + 1 < argc && n_buf < 64) {
      char *kv = strdup(argv[++i]);
      char *eq = kv ? strchr(kv, '=') : NULL;
      if (!eq) {
        free(kv);
        fprintf(stderr, "dk create: --property wants key=value\n");
        return 2;
      }
      *eq = 0;
      prop_buf[n_buf++] = kv;
      props[2 * n_props] = kv;
      props[2 * n_props++ + 1] = eq + 1;
    } else if (!strcmp(argv[i], "--replace")) mode = DK_CREATE_OR_REPLACE;
    else if (!strcmp(argv[i], "--if-not-exists")) mode = DK_CREATE_IGNORE;
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else {
      fprintf(stderr, "dk create: unexpected argument '%s'\n", argv[i]);
      uri = NULL;
      break;
    }
  }
  int rc = 0;
  if (!uri || !schema) {
    rc = dk_cli_usage("create");
    goto done;
  }
  dk_error err;
  dk_error_init(&err);
  char *schema_json = NULL;
  if (schema[0] == '{') schema_json = strdup(schema);
  else if (dk_schema_from_ddl(&schema_json, schema, &err) != DK_OK) {
    rc = fail("create", &err);
    goto done;
  }
  const char *pcols[64];
  size_t np = 0;
  char *pbuf = parts ? strdup(parts) : NULL;
  for (char *tok = pbuf ? strtok(pbuf, ",") : NULL; tok && np < 64; tok = strtok(NULL, ","))
    pcols[np++] = tok;
  if (!strstr(uri, "://") && mkdir_p(uri) != 0) {
    fprintf(stderr, "dk create: cannot create directory %s: %s\n", uri, strerror(errno));
    rc = 1;
  }
  dk_table *t = NULL;
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  if (!rc && dk_table_open(&t, uri, NULL, &err) != DK_OK) rc = fail("create", &err);
  if (!rc) {
    dk_create_options o = {.version = DK_CREATE_OPTIONS_VERSION, .schema_string = schema_json,
                           .n_partition_columns = np, .partition_columns = pcols,
                           .n_properties = n_props, .properties = props, .mode = mode};
    if (dk_table_create(&r, t, &o, &err) != DK_OK) rc = fail("create", &err);
    else if (r.committed_version < 0) printf("%s: table exists, left as it is\n", uri);
    else printf("%s: version %lld\n", uri, (long long)r.committed_version);
  }
  dk_table_free(t);
  free(pbuf);
  dk_free(schema_json);
done:
  for (size_t i = 0; i < n_buf; i++) free(prop_buf[i]);
  return rc;
}

static dk_status print_file(void *payload, const char *path, int64_t size) {
  (void)payload;
  printf("%s\t%lld\n", path, (long long)size);
  return DK_OK;
}

int dk_cli_vacuum(int argc, char **argv) {
  const char *uri = NULL;
  dk_vacuum_options o = {.version = DK_VACUUM_OPTIONS_VERSION, .retention_hours = -1,
                         .on_file = print_file};
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--retain-hours") && i + 1 < argc) {
      char *end;
      o.retention_hours = strtod(argv[++i], &end);
      if (*end || o.retention_hours < 0) {
        fprintf(stderr, "dk vacuum: bad --retain-hours '%s'\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--dry-run")) o.dry_run = 1;
    else if (!strcmp(argv[i], "--no-retention-check")) o.skip_retention_check = 1;
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else {
      uri = NULL;
      break;
    }
  }
  if (!uri) {
    return dk_cli_usage("vacuum");
  }
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_vacuum_result r = {.version = DK_VACUUM_RESULT_VERSION};
  int rc = 0;
  if (dk_table_open(&t, uri, NULL, &err) != DK_OK || dk_table_vacuum(&r, t, &o, &err) != DK_OK)
    rc = fail("vacuum", &err);
  else
    fprintf(stderr, "%s %lld files (%lld bytes)\n", o.dry_run ? "would delete" : "deleted",
            (long long)r.files, (long long)r.bytes);
  dk_table_free(t);
  return rc;
}

int dk_cli_restore(int argc, char **argv) {
  const char *uri = NULL;
  long long version = -1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--version") && i + 1 < argc) version = atoll(argv[++i]);
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else {
      uri = NULL;
      break;
    }
  }
  if (!uri || version < 0) {
    return dk_cli_usage("restore");
  }
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  int rc = 0;
  if (dk_table_open(&t, uri, NULL, &err) != DK_OK ||
      dk_table_restore(&r, t, version, NULL, &err) != DK_OK)
    rc = fail("restore", &err);
  else
    printf("%s: restored to version %lld as version %lld\n", uri, version,
           (long long)r.committed_version);
  dk_table_free(t);
  return rc;
}

int dk_cli_checkpoint(int argc, char **argv) {
  const char *uri = NULL;
  long long version = -1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--version") && i + 1 < argc) version = atoll(argv[++i]);
    else if (!uri && argv[i][0] != '-') uri = argv[i];
    else {
      uri = NULL;
      break;
    }
  }
  if (!uri) {
    return dk_cli_usage("checkpoint");
  }
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_checkpoint_options o = {.version = DK_CHECKPOINT_OPTIONS_VERSION, .at_version = version};
  dk_checkpoint_result r = {.version = DK_CHECKPOINT_RESULT_VERSION};
  int rc = 0;
  if (dk_table_open(&t, uri, NULL, &err) != DK_OK || dk_table_checkpoint(&r, t, &o, &err) != DK_OK)
    rc = fail("checkpoint", &err);
  else
    printf("%s: checkpoint of version %lld: %s (%lld actions, %lld files, %lld bytes)\n", uri,
           (long long)r.checkpoint_version, r.file_name, (long long)r.num_actions,
           (long long)r.num_add_files, (long long)r.size_in_bytes);
  dk_table_free(t);
  return rc;
}
