/*
** error.c — dk_status names and the caller-owned dk_error record.
**
** The first error recorded wins: deeper code knows the cause, outer code adds context
** with dk__error_prefix (for example the file name), never replacing the cause.
*/
#include <stdio.h>

#include "util/util.h"

int dk_version_number(void) { return DK_VERSION_NUMBER; }

const char *dk_status_str(dk_status s) {
  switch (s) {
    case DK_OK: return "ok";
    case DK_NOMEM: return "out of memory";
    case DK_INVALID: return "invalid argument";
    case DK_IO: return "i/o error";
    case DK_NOT_FOUND: return "not found";
    case DK_CORRUPT: return "corrupt";
    case DK_UNSUPPORTED: return "unsupported";
    case DK_CONFLICT: return "conflict";
    case DK_CANCELLED: return "cancelled";
    case DK_CALLBACK: return "callback failed";
    case DK_INTERNAL: return "internal error";
    case DK_OUT_OF_RANGE: return "out of range";
  }
  return "unknown status";
}

void dk_error_init(dk_error *err) {
  if (!err) return;
  err->code = DK_OK;
  err->message[0] = 0;
}

dk_status dk__error_vset(dk_error *err, dk_status code, const char *fmt, va_list ap) {
  if (!err || err->code != DK_OK) return code;
  err->code = code;
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  return code;
}

dk_status dk__error_set(dk_error *err, dk_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dk__error_vset(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void dk__error_prefix(dk_error *err, const char *fmt, ...) {
  if (!err || err->code == DK_OK) return;
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  char tmp[DK_ERROR_MESSAGE_SIZE];
  snprintf(tmp, sizeof tmp, "%s: %s", prefix, err->message);
  memcpy(err->message, tmp, sizeof tmp);
}
