/*
** checkpoint.c — applying a segment's checkpoint to an empty replay state: every part of a
** classic or multi-part checkpoint, a V2 top-level file (JSON or Parquet), then the sidecars
** it names.
**
** Follows PROTOCOL.md "Checkpoints" and "V2 Checkpoint" (checkpoint first, then sidecars;
** relative sidecar paths are under _delta_log/_sidecars, absolute ones stay so).
*/
#include <stdio.h>

#include "log/checkpoint.h"
#include "log/commit.h"

static dk_status apply_sidecars(const dk__log *lg, dk__state *st, dk_error *err) {
  if (!st->sidecars.len) return DK_OK;
  dk_buf names;
  dk__buf_init(&names, lg->alloc);
  dk_status s = dk__buf_append(&names, st->sidecars.data, st->sidecars.len, err);
  dk__buf_clear(&st->sidecars);
  for (size_t off = 0; s == DK_OK && off < names.len;) {
    const char *nm = names.data + off;
    size_t nl = strlen(nm);
    off += nl + 1;
    const char *p;
    size_t pl;
    dk_arena tmp;
    dk__arena_init(&tmp, lg->alloc, 4096);
    /* relative sidecar paths are relative to _delta_log/_sidecars, absolute ones stay so */
    s = dk_log__canonical_path(&p, &pl, &tmp, "", 0, nm, nl, err);
    if (s == DK_OK) {
      char path[4096];
      if (p[0] == '/')
        snprintf(path, sizeof path, "%s", p);
      else
        snprintf(path, sizeof path, "%s/_delta_log/_sidecars/%s", lg->root, p);
      s = dk_log__apply_parquet_checkpoint(st, path, NULL, err);
    }
    dk__arena_dispose(&tmp);
  }
  dk__buf_dispose(&names);
  return s;
}

dk_status dk_log__apply_checkpoint(const dk__log *lg, dk__state *st, const dk__segment *seg,
                                   dk_error *err) {
  st->cur_version = seg->cp_version;
  st->threads = lg->threads;
  dk_log__state_begin_checkpoint(st);
  for (size_t i = 0; i < seg->n_cp; i++) {
    const dk__logfile *f = &seg->cp_files[i];
    if (f->kind == DK__LF_CP_V2_JSON) {
      uint8_t *data;
      size_t len;
      DK_RETURN_NOT_OK(dk_log__read_file(lg, f->name, &data, &len, err));
      char label[4200];
      snprintf(label, sizeof label, "%s/_delta_log/%s", lg->root, f->name);
      dk_status s =
          dk_log__apply_json_file(st, (const char *)data, len, DK__FROM_CHECKPOINT, label, err);
      lg->sto->free_buf(lg->sto, data);
      DK_RETURN_NOT_OK(s);
    } else {
      char path[4200];
      snprintf(path, sizeof path, "%s/_delta_log/%s", lg->root, f->name);
      DK_RETURN_NOT_OK(dk_log__apply_parquet_checkpoint(st, path, NULL, err));
    }
  }
  DK_RETURN_NOT_OK(apply_sidecars(lg, st, err));
  dk_log__state_end_checkpoint(st);
  return DK_OK;
}

