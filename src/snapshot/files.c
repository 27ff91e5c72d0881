/*
** files.c — reading a snapshot's active files with their statistics: the file iterator
** (dk_file_iter), which owns the buffer its stats pointers point into and an optional
** read-ahead on the table's executor, and the copy of one file's stats into a caller buffer.
**
** Follows PROTOCOL.md "Add File and Remove File" (the add action's fields) and "Per-file
** Statistics" (stats as the JSON text the log holds).
*/
#include <inttypes.h>
#include <stdio.h>

#include "snapshot/snapshot_int.h"

struct dk_file_iter {
  dk_snapshot *snap;        /* a reference */
  const dk_allocator *alloc;
  int64_t pos;              /* next file */
  int with_stats;
  dk__stats_reader sr;
  dk_file_entry entry;      /* the entry handed out last */
};

dk_status dk_snapshot_files_open(dk_file_iter **out, const dk_snapshot *s,
                                 const dk_file_iter_options *opts, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!s, DK_INVALID, err, "dk_snapshot_files_open: NULL snapshot");
  DK_CHECK_OPTIONS_VERSION(opts, DK_FILE_ITER_OPTIONS_VERSION, "dk_snapshot_files_open", err);
  DK_RETURN_NOT_OK(dk_snapshot__check_file_index(s, 0, true, err));
  const dk_allocator *alloc = s->table->alloc;
  dk_file_iter *it = dk__calloc(alloc, 1, sizeof *it);
  if (!it) return dk__error_set(err, DK_NOMEM, "out of memory (file iterator)");
  it->snap = dk_snapshot_ref((dk_snapshot *)s); /* the count is the only thing that changes */
  it->alloc = alloc;
  it->with_stats = !(opts && opts->skip_stats);
  dk_log__stats_reader_init(&it->sr, alloc,
                            opts && opts->no_read_ahead ? NULL : s->table->exec);
  *out = it;
  return DK_OK;
}

dk_status dk_file_iter_next(const dk_file_entry **entry, dk_file_iter *it, dk_error *err) {
  *entry = NULL;
  if ((size_t)it->pos >= it->snap->files.n) return DK_OK;
  dk_snapshot__fill_entry(&it->entry, it->snap, it->pos);
  if (it->with_stats)
    DK_RETURN_NOT_OK(dk_log__stats_get(&it->entry.stats, &it->sr,
                                       dk_snapshot__file_at(it->snap, it->pos), err));
  it->pos++;
  *entry = &it->entry;
  return DK_OK;
}

dk_status dk_file_iter_seek(dk_file_iter *it, int64_t i, dk_error *err) {
  DK_RETURN_NOT_OK(dk_snapshot__check_file_index(it->snap, i, true, err));
  it->pos = i;
  return DK_OK;
}

void dk_file_iter_free(dk_file_iter *it) {
  if (!it) return;
  dk_log__stats_reader_dispose(&it->sr);
  dk_snapshot_free(it->snap);
  dk__free(it->alloc, it);
}

dk_status dk_snapshot_file_stats(char *buf, size_t cap, int64_t *len, const dk_snapshot *s,
                                 int64_t i, dk_error *err) {
  *len = -1;
  if (cap) buf[0] = 0;
  DK_RETURN_NOT_OK(dk_snapshot__check_file_index(s, i, false, err));
  dk__stats_reader sr;
  dk_log__stats_reader_init(&sr, s->table->alloc, NULL);
  const char *text;
  dk_status st = dk_log__stats_get(&text, &sr, dk_snapshot__file_at(s, i), err);
  if (st == DK_OK && text) {
    size_t n = strlen(text);
    *len = (int64_t)n;
    if (cap) {
      size_t k = n < cap ? n : cap - 1;
      memcpy(buf, text, k);
      buf[k] = 0;
    }
  }
  dk_log__stats_reader_dispose(&sr);
  return st;
}
