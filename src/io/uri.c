/*
** uri.c — percent-coding (RFC 3986 §2.1), URI splitting (§3), table roots and the resolution of
** log paths to (backend, key) of io/uri.h.
**
** Follows PROTOCOL.md "Add File and Remove File" (`path`: "a URI ... relative to the root of
** the table, or an absolute URI", percent-encoded), "Deletion Vector Descriptor Schema"
** ('p': an absolute path) and "V2 Checkpoint" ("sidecar" paths relative to
** _delta_log/_sidecars), and RFC 8089 for file URIs (an empty authority or "localhost" is
** the local machine; any other host is not reachable and refused).
*/
#include "io/uri.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---- percent-coding ---------------------------------------------------------------------- */

dk_status dk__pct_decode(dk_buf *out, const char *s, size_t n, int flags, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_reserve(out, n + 1, err));
  if (!(flags & DK__PCT_STRICT)) {
    out->len += dk__pct_decode_into(out->data + out->len, s, n, flags);
    return DK_OK;
  }
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int v = dk__pct_escape_at(s, n, i);
      DK_RETURN_IF(v < 0, DK_CORRUPT, err, "bad percent escape at character %zu of \"%.*s\"", i,
                   (int)DK_MIN(n, 256), s);
      DK_RETURN_IF(v == 0, DK_CORRUPT, err, "%%00 at character %zu of \"%.*s\"", i,
                   (int)DK_MIN(n, 256), s);
      c = (char)v;
      i += 2;
    }
    out->data[out->len++] = c;
  }
  out->data[out->len] = 0;
  return DK_OK;
}

static bool keep_unencoded(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         (ch && strchr("-._~/!$&'()*+,;=:@", ch));
}

dk_status dk__pct_encode(dk_buf *out, const char *s, size_t n, dk_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  DK_RETURN_NOT_OK(dk__buf_reserve(out, n, err));
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (keep_unencoded(ch)) {
      DK_RETURN_NOT_OK(dk__buf_putc(out, (char)ch, err));
    } else {
      char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      DK_RETURN_NOT_OK(dk__buf_append(out, e, 3, err));
    }
  }
  return DK_OK;
}

/* ---- URI splitting ----------------------------------------------------------------------- */

