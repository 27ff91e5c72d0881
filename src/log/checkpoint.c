/*
** checkpoint.c — applying a segment's checkpoint to an empty replay state: every part of a
** classic or multi-part checkpoint, a V2 top-level file (JSON or Parquet), then the sidecars
** it names.
**
** Follows PROTOCOL.md "Checkpoints" and "V2 Checkpoint" (checkpoint first, then sidecars;
** relative sidecar paths are under _delta_log/_sidecars, absolute ones stay so).
*/
#include "log/checkpoint.h"
#include "log/commit.h"
#include "log/paths.h"

static dk_status apply_sidecars(const dk__log *lg, dk__state *st, dk_error *err) {
  if (!st->sidecars.len) return DK_OK;
  dk_buf names, key;
  dk__buf_init(&names, lg->alloc);
  dk__buf_init(&key, lg->alloc);
  dk_status s = dk__buf_append(&names, st->sidecars.data, st->sidecars.len, err);
  dk__buf_clear(&st->sidecars);
  dk__root root;
  dk_io__root_init(&root, lg->root, lg->sto);
  for (size_t off = 0; s == DK_OK && off < names.len;) {
    const char *nm = names.data + off;
    size_t nl = strlen(nm);
    off += nl + 1;
    /* relative sidecar paths are relative to _delta_log/_sidecars, absolute ones stay so */
    dk__loc loc;
    s = dk_log__sidecar_key(&loc, &key, &root, nm, nl, err);
    if (s == DK_OK) s = dk_log__apply_parquet_checkpoint(st, loc.sto, key.data, 0, NULL, err);
  }
  dk__buf_dispose(&key);
  dk__buf_dispose(&names);
  return s;
}

dk_status dk_log__apply_checkpoint(const dk__log *lg, dk__state *st, const dk__segment *seg,
                                   dk_error *err) {
  st->cur_version = seg->cp_version;
  st->exec = lg->exec;
  dk_log__state_begin_checkpoint(st);
  dk_buf key;
  dk__buf_init(&key, lg->alloc);
  dk_status s = DK_OK;
  for (size_t i = 0; i < seg->n_cp && s == DK_OK; i++) {
    const dk__logfile *f = &seg->cp_files[i];
    s = dk_log__file_key(&key, lg->root, f->name, err);
    if (s != DK_OK) break;
    if (f->kind == DK__LF_CP_V2_JSON) {
      uint8_t *data;
      size_t len;
      s = dk_log__read_file(lg, f, &data, &len, err);
      if (s == DK_OK) {
        s = dk_log__apply_json_file(st, (const char *)data, len, DK__FROM_CHECKPOINT, key.data,
                                    err);
        lg->sto->free_buf(lg->sto, data);
      }
    } else {
      /* the listing's size saves a stat */
      s = dk_log__apply_parquet_checkpoint(st, lg->sto, key.data, f->size, NULL, err);
    }
  }
  dk__buf_dispose(&key);
  DK_RETURN_NOT_OK(s);
  DK_RETURN_NOT_OK(apply_sidecars(lg, st, err));
  dk_log__state_end_checkpoint(st);
  return DK_OK;
}
