/*
** checkpoint.h — reading checkpoints into a replay state (not API): Parquet checkpoint files
** (src/log/checkpoint_parquet.c) and their add/remove rows straight from the Parquet leaves
** (src/log/checkpoint_direct.c).
**
** Follows PROTOCOL.md "Checkpoints", "Checkpoint Schema" and "V2 Checkpoint".
*/
#ifndef DK_LOG_CHECKPOINT_H
#define DK_LOG_CHECKPOINT_H

#include "dk/parquet.h"
#include "log/replay.h"
#include "log/segment.h"

/* Applies the checkpoint of `seg` (all parts, then the sidecars they name) to an empty state. */
dk_status dk_log__apply_checkpoint(const dk__log *lg, dk__state *st, const dk__segment *seg,
                                   dk_error *err);

/* Reads the actions of a Parquet checkpoint file (classic part, v2 top-level file or
 * sidecar), key on sto (size > 0: its size, trusted), and applies them with
 * DK__FROM_CHECKPOINT. Sidecar actions found are appended to `sidecars` as JSON objects when
 * non-NULL. */
dk_status dk_log__apply_parquet_checkpoint(dk__state *st, dk_storage *sto, const char *key,
                                           int64_t size, dk_buf *sidecars, dk_error *err);

/* checkpoint_direct.c: a checkpoint's add and remove rows straight from the Parquet leaves.
 * Open fails with DK_UNSUPPORTED (nothing applied) for a layout it does not read. The pass
 * applies every row, recording in rowmap[row] the st->files position of each add row; with a
 * multi-threaded st->exec the next batch is read ahead on it and, after the last batch,
 * after(after_arg) runs there (*after_ran tells whether it did). */
typedef struct dk__direct dk__direct;
dk_status dk_log__direct_open(dk__direct **out, dk_parquet_file *pf, const dk_allocator *alloc,
                              bool with_remove, dk_error *err);
dk_status dk_log__direct_pass(dk__state *st, dk__direct *d, uint32_t *rowmap, int64_t nrows,
                              void (*after)(void *), void *after_arg, bool *after_ran,
                              dk_error *err);
void dk_log__direct_free(dk__direct *d);

#endif /* DK_LOG_CHECKPOINT_H */
