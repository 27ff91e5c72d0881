/*
** storage_opts.c — object-store tables for the dk tool: `--storage-option KEY=VALUE`
** (repeatable; delta-rs's names, see dk_s3_options_set) and `s3://bucket/prefix` (or s3a://)
** table URIs, opened through the S3 backend (dk/sys/storage_s3.h) with the rest of the
** settings from the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, AWS_PROFILE, ...).
** One backend per process, freed at exit.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dk/sys/storage_s3.h"

#define MAX_OPTS 64
static char *g_keys[MAX_OPTS], *g_values[MAX_OPTS];
static int g_nopts;
static dk_storage *g_storage;

static void free_all(void) {
  if (g_storage) g_storage->free(g_storage);
  g_storage = NULL;
  for (int i = 0; i < g_nopts; i++) free(g_keys[i]);
  g_nopts = 0;
}

int dk_cli_storage_option(const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || g_nopts == MAX_OPTS) {
    fprintf(stderr, "dk: bad --storage-option '%s' (KEY=VALUE)\n", kv);
    return -1;
  }
  if (g_nopts == 0 && !g_storage) atexit(free_all);
  char *k = strdup(kv);
  if (!k) return -1;
  k[eq - kv] = 0;
  g_keys[g_nopts] = k;
  g_values[g_nopts++] = k + (eq - kv) + 1;
  return 0;
}

int dk_cli_is_object_uri(const char *uri) {
  return !strncmp(uri, "s3://", 5) || !strncmp(uri, "s3a://", 6);
}

dk_status dk_cli_storage_for(const char *uri, dk_storage **out, dk_error *err) {
  *out = NULL;
  if (!dk_cli_is_object_uri(uri)) return DK_OK;
  if (g_storage) return *out = g_storage, DK_OK;
  const char *b = strstr(uri, "://") + 3, *slash = strchr(b, '/');
  char bucket[256];
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  if (bl == 0 || bl >= sizeof bucket) {
    snprintf(err->message, sizeof err->message, "'%s' names no bucket", uri);
    return err->code = DK_INVALID;
  }
  memcpy(bucket, b, bl);
  bucket[bl] = 0;
  dk_s3_options o = {.version = DK_S3_OPTIONS_VERSION};
  for (int i = 0; i < g_nopts; i++) {
    dk_status st = dk_s3_options_set(&o, g_keys[i], g_values[i], err);
    if (st != DK_OK) return st;
  }
  o.bucket = bucket; /* the URI's bucket wins */
  if (g_nopts == 0) atexit(free_all);
  dk_status st = dk_storage_s3_new(&g_storage, &o, NULL, err);
  *out = g_storage;
  return st;
}
