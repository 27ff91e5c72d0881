/*
** util.h — library-internal utilities shared by every module (not API).
**
** Errors:   DK_RETURN_NOT_OK, DK_RETURN_IF, dk__error_set (first message wins),
**           dk__error_prefix (adds context such as a file name to an existing message).
** Memory:   dk__malloc/calloc/realloc/free through an optional dk_allocator (NULL = libc).
** Buffers:  dk_buf, a growable byte buffer (64-byte aligned growth, no per-append malloc).
** Arena:    dk_arena, bump allocation in chunks; freed all at once.
** Hashing:  dk__hash_bytes (64-bit) and dk_hmap, open addressing from byte keys to uint64.
** Percent-decoding: dk__pct_decode_into, the library's one decoder (pct.c).
*/
#ifndef DK_UTIL_H
#define DK_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dk/common.h"

#if defined(__GNUC__)
#  define DK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#  define DK_LIKELY(x) __builtin_expect(!!(x), 1)
#  define DK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#  define DK_PRINTF(a, b)
#  define DK_LIKELY(x) (x)
#  define DK_UNLIKELY(x) (x)
#endif

#ifndef NDEBUG
#  include <assert.h>
#  define DK_DCHECK(x) assert(x)
#else
#  define DK_DCHECK(x) ((void)0)
#endif

#define DK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DK_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors ---------------------------------------------------------------------------- */

/* Records code + message unless an error is already recorded; returns code. err may be NULL. */
dk_status dk__error_set(dk_error *err, dk_status code, const char *fmt, ...) DK_PRINTF(3, 4);
dk_status dk__error_vset(dk_error *err, dk_status code, const char *fmt, va_list ap)
    DK_PRINTF(3, 0);
/* Prepends "<context>: " to the recorded message (used to add file names on the way up). */
void dk__error_prefix(dk_error *err, const char *fmt, ...) DK_PRINTF(2, 3);

#define DK_RETURN_NOT_OK(expr)          \
  do {                                  \
    dk_status dk__s = (expr);           \
    if (DK_UNLIKELY(dk__s != DK_OK)) return dk__s; \
  } while (0)

#define DK_RETURN_IF(cond, code, err, ...)                      \
  do {                                                          \
    if (DK_UNLIKELY(cond)) return dk__error_set((err), (code), __VA_ARGS__); \
  } while (0)

/* DK_INVALID when a caller's versioned options struct is newer than this library's (an older
 * one, or 0 for "the first version", is accepted: version fields only grow). */
#define DK_CHECK_OPTIONS_VERSION(opts, ours, fn, err)                                     \
  DK_RETURN_IF((opts) && (opts)->version > (unsigned)(ours), DK_INVALID, (err),           \
               "%s: options version %u is newer than this library's (%u)", (fn),          \
               (opts)->version, (unsigned)(ours))

/* For use with a `cleanup:` label and a `dk_status st` local. */
#define DK_CHECK_GOTO(expr)             \
  do {                                  \
    st = (expr);                        \
    if (DK_UNLIKELY(st != DK_OK)) goto cleanup; \
  } while (0)

/* ---- memory ---------------------------------------------------------------------------- */

void *dk__malloc(const dk_allocator *a, size_t n);
void *dk__calloc(const dk_allocator *a, size_t count, size_t size);
void *dk__realloc(const dk_allocator *a, void *p, size_t n);
void dk__free(const dk_allocator *a, void *p);
char *dk__strndup(const dk_allocator *a, const char *s, size_t n);
char *dk__strdup(const dk_allocator *a, const char *s);
/* 64-byte aligned allocation (for Arrow buffers); free with dk__aligned_free. */
void *dk__aligned_alloc(const dk_allocator *a, size_t n);
void dk__aligned_free(const dk_allocator *a, void *p);

/* ---- growable buffer ------------------------------------------------------------------- */

typedef struct dk_buf {
  char *data;              /* NUL-terminated when non-NULL (a spare byte is kept) */
  size_t len;              /* bytes used */
  size_t cap;              /* bytes allocated, excluding the spare NUL byte */
  const dk_allocator *alloc;
} dk_buf;

void dk__buf_init(dk_buf *b, const dk_allocator *a);
void dk__buf_dispose(dk_buf *b);
dk_status dk__buf_reserve(dk_buf *b, size_t extra, dk_error *err);
dk_status dk__buf_append(dk_buf *b, const void *p, size_t n, dk_error *err);
dk_status dk__buf_puts(dk_buf *b, const char *s, dk_error *err);
dk_status dk__buf_putc(dk_buf *b, char c, dk_error *err);
dk_status dk__buf_printf(dk_buf *b, dk_error *err, const char *fmt, ...) DK_PRINTF(3, 4);
static inline void dk__buf_clear(dk_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = 0;
}
/* Takes ownership of the data (caller frees with dk__free(b->alloc, p)); resets b. */
char *dk__buf_detach(dk_buf *b);

