/*
** checkpoint_fuzzer.c — fuzz target for Parquet checkpoint reading (src/log/checkpoint_parquet.c
** over src/codec/parquet): the input is one checkpoint file (classic, multi-part part, V2
** top-level file or sidecar), served by a one-file in-memory dk_storage and applied to a fresh replay state the
** way a snapshot applies its checkpoint (begin/end_checkpoint brackets, then finish); then the
** stats of every file are read, which decodes the add.stats pages kept as stored. Every error
** must be a clean status with a message (DK_INTERNAL counts as a bug); crashes, leaks and
** sanitizer reports are the bugs.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed call must say why: a status other than DK_INTERNAL, recorded in err. */
static void check_clean(dk_status s, const dk_error *err) {
  if (s == DK_OK) return;
  if (s == DK_INTERNAL || err->code != s || !err->message[0]) {
    fprintf(stderr, "checkpoint_fuzzer: unclean error %d (err %d: %s)\n", (int)s, (int)err->code,
            err->message);
    abort();
  }
}

/* A read-only dk_storage holding the input as its one file (any key names it). */
typedef struct blob_storage {
  dk_storage base; /* first */
  const uint8_t *data;
  size_t size;
} blob_storage;

static dk_status blob_read_range(dk_storage *s, const char *path, int64_t off, void *buf,
                                 size_t len, dk_error *err) {
  const blob_storage *b = (const blob_storage *)s;
  if (off < 0 || (uint64_t)off > b->size || len > b->size - (size_t)off)
    return dk__error_set(err, DK_CORRUPT, "read %s: past the end", path);
  if (len) memcpy(buf, b->data + off, len);
  return DK_OK;
}

static dk_status blob_read_ranges(dk_storage *s, const char *path, const dk_byte_range *r,
                                  size_t n, dk_error *err) {
  for (size_t i = 0; i < n; i++)
    DK_RETURN_NOT_OK(blob_read_range(s, path, r[i].offset, r[i].buf, r[i].len, err));
  return DK_OK;
}

static dk_status blob_stat(dk_storage *s, const char *path, dk_file_info *out, dk_error *err) {
  (void)err;
  memset(out, 0, sizeof *out);
  out->path = path;
  out->size = (int64_t)((const blob_storage *)s)->size;
  return DK_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  blob_storage bs;
  memset(&bs, 0, sizeof bs);
  bs.base.version = DK_STORAGE_VERSION;
  bs.base.read_range = blob_read_range;
  bs.base.read_ranges = blob_read_ranges;
  bs.base.stat = blob_stat;
  bs.data = data;
  bs.size = size;
  {
    dk__state st;
    dk_error err;
    dk_error_init(&err);
    if (dk_log__state_init(&st, NULL, "/fuzz/table", &err) == DK_OK) {
      st.cur_version = 1;
      dk_log__state_begin_checkpoint(&st);
      dk_status s = dk_log__apply_parquet_checkpoint(&st, &bs.base, "/fuzz/table/_delta_log/"
                                                     "00000000000000000001.checkpoint.parquet",
                                                     0, NULL, &err);
      dk_log__state_end_checkpoint(&st);
      check_clean(s, &err);
      if (s == DK_OK) {
        s = dk_log__state_finish(&st, &err);
        check_clean(s, &err);
      }
      for (size_t i = 0; s == DK_OK && i < st.n_files; i++) {
        const char *stats = NULL;
        dk_error fe;
        dk_error_init(&fe);
        dk_status fs = dk_log__file_stats_err(&stats, &st.files[i], &fe);
        check_clean(fs, &fe);
        /* touch the text and the other fields the CLI prints */
        volatile size_t n = stats ? strlen(stats) : 0;
        n += strlen(st.files[i].path);
        for (uint32_t k = 0; k < st.files[i].n_pv; k++)
          if (st.files[i].pv[2 * k + 1]) n += strlen(st.files[i].pv[2 * k + 1]);
        const dk_dv_descriptor *dv = dk__file_dv(&st.files[i]);
        if (dv) n += strlen(dv->path_or_inline_dv);
        if (st.files[i].extra && st.files[i].extra->tags) n += strlen(st.files[i].extra->tags);
        (void)n;
      }
      for (size_t i = 0; s == DK_OK && i < st.n_tombs; i++) {
        volatile size_t n = strlen(st.tombs[i].path);
        if (st.tombs[i].dv) n += strlen(st.tombs[i].dv->path_or_inline_dv);
        (void)n;
      }
      dk_log__state_dispose(&st);
    }
  }
  return 0;
}
