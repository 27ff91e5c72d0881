/*
** protocol.c — reader-side protocol checks: which reader versions and table features dk
** can read (PROTOCOL.md "Protocol Evolution", "Table Features", "Supported Features").
**
** Reader version 1 and 2 tables are readable (2 implies column mapping); version 3 tables
** list their reader features, and any feature not in the table below is refused with
** DK_UNSUPPORTED naming it. Writer-only features never block a read.
*/
#include <string.h>

#include "protocol/protocol.h"

static const char *const supported_reader_features[] = {
    "columnMapping",      "deletionVectors",         "timestampNtz",
    "v2Checkpoint",       "vacuumProtocolCheck",     "typeWidening",
    "typeWidening-preview", "variantType",           "variantType-preview",
    "variantShredding-preview", "variantShredding",
};

static int feature_in(const char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (list[i] && strcmp(list[i], name) == 0) return 1;
  return 0;
}

int dk_protocol__has_feature(const dk_protocol *p, const char *name) {
  return feature_in(p->reader_features, p->n_reader_features, name) ||
         feature_in(p->writer_features, p->n_writer_features, name);
}

dk_status dk_protocol__check_read(const dk_protocol *p, dk_error *err) {
  if (p->min_reader_version < 1)
    return dk__error_set(err, DK_CORRUPT, "protocol: invalid minReaderVersion %d",
                         (int)p->min_reader_version);
  if (p->min_reader_version > 3)
    return dk__error_set(err, DK_UNSUPPORTED,
                         "protocol: unsupported reader version (minReaderVersion %d; dk reads 1 to 3)",
                         (int)p->min_reader_version);
  if (p->min_reader_version < 3) return DK_OK;
  for (size_t i = 0; i < p->n_reader_features; i++) {
    const char *f = p->reader_features[i];
    if (!feature_in(supported_reader_features, DK_ARRAY_LEN(supported_reader_features), f))
      return dk__error_set(err, DK_UNSUPPORTED,
                           "protocol: table requires reader feature '%s', which dk does not support",
                           f ? f : "(null)");
  }
  return DK_OK;
}
