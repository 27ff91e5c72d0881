/*
** storage_opts.c — object-store tables for the dk tool: `--storage-option KEY=VALUE`
** (repeatable; delta-rs's names, see dk_s3_options_set) and `s3://bucket/prefix` (or s3a://)
** table URIs, opened through the S3 backend (dk/sys/storage_s3.h: dk_storage_s3_for_uri) with
** the rest of the settings from the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL,
** AWS_PROFILE, ...). One backend per process, freed at exit; `dk sql` hands the options to
** the SQLite connector instead (dk_cli_storage_options).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dk/sys/storage_s3.h"
#include "dk/table.h"

#define MAX_OPTS 64
static const char *g_keys[MAX_OPTS], *g_values[MAX_OPTS];
static int g_nopts, g_atexit;
static dk_storage *g_storage;

static void free_all(void) {
  if (g_storage) g_storage->free(g_storage);
  g_storage = NULL;
  for (int i = 0; i < g_nopts; i++) free((char *)g_keys[i]);
  g_nopts = 0;
}

static void at_exit_once(void) {
  if (!g_atexit) atexit(free_all);
  g_atexit = 1;
}

int dk_cli_storage_option(const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || g_nopts == MAX_OPTS) {
    fprintf(stderr, "dk: bad --storage-option '%s' (KEY=VALUE)\n", kv);
    return -1;
  }
  at_exit_once();
  char *k = strdup(kv);
  if (!k) return -1;
  k[eq - kv] = 0;
  g_keys[g_nopts] = k;
  g_values[g_nopts++] = k + (eq - kv) + 1;
  return 0;
}

int dk_cli_storage_options(const char *const **keys, const char *const **values) {
  *keys = g_keys;
  *values = g_values;
  return g_nopts;
}

int dk_cli_is_object_uri(const char *uri) { return dk_storage_s3_is_uri(uri); }

dk_status dk_cli_storage_for(const char *uri, dk_storage **out, dk_error *err) {
  *out = NULL;
  if (!dk_cli_is_object_uri(uri)) return DK_OK;
  if (g_storage) return *out = g_storage, DK_OK;
  at_exit_once();
  dk_status st = dk_storage_s3_for_uri(&g_storage, uri, (size_t)g_nopts, g_keys, g_values, NULL, err);
  *out = g_storage;
  return st;
}

dk_status dk_cli_table_open(const char *uri, dk_table **t, dk_error *err) {
  *t = NULL;
  dk_table_options to = {.version = DK_TABLE_OPTIONS_VERSION};
  dk_status st = dk_cli_storage_for(uri, &to.storage, err);
  return st != DK_OK ? st : dk_table_open(t, uri, &to, err);
}
