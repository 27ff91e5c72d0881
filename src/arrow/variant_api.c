/*
** variant_api.c — the public face of the variant-to-JSON renderer (dk/variant.h) over the
** internal one in variant.c (Parquet VariantEncoding.md).
*/
#include "arrow/json.h"
#include "dk/variant.h"

dk_status dk_variant_json(char **out, size_t *len, const uint8_t *metadata, size_t mlen,
                          const uint8_t *value, size_t vlen, dk_error *err) {
  *out = NULL;
  *len = 0;
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status st = dk__variant_to_json(&b, metadata, mlen, value, vlen, err);
  if (!st && !b.data) st = dk__buf_reserve(&b, 1, err);
  if (st) {
    dk__buf_dispose(&b);
    return st;
  }
  *len = b.len;
  *out = dk__buf_detach(&b);
  return DK_OK;
}
