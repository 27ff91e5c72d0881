/*
** s3_off.c — dk_storage_s3_new and friends when dk is built without S3 (cmake -DDK_WITH_S3=OFF):
** every call fails with DK_UNSUPPORTED, so the API (and libdk.so's exports) stay the same.
*/
#include <strings.h>

#include "dk/sys/storage_s3.h"
#include "util/util.h"

static dk_status off(dk_error *err) {
  return dk__error_set(err, DK_UNSUPPORTED, "this dk was built without S3 support (DK_WITH_S3=OFF)");
}

dk_status dk_s3_options_set(dk_s3_options *o, const char *key, const char *value, dk_error *err) {
  (void)o, (void)key, (void)value;
  return off(err);
}

dk_status dk_storage_s3_new(dk_storage **out, const dk_s3_options *opts, const dk_allocator *alloc,
                            dk_error *err) {
  (void)opts, (void)alloc;
  if (out) *out = NULL;
  return off(err);
}

dk_status dk_storage_s3_stats(dk_storage *s, dk_s3_stats *out, dk_error *err) {
  (void)s, (void)out;
  return off(err);
}

int dk_storage_s3_is_uri(const char *uri) {
  return uri && (!strncasecmp(uri, "s3://", 5) || !strncasecmp(uri, "s3a://", 6));
}

dk_status dk_storage_s3_for_uri(dk_storage **out, const char *uri, size_t n,
                                const char *const *keys, const char *const *values,
                                const dk_allocator *alloc, dk_error *err) {
  (void)uri, (void)n, (void)keys, (void)values, (void)alloc;
  if (out) *out = NULL;
  return off(err);
}