bool dk__scheme_is(dk_str scheme, const char *lower) {
  size_t k = strlen(lower);
  if (scheme.len != k) return false;
  for (size_t i = 0; i < k; i++) {
    char c = scheme.ptr[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool dk__uri_split(dk__uri *out, const char *s, size_t n) {
  memset(out, 0, sizeof *out);
  size_t i = 0;
  if (n > 0 && is_alpha(s[0])) {
    i = 1;
    while (i < n && (is_alpha(s[i]) || (s[i] >= '0' && s[i] <= '9') || s[i] == '+' ||
                     s[i] == '-' || s[i] == '.'))
      i++;
  }
  dk_str scheme = {s, i};
  bool has_scheme = i >= 2 && i < n && s[i] == ':' &&
                    (dk__scheme_is(scheme, "file") || (n - i >= 3 && s[i + 1] == '/' && s[i + 2] == '/'));
  if (!has_scheme) {
    out->path = (dk_str){s, n};
    return false;
  }
  out->scheme = scheme;
  size_t p = i + 1;
  if (n - p >= 2 && s[p] == '/' && s[p + 1] == '/') {
    const char *a = s + p + 2;
    const char *slash = memchr(a, '/', n - p - 2);
    size_t alen = slash ? (size_t)(slash - a) : n - p - 2;
    out->authority = (dk_str){a, alen};
    p += 2 + alen;
  }
  out->path = (dk_str){s + p, n - p};
  return true;
}

/* ---- table roots ------------------------------------------------------------------------- */

static bool local_authority(dk_str a) {
  return !a.ptr || a.len == 0 || (a.len == 9 && !memcmp(a.ptr, "localhost", 9));
}

/* Drops trailing '/' of b (keeping a lone "/" and, for URIs, everything up to the path). */
static void trim_slashes(dk_buf *b, size_t keep) {
  while (b->len > keep + 1 && b->data[b->len - 1] == '/') b->data[--b->len] = 0;
  if (b->len == keep + 1 && keep > 0 && b->data[keep] == '/') b->data[--b->len] = 0;
}

dk_status dk_io__root_canonical(char **out, size_t *scheme_len, const char *uri,
                                const dk_allocator *a, dk_error *err) {
  *out = NULL;
  *scheme_len = 0;
  DK_RETURN_IF(!uri || !*uri, DK_INVALID, err, "empty table URI");
  size_t n = strlen(uri);
  dk__uri u;
  bool has_scheme = dk__uri_split(&u, uri, n);
  dk_buf b;
  dk__buf_init(&b, a);
  dk_status st = DK_OK;
  size_t keep = 0;
  if (!has_scheme) {
    st = dk__buf_append(&b, uri, n, err);
  } else if (dk__scheme_is(u.scheme, "file")) {
    if (!local_authority(u.authority))
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "table URI '%s': a file URI naming host '%.*s' is not on this machine",
                         uri, (int)u.authority.len, u.authority.ptr);
    else if (!u.path.len || u.path.ptr[0] != '/')
      st = dk__error_set(err, DK_INVALID, "table URI '%s': a file URI needs an absolute path",
                         uri);
    else
      st = dk__pct_decode(&b, u.path.ptr, u.path.len, DK__PCT_STRICT, err);
  } else {
    for (size_t i = 0; !st && i < u.scheme.len; i++) {
      char c = u.scheme.ptr[i];
      st = dk__buf_putc(&b, (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c), err);
    }
    if (!st) st = dk__buf_puts(&b, "://", err);
    if (!st && u.authority.ptr) st = dk__buf_append(&b, u.authority.ptr, u.authority.len, err);
    keep = b.len;
    if (!st) st = dk__pct_decode(&b, u.path.ptr, u.path.len, DK__PCT_STRICT, err);
    *scheme_len = u.scheme.len;
  }
  if (st) {
    dk__buf_dispose(&b);
    if (st == DK_CORRUPT) { /* a bad escape in the caller's URI is a bad argument */
      if (err) err->code = DK_INVALID;
      st = DK_INVALID;
    }
    return st;
  }
  trim_slashes(&b, keep);
  DK_RETURN_IF(b.len == 0, DK_INVALID, err, "table URI '%s' has no path", uri);
  *out = dk__buf_detach(&b);
  return *out ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
}

void dk_io__root_init(dk__root *r, const char *canonical_uri, dk_storage *sto) {
  memset(r, 0, sizeof *r);
  r->uri = canonical_uri;
  r->len = strlen(canonical_uri);
  r->sto = sto;
  dk__uri u;
  if (dk__uri_split(&u, canonical_uri, r->len) && !dk__scheme_is(u.scheme, "file")) {
    r->scheme_len = u.scheme.len;
  }
}

dk_status dk_io__join(dk_buf *key, const char *root, const char *a, const char *b,
                      dk_error *err) {
  size_t rl = strlen(root);
  DK_RETURN_NOT_OK(dk__buf_append(key, root, rl, err));
  if (!(rl == 1 && root[0] == '/')) DK_RETURN_NOT_OK(dk__buf_putc(key, '/', err));
  DK_RETURN_NOT_OK(dk__buf_puts(key, a, err));
  if (!b) return DK_OK;
  DK_RETURN_NOT_OK(dk__buf_putc(key, '/', err));
  return dk__buf_puts(key, b, err);
}

static bool is_s3(dk_str s) {
  return dk__scheme_is(s, "s3") || dk__scheme_is(s, "s3a") || dk__scheme_is(s, "s3n");
}

/* Whether two schemes name the same store (case-insensitive; s3, s3a and s3n are one). */
static bool same_store(dk_str a, dk_str b) {
  if (is_s3(a) && is_s3(b)) return true;
  if (a.len != b.len) return false;
  for (size_t i = 0; i < a.len; i++) {
    char x = a.ptr[i], y = b.ptr[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

/* Whether the remainder after the root prefix stays inside it: no "." or ".." segment. */
static bool stays_inside(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] != '/') j++;
    size_t l = j - i;
    if ((l == 1 && s[i] == '.') || (l == 2 && s[i] == '.' && s[i + 1] == '.')) return false;
    i = j + 1;
  }
  return true;
}

/* Whether key (same form as the root) names something strictly below the root, and below
** its subdirectory sub (NULL or "": the root itself). */
static bool key_under_root(const dk__root *r, const char *sub, const char *key, size_t kn) {
  const char *ru = r->uri;
  size_t rl = r->len;
  if (r->scheme_len) { /* s3a://b/t/x lies under s3://b/t: compare past the scheme (one store) */
    const char *colon = memchr(key, ':', kn);
    if (!colon) return false;
    kn -= (size_t)(colon - key);
    key = colon;
    ru += r->scheme_len;
    rl -= r->scheme_len;
  }
  bool slash_root = rl == 1 && ru[0] == '/';
  size_t off = slash_root ? 1 : rl + 1; /* where the part below the root starts */
  if (!(kn > off && !memcmp(key, ru, rl) && (slash_root || key[rl] == '/') &&
        stays_inside(key + off, kn - off)))
    return false;
  size_t sl = sub ? strlen(sub) : 0;
  return sl == 0 || (kn - off > sl + 1 && !memcmp(key + off, sub, sl) && key[off + sl] == '/');
}

/* Whether any of the 8 bytes of w is below 0x20 or is 0x7f: the "has a byte less than n"
** word test (exact for n <= 128: a borrow only ever follows a byte that already matched),
** applied to w and to w ^ 0x7f..7f (0x7f becomes 0). */
static inline bool word_has_control(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t d = w ^ (0x7f * ones);
  return (((w - 0x20 * ones) & ~w) | ((d - ones) & ~d)) & highs;
}

static inline bool at_has_control(const char *p) {
#ifdef __SSE2__
  /* min(x, 0x1f) == x marks bytes <= 0x1f, x == 0x7f the DEL */
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7f)));
  return _mm_movemask_epi8(bad) != 0;
