/*
** lastcp.h — the checksum of the `_last_checkpoint` file (src/log/lastcp.c; not API).
** PROTOCOL.md "Last Checkpoint File" (the optional `checksum` field) and "JSON checksum".
*/
#ifndef DK_LOG_LASTCP_H
#define DK_LOG_LASTCP_H

#include "codec/json/json.h"
#include "util/util.h"

/* out = the 32 lowercase hex digits of the MD5 of root's canonical form (the top-level
 * "checksum" member left out). DK_INVALID when an object repeats a key (such a file is
 * invalid), DK_NOMEM. */
dk_status dk_log__last_checkpoint_checksum(char out[33], const dk_json_value *root,
                                           const dk_allocator *alloc, dk_error *err);

#endif /* DK_LOG_LASTCP_H */
