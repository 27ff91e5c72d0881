/*
** commit.h — reading commit files (src/log/commit.c; not API): a log file's bytes, the
** newline-delimited action scanner, a commit's commitInfo and inCommitTimestamp, and the
** replay of a run of commits into a state.
**
** Follows PROTOCOL.md "Delta Log Entries", "Commit Provenance Information" and "In-Commit
** Timestamps".
*/
#ifndef DK_LOG_COMMIT_H
#define DK_LOG_COMMIT_H

#include "codec/json/json.h"
#include "log/replay.h"
#include "log/segment.h"
#include "util/exec.h"

/* Reads the log file lf (`<root>/_delta_log/<name>`) whole (free with lg->sto->free_buf). A
 * length other than the listed size (when it is known, > 0) is DK_CORRUPT. */
dk_status dk_log__read_file(const dk__log *lg, const dk__logfile *lf, uint8_t **data,
                            size_t *len, dk_error *err);

/* Parses the action lines (newline-delimited JSON) of text[0..len) in order, calling fn for
 * each until it returns false; blank lines are skipped. complete_only: text is a prefix of a
 * file, and a last line without its newline is left alone. On a line that does not parse,
 * *bad_line / *bad_off (1-based line, byte offset) name it for the caller's message. */
typedef bool (*dk__line_fn)(const dk_json_value *line, void *payload);
dk_status dk_log__scan_lines(const char *text, size_t len, bool complete_only, dk_arena *ar,
                             dk__line_fn fn, void *payload, size_t *bad_line, size_t *bad_off,
                             dk_error *err);
/* Parses one commit file; calls `fn` for each action line until it returns false. */
dk_status dk_log__scan_commit(const dk__log *lg, const dk__logfile *lf, dk_arena *ar,
                              dk__line_fn fn, void *payload, dk_error *err);
/* The commitInfo object of a commit (in `ar`), or *ci NULL when it has none. */
dk_status dk_log__commit_info(const dk_json_value **ci, const dk__log *lg, const dk__logfile *lf,
                              dk_arena *ar, dk_error *err);
/* commitInfo.inCommitTimestamp of one commit file (DK_CORRUPT when it has none). */
dk_status dk_log__commit_ict(const dk__log *lg, const dk__logfile *lf, int64_t *out,
                             dk_error *err);

/* Applies commits[0..n) (commit or compaction files) in order, parsing them on other threads
 * on lg->exec's workers when there are several. */
dk_status dk_log__apply_commits(const dk__log *lg, dk__state *st, const dk__logfile *commits,
                                size_t n, dk_error *err);

#endif /* DK_LOG_COMMIT_H */