#else
  uint64_t a, b;
  memcpy(&a, p, 8);
  memcpy(&b, p + 8, 8);
  return word_has_control(a) || word_has_control(b);
#endif
}

/* Whether s[0..n) holds a control byte. Paths are checked on every snapshot load, one per file:
** sixteen bytes a step (the last step overlapping the one before), eight for short paths. */
static inline bool has_control(const char *s, size_t n) {
  if (n >= 16) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
      if (at_has_control(s + i)) return true;
    return i < n && at_has_control(s + n - 16);
  }
  uint64_t w;
  if (n >= 8) {
    memcpy(&w, s, 8);
    if (word_has_control(w)) return true;
    memcpy(&w, s + n - 8, 8);
    return word_has_control(w);
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return true;
  return false;
}

__attribute__((cold, noinline))
static dk_status control_byte_error(const char *s, size_t n, const char *what, dk_error *err) {
  size_t i = 0;
  while (i < n && (unsigned char)s[i] >= 0x20 && s[i] != 0x7f) i++;
  return dk__error_set(err, DK_CORRUPT,
                       "%s '%.*s': control byte 0x%02x at character %zu (a corrupt path, not a "
                       "shorter one)", what, (int)DK_MIN(i, 256), s, (unsigned char)s[i], i);
}

dk_status dk_io__check_path_bytes(const char *s, size_t n, const char *what, dk_error *err) {
  return has_control(s, n) ? control_byte_error(s, n, what, err) : DK_OK;
}

