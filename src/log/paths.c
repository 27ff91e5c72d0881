/*
** paths.c — the Delta half of the path module (log/paths.h): names of the files in
** _delta_log, their keys under a table root, sidecar and data-file resolution, canonical log
** paths. Everything that spells "_delta_log" or a log file name lives here.
**
** Follows PROTOCOL.md "Delta Log Entries", "Checkpoints" (classic, multi-part, V2), "V2
** Checkpoint" (sidecar files in _delta_log/_sidecars; sidecar.path "relative to the
** _delta_log/_sidecars directory" or absolute), "Log Compaction Files", "Version Checksum
** File", "Last Checkpoint File", and "Add File and Remove File" (path: a URI, relative to the
** table root or absolute, percent-encoded).
*/
#include <inttypes.h>

#include "log/paths.h"

/* ---- names --------------------------------------------------------------------------------- */

dk_status dk_log__name_commit(dk_buf *out, int64_t version, dk_error *err) {
  return dk__buf_printf(out, err, "%020" PRId64 ".json", version);
}

dk_status dk_log__name_checkpoint(dk_buf *out, int64_t version, dk_error *err) {
  return dk__buf_printf(out, err, "%020" PRId64 ".checkpoint.parquet", version);
}

dk_status dk_log__name_checkpoint_part(dk_buf *out, int64_t version, int part, int nparts,
                                       dk_error *err) {
  DK_RETURN_IF(part < 1 || nparts < 1 || part > nparts, DK_INVALID, err,
               "checkpoint part %d of %d", part, nparts);
  return dk__buf_printf(out, err, "%020" PRId64 ".checkpoint.%010d.%010d.parquet", version, part,
                        nparts);
}

dk_status dk_log__name_checkpoint_v2(dk_buf *out, int64_t version, const char *uuid,
                                     bool parquet, dk_error *err) {
  DK_RETURN_IF(!uuid || !*uuid || strchr(uuid, '.') || strchr(uuid, '/'), DK_INVALID, err,
               "V2 checkpoint: bad UUID '%s'", uuid ? uuid : "");
  return dk__buf_printf(out, err, "%020" PRId64 ".checkpoint.%s.%s", version, uuid,
                        parquet ? "parquet" : "json");
}

dk_status dk_log__name_compaction(dk_buf *out, int64_t lo, int64_t hi, dk_error *err) {
  DK_RETURN_IF(lo < 0 || hi < lo, DK_INVALID, err, "compaction of versions %" PRId64 "..%" PRId64,
               lo, hi);
  return dk__buf_printf(out, err, "%020" PRId64 ".%020" PRId64 ".compacted.json", lo, hi);
}

dk_status dk_log__name_crc(dk_buf *out, int64_t version, dk_error *err) {
  return dk__buf_printf(out, err, "%020" PRId64 ".crc", version);
}

static bool digits(const char *s, size_t n, int64_t *out) {
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return n > 0;
}

static bool ends_with(const char *s, size_t n, const char *suf) {
  size_t k = strlen(suf);
  return n >= k && memcmp(s + n - k, suf, k) == 0;
}

