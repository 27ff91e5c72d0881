/*
** cmd_txn.c — the writing commands of the dk tool:
**   dk create TABLE --schema "a long, b string" [--partition-by b] [--property k=v]...
**            [--replace | --if-not-exists]
**   dk vacuum TABLE [--retain-hours N] [--dry-run] [--no-retention-check]
**   dk restore TABLE --version N
**   dk checkpoint TABLE [--version N]
**   dk write TABLE FILE... [--mode M] [--partition-by a,b] [--replace-where EXPR] [--dynamic]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dk/maintenance.h"
#include "dk/parquet.h"
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

/* ---- dk write ------------------------------------------------------------------------------ */

/* The files given, read one after the other as one stream. */
typedef struct chain {
  char **paths;
  int n, cur;
  struct ArrowArrayStream s;   /* the current file's stream (release NULL: none) */
  dk_parquet_file *f;
  char msg[1200];
} chain;

static int chain_open(chain *c) {
  dk_error err;
  dk_error_init(&err);
  if (c->s.release) c->s.release(&c->s);
  dk_parquet_file_free(c->f);
  c->f = NULL;
  memset(&c->s, 0, sizeof c->s);
  if (dk_parquet_open(&c->f, c->paths[c->cur], NULL, &err) != DK_OK ||
      dk_parquet_read(&c->s, c->f, NULL, &err) != DK_OK) {
    snprintf(c->msg, sizeof c->msg, "%s: %s", c->paths[c->cur], err.message);
    return EIO;
  }
  return 0;
}

static int chain_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  chain *c = s->private_data;
  return c->s.get_schema(&c->s, out);
}

static int chain_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  chain *c = s->private_data;
  for (;;) {
    int rc = c->s.get_next(&c->s, out);
    if (rc) {
      const char *m = c->s.get_last_error ? c->s.get_last_error(&c->s) : NULL;
      snprintf(c->msg, sizeof c->msg, "%s: %s", c->paths[c->cur], m ? m : "read error");
      return rc;
    }
    if (out->release || c->cur + 1 >= c->n) return 0;
    c->cur++;
    if ((rc = chain_open(c))) return rc;
  }
}

static const char *chain_error(struct ArrowArrayStream *s) {
  return ((chain *)s->private_data)->msg;
}

static void chain_release(struct ArrowArrayStream *s) {
  chain *c = s->private_data;
  if (c->s.release) c->s.release(&c->s);
  dk_parquet_file_free(c->f);
  s->release = NULL;
}

static int g_tty;

static void progress(void *payload, int64_t files, int64_t rows, int64_t bytes) {
  (void)payload;
  if (g_tty)
    fprintf(stderr, "\r%lld files, %lld rows, %.1f MB", (long long)files, (long long)rows,
            (double)bytes / 1e6);
}

int dk_cli_write(int argc, char **argv) {
  const char *uri = NULL, *parts = NULL, *where = NULL, *mode = "append";
  char *files[256];
  int nf = 0, dynamic = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    else if (!strcmp(argv[i], "--partition-by") && i + 1 < argc) parts = argv[++i];
    else if (!strcmp(argv[i], "--replace-where") && i + 1 < argc) where = argv[++i];
    else if (!strcmp(argv[i], "--dynamic")) dynamic = 1;
    else if (argv[i][0] == '-') {
      uri = NULL;
      nf = 0;
      break;
    } else if (!uri) uri = argv[i];
    else if (nf < 256) files[nf++] = argv[i];
  }
  if (!uri || !nf) {
    fprintf(stderr, "usage: dk write TABLE FILE.parquet... [--mode append|overwrite|error|ignore] "
                    "[--partition-by a,b] [--replace-where EXPR] [--dynamic]\n");
    return 2;
  }
  for (int i = 0; i < nf; i++) {
    const char *dot = strrchr(files[i], '.');
    if (dot && (!strcmp(dot, ".csv") || !strcmp(dot, ".jsonl") || !strcmp(dot, ".json"))) {
      fprintf(stderr, "dk write: %s: only Parquet input is read so far (CSV and JSON lines "
                      "come with the Parquet writer's readers)\n", files[i]);
      return 2;
    }
  }
  dk_write_table_options o = {.version = DK_WRITE_TABLE_OPTIONS_VERSION};
  if (!strcmp(mode, "append")) o.mode = DK_WRITE_APPEND;
  else if (!strcmp(mode, "overwrite")) o.mode = DK_WRITE_OVERWRITE;
  else if (!strcmp(mode, "error")) o.mode = DK_WRITE_ERROR_IF_EXISTS;
  else if (!strcmp(mode, "ignore")) o.mode = DK_WRITE_IGNORE;
  else {
    fprintf(stderr, "dk write: bad --mode '%s'\n", mode);
    return 2;
  }
  const char *pcols[64];
  size_t np = 0;
  char *pbuf = parts ? strdup(parts) : NULL;
  for (char *tok = pbuf ? strtok(pbuf, ",") : NULL; tok && np < 64; tok = strtok(NULL, ","))
    pcols[np++] = tok;
  o.partition_by = pcols;
  o.n_partition_by = np;
  o.predicate = where;
  o.dynamic_partition_overwrite = dynamic;
  if (where || dynamic) o.mode = DK_WRITE_OVERWRITE;
  g_tty = isatty(2);
  o.write.version = DK_WRITE_OPTIONS_VERSION;
  o.write.progress = progress;
  chain c = {.paths = files, .n = nf};
  struct ArrowArrayStream st = {.get_schema = chain_schema, .get_next = chain_next,
                                .get_last_error = chain_error, .release = chain_release,
                                .private_data = &c};
  dk_error err;
  dk_error_init(&err);
  int rc = 0;
  if (chain_open(&c)) {
    fprintf(stderr, "dk write: %s\n", c.msg);
    free(pbuf);
    return 1;
  }
  if (mkdir_p(uri) != 0 && errno != EEXIST) {
    fprintf(stderr, "dk write: cannot create %s: %s\n", uri, strerror(errno));
    rc = 1;
  }
  dk_table *t = NULL;
  dk_commit_result r = {.version = DK_COMMIT_RESULT_VERSION};
  if (!rc && (dk_table_open(&t, uri, NULL, &err) != DK_OK ||
              dk_write_table(&r, t, &st, &o, &err) != DK_OK))
    rc = fail("write", &err);
  if (g_tty) fputc('\n', stderr);
  if (!rc) {
    if (r.committed_version < 0) printf("%s: nothing written\n", uri);
    else printf("%s: version %lld\n", uri, (long long)r.committed_version);
  }
  st.release(&st);
  dk_table_free(t);
  free(pbuf);
  return rc;
}
