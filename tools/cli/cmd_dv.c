/*
** cmd_dv.c — hidden `dk _dv TABLE_ROOT DESCRIPTOR_JSON`: loads one deletion vector and
** prints its deleted row indexes as a JSON array (used by tests/python/test_dv.py).
**
** DESCRIPTOR_JSON is a DeletionVectorDescriptor object as it appears in a commit line
** (PROTOCOL.md § Deletion Vector Descriptor Schema). This tool reads it with a small flat
** object scanner (string, integer and null members only) and the files with stdio, because
** the JSON codec and the local storage backend live in other modules; once they are merged
** both can be swapped in without changing the command's behaviour.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dv/dv.h"

/* ---- a read-only stdio storage (read_range and stat only) -------------------------------- */

static dk_status cli_read_range(dk_storage *s, const char *path, int64_t offset, void *buf,
                                size_t len, dk_error *err) {
  (void)s;
  FILE *f = fopen(path, "rb");
  if (!f)
    return dk__error_set(err, errno == ENOENT ? DK_NOT_FOUND : DK_IO, "%s: %s", path,
                         strerror(errno));
  size_t got = 0;
  if (fseeko(f, (off_t)offset, SEEK_SET) == 0) got = fread(buf, 1, len, f);
  fclose(f);
  if (got != len)
    return dk__error_set(err, DK_CORRUPT, "%s: short read, %zu of %zu bytes at offset %" PRId64,
                         path, got, len, offset);
  return DK_OK;
}

static dk_status cli_stat(dk_storage *s, const char *path, dk_file_info *out, dk_error *err) {
  (void)s;
  FILE *f = fopen(path, "rb");
  if (!f)
    return dk__error_set(err, errno == ENOENT ? DK_NOT_FOUND : DK_IO, "%s: %s", path,
                         strerror(errno));
  fseeko(f, 0, SEEK_END);
  out->path = path;
  out->size = (int64_t)ftello(f);
  fclose(f);
  return DK_OK;
}

/* ---- a flat JSON object scanner ----------------------------------------------------------- */

typedef struct cli_member {
  char key[32];    /* member name */
  int kind;        /* 0 absent, 1 string, 2 integer, 3 null */
  char str[4096];  /* string value */
  size_t len;      /* its length */
  int64_t num;     /* integer value */
} cli_member;

static const char *cli_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* Parses a JSON string at p (after the quote) into dst; returns the end or NULL. */
static const char *cli_string(const char *p, char *dst, size_t cap, size_t *len) {
  size_t n = 0;
  while (*p && *p != '"') {
    char c = *p++;
    if (c == '\\') {
      c = *p++;
      switch (c) {
        case '"': case '\\': case '/': break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
          unsigned v;
          if (sscanf(p, "%4x", &v) != 1 || v == 0 || v > 0x7F) return NULL;
          c = (char)v;
          p += 4;
          break;
        }
        default: return NULL;
      }
    }
    if (n + 1 >= cap) return NULL;
    dst[n++] = c;
  }
  if (*p != '"') return NULL;
  dst[n] = 0;
  *len = n;
  return p + 1;
}

static int cli_parse_object(const char *p, cli_member *m, int nm) {
  p = cli_ws(p);
  if (*p++ != '{') return -1;
  p = cli_ws(p);
  if (*p == '}') return 0;
  for (;;) {
    char key[64];
    size_t klen;
    p = cli_ws(p);
    if (*p++ != '"' || !(p = cli_string(p, key, sizeof key, &klen))) return -1;
    p = cli_ws(p);
    if (*p++ != ':') return -1;
    p = cli_ws(p);
    cli_member tmp = {{0}, 0, {0}, 0, 0}, *dst = &tmp;
    for (int i = 0; i < nm; i++)
      if (!strcmp(m[i].key, key)) dst = &m[i];
    if (*p == '"') {
      if (!(p = cli_string(p + 1, dst->str, sizeof dst->str, &dst->len))) return -1;
      dst->kind = 1;
    } else if (!strncmp(p, "null", 4)) {
      dst->kind = 3;
      p += 4;
    } else {
      char *end;
      errno = 0;
      long long v = strtoll(p, &end, 10);
      if (end == p || errno) return -1;
      dst->num = v;
      dst->kind = 2;
      p = end;
    }
    p = cli_ws(p);
    if (*p == '}') return *cli_ws(p + 1) ? -1 : 0;
    if (*p++ != ',') return -1;
  }
}

static dk_status cli_print_row(int64_t row, void *payload) {
  int *first = payload;
  printf("%s%" PRId64, *first ? "" : ",", row);
  *first = 0;
  return DK_OK;
}

int dk_cli_dv(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dk _dv TABLE_ROOT DESCRIPTOR_JSON\n");
    return 2;
  }
  static cli_member m[5] = {{"storageType", 0, {0}, 0, 0}, {"pathOrInlineDv", 0, {0}, 0, 0},
                            {"offset", 0, {0}, 0, 0},      {"sizeInBytes", 0, {0}, 0, 0},
                            {"cardinality", 0, {0}, 0, 0}};
  if (cli_parse_object(argv[1], m, 5) != 0 || m[0].kind != 1 || m[1].kind != 1 ||
      m[3].kind != 2 || m[4].kind != 2 || m[2].kind == 1) {
    fprintf(stderr, "dk _dv: DESCRIPTOR_JSON is not a deletion vector descriptor\n");
    return 2;
  }
  dk_error err;
  dk_error_init(&err);
  dk_dv_desc d;
  dk_dv *dv = NULL;
  dk_storage st = {.version = DK_STORAGE_VERSION, .read_range = cli_read_range,
                   .stat = cli_stat};
  int64_t off = m[2].num;
  dk_status s = dk_dv__descriptor_init(&d, (dk_str){m[0].str, m[0].len},
                                      (dk_str){m[1].str, m[1].len},
                                      m[2].kind == 2 ? &off : NULL, m[3].num, m[4].num, &err);
  if (s == DK_OK) s = dk_dv__load(&dv, &st, argv[0], &d, NULL, &err);
  if (s != DK_OK) {
    fprintf(stderr, "dk _dv: %s: %s\n", dk_status_str(s), err.message);
    return 1;
  }
  int first = 1;
  printf("[");
  (void)dk_dv__foreach(dv, cli_print_row, &first);
  printf("]\n");
  dk_dv__free(dv);
  return 0;
}
