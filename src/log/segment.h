/*
** segment.h — log files and segments (src/log/segment.c; not API): classifying the names in
** _delta_log and choosing the files that build one version.
**
** Follows PROTOCOL.md "Delta Log Entries", "Checkpoints", "Log Compaction Files", "Version
** Checksum File" and "Last Checkpoint File".
*/
#ifndef DK_LOG_SEGMENT_H
#define DK_LOG_SEGMENT_H

#include "dk/sys/storage.h"
#include "util/exec.h"
#include "util/util.h"

/* A table's log as the readers of src/log/ see it (borrowed). */
typedef struct dk__log {
  dk_storage *sto;
  const char *root;          /* table root, without trailing slash */
  const dk_allocator *alloc;
  dk__exec *exec;            /* the table's executor (NULL: no threads) */
} dk__log;

typedef enum dk__logfile_kind {
  DK__LF_COMMIT = 1,        /* N.json */
  DK__LF_CP_CLASSIC,        /* N.checkpoint.parquet */
  DK__LF_CP_MULTI,          /* N.checkpoint.i.n.parquet */
  DK__LF_CP_V2_JSON,        /* N.checkpoint.<uuid>.json */
  DK__LF_CP_V2_PARQUET,     /* N.checkpoint.<uuid>.parquet */
  DK__LF_COMPACTION,        /* x.y.compacted.json */
  DK__LF_CRC                /* N.crc */
} dk__logfile_kind;

typedef struct dk__logfile {
  const char *name;         /* file name inside _delta_log (arena) */
  int64_t version;          /* N (x for compactions) */
  int64_t version_hi;       /* y for compactions, else N */
  int64_t size;
  int64_t mtime;
  int kind;                 /* dk__logfile_kind */
  int part, nparts;         /* multi-part checkpoints */
} dk__logfile;

/* The log files needed to build one version. */
typedef struct dk__segment {
  int64_t version;          /* the version the segment builds */
  int64_t cp_version;       /* -1: replay from version 0 */
  dk__logfile *cp_files;    /* checkpoint part(s), n_cp of them (multi-part in part order) */
  size_t n_cp;
  dk__logfile *commits;     /* commits cp_version+1 .. version, ascending */
  size_t n_commits;
  int64_t latest_version;   /* newest version present in the listing */
  int64_t earliest_version; /* oldest version that can be recreated */
  dk__logfile *crc;         /* version.crc when present, else NULL */
  dk__logfile *all;         /* every classified file, sorted by name (owned) */
  size_t n_all;
  dk_arena names;
  const dk_allocator *alloc;
} dk__segment;

/* Lists `<root>/_delta_log` and builds the segment for `version` (-1 = latest). With
 * `min_version` >= 0 only versions > min_version are needed (incremental refresh): the
 * segment then has no checkpoint and starts at min_version + 1. */
dk_status dk_log__segment_build(dk__segment *seg, dk_storage *sto, const char *root,
                                int64_t version, int64_t min_version,
                                const dk_allocator *alloc, dk_error *err);
void dk_log__segment_dispose(dk__segment *seg);
/* Lists every classified file of `<root>/_delta_log` into seg->all (sorted); nothing else. */
dk_status dk_log__list_all(dk__segment *seg, dk_storage *sto, const char *root,
                           const dk_allocator *alloc, dk_error *err);

/* The commit files of a listing, ascending: *out (free with dk__free) points into seg->all. */
dk_status dk_log__commit_list(const dk__segment *seg, const dk__logfile ***out, size_t *n,
                              const dk_allocator *alloc, dk_error *err);

#endif /* DK_LOG_SEGMENT_H */
