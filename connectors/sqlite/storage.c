/*
** storage.c — object-store tables for the SQLite connector: `s3://bucket/prefix` (and s3a://)
** table paths open through dk's S3 backend (dk/sys/storage_s3.h, dk_storage_s3_for_uri),
** configured by the connection's storage options (dk_sqlite_storage_option: what
** `dk sql --storage-option KEY=VALUE` sets), then those of one table (`aws_*=` / `dk_s3_*=`
** arguments of CREATE VIRTUAL TABLE ... USING delta(...), delta-rs's names), over the AWS_*
** environment and profiles. A backend is made once per bucket and option set and kept until
** the connection closes, so no table or snapshot outlives its backend and every scan of a
** bucket shares one connection pool. Local paths open on dk's built-in backend.
*/
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dk/sys/storage_s3.h"
#include "dk_sqlite.h"

typedef struct dks_backend {
  char *key; /* "bucket\n" then "k=v\n" for every option in order */
  dk_storage *sto;
  struct dks_backend *next;
} dks_backend;

struct dks_storage {
  int n, cap;
  char **keys, **values; /* the connection's options (sqlite3_malloc'ed) */
  dks_backend *backends;
};

int dks_is_storage_option(const char *key) {
  return !strncasecmp(key, "aws_", 4) || !strncasecmp(key, "dk_s3_", 6);
}

static dks_storage *storage_of(dk_sqlite_ctx *ctx) {
  if (!ctx->storage && (ctx->storage = sqlite3_malloc64(sizeof *ctx->storage)) != NULL)
    memset(ctx->storage, 0, sizeof *ctx->storage);
  return ctx->storage;
}

int dk_sqlite_storage_option(dk_sqlite_ctx *ctx, const char *key, const char *value) {
  dks_storage *s = storage_of(ctx);
  if (!s) return SQLITE_NOMEM;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    char **k = sqlite3_realloc64(s->keys, sizeof *k * (size_t)cap);
    if (!k) return SQLITE_NOMEM;
    s->keys = k;
    char **v = sqlite3_realloc64(s->values, sizeof *v * (size_t)cap);
    if (!v) return SQLITE_NOMEM;
    s->values = v;
    s->cap = cap;
  }
  s->keys[s->n] = sqlite3_mprintf("%s", key);
  s->values[s->n] = sqlite3_mprintf("%s", value);
  if (!s->keys[s->n] || !s->values[s->n]) {
    sqlite3_free(s->keys[s->n]);
    sqlite3_free(s->values[s->n]);
    return SQLITE_NOMEM;
  }
  s->n++;
  return SQLITE_OK;
}

void dks_storage_free(dks_storage *s) {
  if (!s) return;
  for (dks_backend *b = s->backends, *next; b; b = next) {
    next = b->next;
    b->sto->free(b->sto);
    sqlite3_free(b->key);
    sqlite3_free(b);
  }
  for (int i = 0; i < s->n; i++) sqlite3_free(s->keys[i]), sqlite3_free(s->values[i]);
  sqlite3_free(s->keys);
  sqlite3_free(s->values);
  sqlite3_free(s);
}

/* The backend for uri's bucket under the connection's options and then n more. */
static dk_status nomem(dk_error *err) {
  snprintf(err->message, sizeof err->message, "out of memory");
  return err->code = DK_NOMEM;
}

static dk_status backend_for(dk_storage **out, dk_sqlite_ctx *ctx, const char *uri, int n,
                             const char *const *keys, const char *const *values, dk_error *err) {
  dks_storage *s = storage_of(ctx);
  if (!s) return nomem(err);
  int total = s->n + n;
  const char **k = sqlite3_malloc64(sizeof *k * (size_t)(2 * total + 1));
  sqlite3_str *id = sqlite3_str_new(NULL);
  const char *b = strstr(uri, "://") + 3, *slash = strchr(b, '/');
  sqlite3_str_appendf(id, "%.*s\n", slash ? (int)(slash - b) : (int)strlen(b), b);
  for (int i = 0; i < total; i++) {
    const char *key = i < s->n ? s->keys[i] : keys[i - s->n];
    const char *val = i < s->n ? s->values[i] : values[i - s->n];
    if (k) k[i] = key, k[total + i] = val;
    sqlite3_str_appendf(id, "%s=%s\n", key, val);
  }
  char *idtext = sqlite3_str_finish(id);
  if (!k || !idtext) {
    sqlite3_free(k);
    sqlite3_free(idtext);
    return nomem(err);
  }
  dk_status st = DK_OK;
  for (dks_backend *e = s->backends; e; e = e->next)
    if (!strcmp(e->key, idtext)) {
      *out = e->sto;
      goto done;
    }
  dks_backend *e = sqlite3_malloc64(sizeof *e);
  if (!e) {
    st = nomem(err);
    goto done;
  }
  st = dk_storage_s3_for_uri(&e->sto, uri, (size_t)total, k, k + total, NULL, err);
  if (st != DK_OK) {
    sqlite3_free(e);
    goto done;
  }
  e->key = idtext;
  idtext = NULL;
  e->next = s->backends;
  s->backends = e;
  *out = e->sto;
done:
  sqlite3_free(k);
  sqlite3_free(idtext);
  return st;
}

dk_status dks_table_open(dk_table **out, dk_sqlite_ctx *ctx, const char *path, int n,
                         const char *const *keys, const char *const *values, dk_error *err) {
  *out = NULL;
  dk_table_options o = {.version = DK_TABLE_OPTIONS_VERSION};
  if (dk_storage_s3_is_uri(path)) {
    dk_status st = backend_for(&o.storage, ctx, path, n, keys, values, err);
    if (st != DK_OK) return st;
  } else if (n > 0) {
    snprintf(err->message, sizeof err->message,
             "storage options (%s=...) apply to object-store tables (s3://bucket/prefix), not to "
             "a local path", keys[0]);
    return err->code = DK_UNSUPPORTED;
  }
  return dk_table_open(out, path, &o, err);
}