/* ---- arena ----------------------------------------------------------------------------- */

typedef struct dk_arena_chunk dk_arena_chunk;
typedef struct dk_arena {
  dk_arena_chunk *head;     /* current chunk */
  size_t chunk_size;        /* default chunk size */
  const dk_allocator *alloc;
  size_t total;             /* bytes allocated from the system */
} dk_arena;

void dk__arena_init(dk_arena *ar, const dk_allocator *a, size_t chunk_size);
void dk__arena_dispose(dk_arena *ar);
/* Frees all but the newest chunk and rewinds it (reuse without page-faulting again). */
void dk__arena_reset(dk_arena *ar);
/* 8-byte aligned; NULL on failure (records DK_NOMEM in err). */
void *dk__arena_alloc(dk_arena *ar, size_t n, dk_error *err);
char *dk__arena_strndup(dk_arena *ar, const char *s, size_t n, dk_error *err);

/* ---- hashing --------------------------------------------------------------------------- */

uint64_t dk__hash_bytes(const void *p, size_t n);

/* Open-addressing map from byte strings (copied into an internal arena) to uint64 values. */
typedef struct dk_hmap_slot {
  uint64_t hash;            /* 0 = empty */
  const char *key;
  size_t klen;
  uint64_t value;
} dk_hmap_slot;

typedef struct dk_hmap {
  dk_hmap_slot *slots;
  size_t cap;               /* power of two */
  size_t count;
  dk_arena keys;
  const dk_allocator *alloc;
} dk_hmap;

void dk__hmap_init(dk_hmap *m, const dk_allocator *a);
void dk__hmap_dispose(dk_hmap *m);
/* Returns pointer to the slot's value, inserting (value 0) if absent; *inserted tells which. */
dk_status dk__hmap_upsert(dk_hmap *m, const char *key, size_t klen, uint64_t **value_out,
                         bool *inserted, dk_error *err);
/* Returns pointer to value or NULL. */
uint64_t *dk__hmap_get(const dk_hmap *m, const char *key, size_t klen);
bool dk__hmap_remove(dk_hmap *m, const char *key, size_t klen);

/* ---- recycling buffer pool (pool.c) ------------------------------------------------------ */

/* An allocator that keeps freed large blocks (64 KiB .. 256 MiB, up to max_cached bytes) and
** hands them out again, so reading batch after batch and file after file does not return
** memory to the kernel and fault it back in. Reference-counted by its owners and by every
** live block: blocks (Arrow buffers handed to a consumer) may outlive every owner. When the
** last owner lets go the cache is freed and nothing more is cached. Thread-safe. */
typedef struct dk_pool dk_pool;

dk_status dk__pool_new(dk_pool **out, const dk_allocator *parent, size_t max_cached,
                      dk_error *err);
/* The pool behind allocator a (one owner reference more) when a is a pool's allocator, else
** a new pool over a: a Parquet stream inside a scan recycles through the scan's pool. */
dk_status dk__pool_share(dk_pool **out, const dk_allocator *a, size_t max_cached,
                        dk_error *err);
/* The allocator interface; valid while the pool lives (an owner or any block). */
const dk_allocator *dk__pool_allocator(dk_pool *p);
/* Drops an owner's reference; accepts NULL. */
void dk__pool_release(dk_pool *p);
/* For tests: references held (owners + live blocks), allocations served from the cache,
** bytes cached now. */
void dk__pool_counters(const dk_pool *p, int64_t *live_refs, int64_t *reused,
                      size_t *cached_bytes);


/* ---- percent-decoding (pct.c) --------------------------------------------------------- */

enum {
  DK__PCT_STRICT = 1,    /* io/uri.h dk__pct_decode: a '%' without two hex digits, or %00, is
                            DK_CORRUPT (else kept as is) */
  DK__PCT_PLUS_SPACE = 2 /* '+' decodes to a space (form encoding: S3 listing keys) */
};

/* The byte an escape at s[i] (a '%') stands for, or -1 when s[i..n) is not two hex digits. */
int dk__pct_escape_at(const char *s, size_t n, size_t i);
/* Lenient decoding of s[0..n) into dst (room for n + 1 bytes; NUL-terminated; dst may be s:
** in place); returns the length. An escape that is not two hex digits stays as written; %00
** decodes to a NUL byte inside the length, which dk_io__check_path_bytes then refuses. flags:
** DK__PCT_PLUS_SPACE. */
size_t dk__pct_decode_into(char *dst, const char *s, size_t n, int flags);

#endif /* DK_UTIL_H */
