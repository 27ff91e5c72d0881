/*
** protocol.h — reader-side protocol checks (src/protocol/protocol.c; not API).
**
** Follows PROTOCOL.md "Protocol Evolution" and "Table Features".
*/
#ifndef DK_PROTOCOL_PROTOCOL_H
#define DK_PROTOCOL_PROTOCOL_H

#include "dk/snapshot.h"
#include "util/util.h"

/* DK_UNSUPPORTED naming the version or reader feature dk cannot read. */
dk_status dk_protocol__check_read(const dk_protocol *p, dk_error *err);
int dk_protocol__has_feature(const dk_protocol *p, const char *name);

#endif /* DK_PROTOCOL_PROTOCOL_H */
