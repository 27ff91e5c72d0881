/*
** paths.c — how a writer names data files (PROTOCOL.md "Add File and Remove File": paths are
** RFC 2396 URI strings relative to the table root; write-path.md §1.10).
**
** Partition directories are `escapePathName(col)=escapePathName(value)` as Spark's
** ExternalCatalogUtils writes them: %XX (uppercase) for 0x01-0x1F, " # % ' * / : = ? \ 0x7F
** { [ ] ^. The log's `path` is that relative path in URI form, as Hadoop's Path.toUri prints
** it: characters outside RFC 2396's path set (space, %, < > | ` } and the rest below) become
** %XX, non-ASCII UTF-8 stays as it is. So a value "a:b" is the directory p=a%3Ab and the log
** path p=a%253Ab/... . A null value is the directory __HIVE_DEFAULT_PARTITION__.
** (When the io module's path codec lands, the URI half moves there.)
*/
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "txn/txn_int.h"

static int hive_escapes(unsigned char c) {
  if (c >= 0x01 && c <= 0x1F) return 1;
  switch (c) {
    case '"': case '#': case '%': case '\'': case '*': case '/': case ':': case '=':
    case '?': case '\\': case 0x7F: case '{': case '[': case ']': case '^':
      return 1;
    default:
      return 0;
  }
}

static dk_status put_hex(dk_buf *b, unsigned char c, dk_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  char e[3] = {'%', hex[c >> 4], hex[c & 15]};
  return dk__buf_append(b, e, 3, err);
}

dk_status dk_txn__escape_partition(dk_buf *b, const char *s, dk_error *err) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (hive_escapes(*p)) DK_RETURN_NOT_OK(put_hex(b, *p, err));
    else DK_RETURN_NOT_OK(dk__buf_putc(b, (char)*p, err));
  }
  return DK_OK;
}

/* RFC 2396 path characters that java.net.URI leaves alone: unreserved, punct, '/', '@'. */
static int uri_plain(unsigned char c) {
  if (c >= 0x80) return 1; /* "other" characters are kept (UTF-8 bytes) */
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return strchr("-_.!~*'()" ",;:$&+=" "/@", c) != NULL && c != 0;
}

dk_status dk_txn__uri_encode_path(dk_buf *b, const char *s, dk_error *err) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (uri_plain(*p)) DK_RETURN_NOT_OK(dk__buf_putc(b, (char)*p, err));
    else DK_RETURN_NOT_OK(put_hex(b, *p, err));
  }
  return DK_OK;
}

void dk_txn__uuid(char out[37]) {
  unsigned char r[16];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got < sizeof r) { /* no entropy source: time and pid, still unique enough per process */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30), b2 = (uint64_t)getpid();
    memcpy(r, &a, 8);
    memcpy(r + 8, &b2, 8);
  }
  r[6] = (unsigned char)((r[6] & 0x0F) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3F) | 0x80);
  static const char hex[] = "0123456789abcdef";
  size_t k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[k++] = '-';
    out[k++] = hex[r[i] >> 4];
    out[k++] = hex[r[i] & 15];
  }
  out[k] = 0;
}

void dk_txn__remove_data_file(dk_table *t, const char *rel) {
  char full[4200];
  snprintf(full, sizeof full, "%s/%s", t->root, rel);
  (void)t->sto->remove(t->sto, full, NULL); /* best effort: what stays is an orphan for VACUUM */
}