bool dk_log__parse_name(const char *name, dk__logfile *out) {
  size_t n = strlen(name);
  memset(out, 0, sizeof *out);
  if (n < 21 || name[20] != '.' || !digits(name, 20, &out->version)) return false;
  out->version_hi = out->version;
  const char *rest = name + 21;
  size_t rn = n - 21;
  if (rn == 4 && !memcmp(rest, "json", 4)) {
    out->kind = DK__LF_COMMIT;
    return true;
  }
  if (rn == 3 && !memcmp(rest, "crc", 3)) {
    out->kind = DK__LF_CRC;
    return true;
  }
  if (rn == 18 && !memcmp(rest, "checkpoint.parquet", 18)) {
    out->kind = DK__LF_CP_CLASSIC;
    return true;
  }
  /* x.y.compacted.json */
  if (rn == 20 + 15 && digits(rest, 20, &out->version_hi) &&
      !memcmp(rest + 20, ".compacted.json", 15)) {
    out->kind = DK__LF_COMPACTION;
    return out->version_hi >= out->version;
  }
  if (rn > 11 && !memcmp(rest, "checkpoint.", 11)) {
    const char *c = rest + 11;
    size_t cn = rn - 11;
    int64_t i, k;
    /* i.n.parquet with 10-digit i and n */
    if (cn == 10 + 1 + 10 + 8 && digits(c, 10, &i) && c[10] == '.' && digits(c + 11, 10, &k) &&
        !memcmp(c + 21, ".parquet", 8)) {
      if (i < 1 || k < 1 || i > k || k > 1000000) return false;
      out->kind = DK__LF_CP_MULTI;
      out->part = (int)i;
      out->nparts = (int)k;
      return true;
    }
    /* <uuid>.json | <uuid>.parquet */
    if (ends_with(c, cn, ".json") && cn > 5) {
      out->kind = DK__LF_CP_V2_JSON;
      return memchr(c, '.', cn - 5) == NULL;
    }
    if (ends_with(c, cn, ".parquet") && cn > 8) {
      out->kind = DK__LF_CP_V2_PARQUET;
      return memchr(c, '.', cn - 8) == NULL;
    }
  }
  return false;
}

bool dk_log__name_version_overflows(const char *name) {
  int64_t v;
  size_t n = strspn(name, "0123456789");
  return n == 20 && name[20] == '.' && !digits(name, 20, &v);
}

/* ---- keys ---------------------------------------------------------------------------------- */

dk_status dk_log__dir_key(dk_buf *key, const char *root, dk_error *err) {
  dk__buf_clear(key);
  return dk_io__join(key, root, DK_LOG__DIR, NULL, err);
}

dk_status dk_log__file_key(dk_buf *key, const char *root, const char *name, dk_error *err) {
  dk__buf_clear(key);
  return dk_io__join(key, root, DK_LOG__DIR, name, err);
}

dk_status dk_log__sidecar_key(dk__loc *out, dk_buf *key, const dk__root *r, const char *path,
                              size_t n, dk_error *err) {
  return dk_io__resolve_encoded(out, key, r, DK_LOG__SIDECAR_DIR, path, n, err);
}

dk_status dk_log__data_key(dk__loc *out, dk_buf *key, const dk__root *r, const char *path,
                           dk_error *err) {
  return dk_io__resolve(out, key, r, NULL, path, strlen(path), err);
}

/* ---- canonical paths ------------------------------------------------------------------------ */

dk_status dk_log__canonical_path(const char **out, size_t *out_len, dk_arena *ar,
                                 const char *root, size_t root_len, const char *p, size_t n,
                                 dk_error *err) {
  char *d = dk__arena_alloc(ar, n + 1, err);
  if (!d) return DK_NOMEM;
  size_t len = dk__pct_decode_into(d, p, n, 0);
  DK_RETURN_NOT_OK(dk_io__check_path_bytes(d, len, "log: path", err));
  const char *s = d;
  if (len >= 5 && (s[0] | 0x20) == 'f' && s[4] == ':') {
    dk__uri u;
    if (dk__uri_split(&u, s, len) && dk__scheme_is(u.scheme, "file")) {
      bool here = !u.authority.ptr || u.authority.len == 0 ||
                  (u.authority.len == 9 && !memcmp(u.authority.ptr, "localhost", 9));
      /* file:../x, file:x: a file URI has an absolute path (RFC 8089) */
      if (!u.path.len || u.path.ptr[0] != '/')
        return dk__error_set(err, DK_CORRUPT, "log: invalid file URI '%s' (not absolute)", d);
      if (here) { /* file:/x, file:///x, file://localhost/x: the local path /x */
        len = u.path.len;
        s = u.path.ptr;
      }
    }
  }
  if (root_len > 0 && len > root_len + 1 && memcmp(s, root, root_len) == 0 &&
      s[root_len] == '/') {
    s += root_len + 1;
    len -= root_len + 1;
  }
  *out = s;
  *out_len = len;
  return DK_OK;
}
