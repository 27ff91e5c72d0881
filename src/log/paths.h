/*
** paths.h — the Delta half of the path module (src/log/paths.c; not API): the names of the
** files in _delta_log (built and classified), their keys under a table root, sidecar and
** data-file resolution, and the canonical form of a path read from the log. Percent-coding,
** URIs and the (backend, key) resolution underneath are io/uri.h.
**
** Follows PROTOCOL.md "Delta Log Entries" (N.json, 20 digits), "Checkpoints" (N.checkpoint.
** parquet, N.checkpoint.i.n.parquet with 10-digit part numbers, N.checkpoint.<uuid>.json|
** parquet), "V2 Checkpoint" (sidecars in _delta_log/_sidecars), "Log Compaction Files"
** (x.y.compacted.json), "Version Checksum File" (N.crc) and "Last Checkpoint File"
** (_last_checkpoint).
*/
#ifndef DK_LOG_PATHS_H
#define DK_LOG_PATHS_H

#include "io/uri.h"
#include "log/segment.h"

#define DK_LOG__DIR "_delta_log"
#define DK_LOG__SIDECAR_DIR "_delta_log/_sidecars"
#define DK_LOG__LAST_CHECKPOINT "_last_checkpoint"

/* ---- names in _delta_log (appended to out) ------------------------------------------------ */

dk_status dk_log__name_commit(dk_buf *out, int64_t version, dk_error *err);
dk_status dk_log__name_checkpoint(dk_buf *out, int64_t version, dk_error *err);
dk_status dk_log__name_checkpoint_part(dk_buf *out, int64_t version, int part, int nparts,
                                       dk_error *err);
/* uuid: the 36-character text form; parquet: .parquet, else .json */
dk_status dk_log__name_checkpoint_v2(dk_buf *out, int64_t version, const char *uuid,
                                     bool parquet, dk_error *err);
dk_status dk_log__name_compaction(dk_buf *out, int64_t lo, int64_t hi, dk_error *err);
dk_status dk_log__name_crc(dk_buf *out, int64_t version, dk_error *err);
/* Classifies a _delta_log file name; false for anything else. */
bool dk_log__parse_name(const char *name, dk__logfile *out);

/* ---- keys ---------------------------------------------------------------------------------- */

/* key = "<root>/_delta_log" (cleared first). */
dk_status dk_log__dir_key(dk_buf *key, const char *root, dk_error *err);
/* key = "<root>/_delta_log/<name>" (cleared first). */
dk_status dk_log__file_key(dk_buf *key, const char *root, const char *name, dk_error *err);
/* The key of a sidecar named by a checkpoint's sidecar.path as written (percent-encoded,
** relative to _delta_log/_sidecars or an absolute URI). */
dk_status dk_log__sidecar_key(dk__loc *out, dk_buf *key, const dk__root *r, const char *path,
                              size_t n, dk_error *err);
/* The key of a data file or DV file path as the snapshot holds it (dk__file.path, decoded:
** relative to the root, an absolute local path or a URI). */
dk_status dk_log__data_key(dk__loc *out, dk_buf *key, const dk__root *r, const char *path,
                           dk_error *err);

/* ---- canonical paths ------------------------------------------------------------------------ */

/* Percent-decodes a log path (add.path, remove.path) and canonicalises it: a file URI on this
** machine becomes a local path (so file:/x and /x meet, as in Delta, whose canonicalizePath
** qualifies a scheme-less absolute path against the default filesystem: local); a path under
** the table root (root[0..root_len), the canonical
** root of io/uri.h, local or URI) becomes relative to it. Anything else stays absolute (a
** file URI naming another host is kept whole; reading it is refused later). The result lives
** in `ar`. */
dk_status dk_log__canonical_path(const char **out, size_t *out_len, dk_arena *ar,
                                 const char *root, size_t root_len, const char *p, size_t n,
                                 dk_error *err);

#endif /* DK_LOG_PATHS_H */