dk_status dk_io__resolve(dk__loc *out, dk_buf *key, const dk__root *r, const char *rel_dir,
                         const char *path, size_t n, dk_error *err) {
  out->sto = r->sto;
  out->under_root = false;
  dk__buf_clear(key);
  DK_RETURN_IF(n == 0, DK_CORRUPT, err, "empty file path");
  DK_RETURN_NOT_OK(dk_io__check_path_bytes(path, n, "file path", err));
  dk__uri u;
  bool has_scheme = dk__uri_split(&u, path, n);
  bool root_local = r->scheme_len == 0;
  if (!has_scheme && path[0] != '/') { /* relative to the root (or to rel_dir below it) */
    DK_RETURN_NOT_OK(dk_io__join(key, r->uri, rel_dir && *rel_dir ? rel_dir : "", NULL, err));
    if (rel_dir && *rel_dir) DK_RETURN_NOT_OK(dk__buf_putc(key, '/', err));
    DK_RETURN_NOT_OK(dk__buf_append(key, path, n, err));
  } else if (!has_scheme) {
    /* an absolute path without a scheme is a local file: Delta qualifies it against the
     * default filesystem (canonicalizePath), not the table's, and log replay folds file:/x
     * into /x */
    DK_RETURN_IF(!root_local, DK_UNSUPPORTED, err,
                 "'%.*s' is a local file, but the table lives on %.*s:// and its storage "
                 "backend serves only that", (int)DK_MIN(n, 512), path, (int)r->scheme_len,
                 r->uri);
    DK_RETURN_NOT_OK(dk__buf_append(key, path, n, err));
  } else if (dk__scheme_is(u.scheme, "file")) {
    DK_RETURN_IF(!local_authority(u.authority), DK_UNSUPPORTED, err,
                 "'%.*s': a file URI naming host '%.*s' is not on this machine",
                 (int)DK_MIN(n, 512), path, (int)u.authority.len, u.authority.ptr);
    DK_RETURN_IF(!u.path.len || u.path.ptr[0] != '/', DK_CORRUPT, err,
                 "'%.*s': a file URI needs an absolute path", (int)DK_MIN(n, 512), path);
    DK_RETURN_IF(!root_local, DK_UNSUPPORTED, err,
                 "'%.*s' is a local file, but the table lives on %.*s:// and its storage "
                 "backend serves only that", (int)DK_MIN(n, 512), path, (int)r->scheme_len,
                 r->uri);
    DK_RETURN_NOT_OK(dk__buf_append(key, u.path.ptr, u.path.len, err));
  } else {
    DK_RETURN_IF(root_local, DK_UNSUPPORTED, err,
                 "'%.*s': no storage backend for scheme '%.*s' (the table's backend serves "
                 "local files)", (int)DK_MIN(n, 512), path, (int)u.scheme.len, u.scheme.ptr);
    DK_RETURN_IF(!same_store(u.scheme, dk_io__root_scheme(r)), DK_UNSUPPORTED, err,
                 "'%.*s': no storage backend for scheme '%.*s' (the table's backend serves "
                 "%.*s://)", (int)DK_MIN(n, 512), path, (int)u.scheme.len, u.scheme.ptr,
                 (int)r->scheme_len, r->uri);
    DK_RETURN_NOT_OK(dk__buf_append(key, path, n, err));
  }
  out->under_root = key_under_root(r, NULL, key->data, key->len);
  if (r->confine && !(rel_dir && *rel_dir ? key_under_root(r, rel_dir, key->data, key->len)
                                          : out->under_root))
    return dk__error_set(err, DK_UNSUPPORTED,
                         "'%.*s' lies outside the table root %s%s%s (path confinement is on; "
                         "turn it off only for a table that names files elsewhere, such as a "
                         "shallow clone)", (int)DK_MIN(n, 512), path, r->uri,
                         rel_dir && *rel_dir ? "/" : "", rel_dir && *rel_dir ? rel_dir : "");
  return DK_OK;
}

dk_status dk_io__resolve_encoded(dk__loc *out, dk_buf *key, const dk__root *r,
                                 const char *rel_dir, const char *path, size_t n,
                                 dk_error *err) {
  dk_buf dec;
  dk__buf_init(&dec, key->alloc);
  dk_status st = dk__pct_decode(&dec, path, n, 0, err);
  if (!st) st = dk_io__resolve(out, key, r, rel_dir, dec.data ? dec.data : "", dec.len, err);
  dk__buf_dispose(&dec);
  return st;
}

dk_status dk_io__key_uri(dk_buf *out, const char *key, dk_error *err) {
  size_t n = strlen(key);
  dk__uri u;
  if (!dk__uri_split(&u, key, n)) {
    DK_RETURN_NOT_OK(dk__buf_puts(out, "file://", err));
    return dk__pct_encode(out, key, n, err);
  }
  DK_RETURN_NOT_OK(dk__buf_append(out, key, (size_t)(u.path.ptr - key), err));
  return dk__pct_encode(out, u.path.ptr, u.path.len, err);
}

/* ---- backends ---------------------------------------------------------------------------- */

dk_status dk_io__storage_check(const dk_storage *s, const char *what, dk_error *err) {
  DK_RETURN_IF(!s, DK_INVALID, err, "%s: NULL storage backend", what);
  DK_RETURN_IF(s->version < 1, DK_INVALID, err,
               "%s: storage backend version %u (version must be 1..%d; an uninitialised "
               "struct has 0)", what, s->version, DK_STORAGE_VERSION);
  DK_RETURN_IF(!s->list_from || !s->read || !s->read_range || !s->stat || !s->free_buf, DK_INVALID,
               err, "%s: storage backend lacks a version-1 read operation (list_from, read, "
               "read_range, stat and free_buf are required)", what);
  return DK_OK;
}
