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

#include "blob_storage.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  blob_storage bs;
  blob_storage_init(&bs, data, size);
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
      dk__stats_reader sr;
      dk_log__stats_reader_init(&sr, NULL, NULL);
      for (size_t i = 0; s == DK_OK && i < st.n_files; i++) {
        const char *stats = NULL;
        dk_error fe;
        dk_error_init(&fe);
        dk_status fs = dk_log__stats_get(&stats, &sr, &st.files[i], &fe);
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
      dk_log__stats_reader_dispose(&sr);
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
