/*
** parquet_stub.c — TEMPORARY stand-in for the Parquet reader (include/dk/parquet.h) until the
** parquet branch is merged; every entry point returns DK_UNSUPPORTED. DELETE this file when
** merging main with the real reader.
*/
#include "dk/parquet.h"
#include "util/util.h"

dk_status dk_parquet_open(dk_parquet_file **out, const char *path,
                          const dk_parquet_open_options *opts, dk_error *err) {
  (void)opts;
  *out = NULL;
  return dk__error_set(err, DK_UNSUPPORTED,
                       "%s: Parquet checkpoints need the Parquet reader (not merged yet)", path);
}

void dk_parquet_file_free(dk_parquet_file *f) { (void)f; }

dk_status dk_parquet_schema(struct ArrowSchema *out, const dk_parquet_file *f, dk_error *err) {
  (void)out;
  (void)f;
  return dk__error_set(err, DK_UNSUPPORTED, "Parquet reader not merged yet");
}

dk_status dk_parquet_read(struct ArrowArrayStream *out, dk_parquet_file *f,
                          const dk_parquet_read_options *opts, dk_error *err) {
  (void)out;
  (void)f;
  (void)opts;
  return dk__error_set(err, DK_UNSUPPORTED, "Parquet reader not merged yet");
}
