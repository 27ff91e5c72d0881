/**
 * @file dk/common.h
 * @brief Status codes, the caller-owned error record, export macros and byte views.
 *
 * Every fallible public function of dk returns a ::dk_status and takes an optional
 * `dk_error *err` as its last parameter. The error record is filled once, at the origin of
 * the failure, and never allocates.
 */
#ifndef DK_COMMON_H
#define DK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(DK_BUILDING_LIBRARY)
#    define DK_API __declspec(dllexport)
#  else
#    define DK_API
#  endif
#else
#  define DK_API __attribute__((visibility("default")))
#endif

/* Debug builds (DK_DEBUG, set by dk's CMake for CMAKE_BUILD_TYPE=Debug, as `make test
 * SANITIZE=1` builds) warn where a dk_status result is dropped. */
#if defined(DK_DEBUG) && defined(__GNUC__)
#  define DK_WARN_UNUSED __attribute__((warn_unused_result))
#else
#  define DK_WARN_UNUSED
#endif

#ifdef __cplusplus
#  define DK_BEGIN_DECL extern "C" {
#  define DK_END_DECL }
#else
#  define DK_BEGIN_DECL
#  define DK_END_DECL
#endif

DK_BEGIN_DECL

#define DK_VERSION_MAJOR 0
#define DK_VERSION_MINOR 1
#define DK_VERSION_PATCH 0
#define DK_VERSION_NUMBER (DK_VERSION_MAJOR * 10000 + DK_VERSION_MINOR * 100 + DK_VERSION_PATCH)

/** Runtime twin of DK_VERSION_NUMBER. */
DK_API int dk_version_number(void);

/** Result of every fallible call. Values are fixed and never renumbered. */
typedef enum dk_status {
  DK_OK = 0,
  DK_NOMEM = 1,       /**< an allocation failed */
  DK_INVALID = 2,     /**< a caller passed a bad argument or option */
  DK_IO = 3,          /**< the operating system or storage failed */
  DK_NOT_FOUND = 4,   /**< table, version, file or column does not exist */
  DK_CORRUPT = 5,     /**< a log, checkpoint, Parquet or DV file is malformed */
  DK_UNSUPPORTED = 6, /**< a table feature, type or encoding dk does not implement */
  DK_CONFLICT = 7,    /**< a concurrent commit won the race */
  DK_CANCELLED = 8,   /**< a cancellation hook asked to stop */
  DK_CALLBACK = 9,    /**< an engine-supplied callback failed */
  DK_INTERNAL = 10,   /**< a bug in dk */
  DK_OUT_OF_RANGE = 11 /**< a version or timestamp outside the table's history */
} dk_status;

/** Static, human-readable name of a status ("corrupt", "not found", ...). */
DK_API const char *dk_status_str(dk_status s);

#define DK_ERROR_MESSAGE_SIZE 1024

/**
 * Caller-owned error detail. Zero-initialise it (or call dk_error_init) before use.
 * `message` names the file, offset or version and the cause.
 */
typedef struct dk_error {
  dk_status code;                      /**< DK_OK until an error is recorded */
  char message[DK_ERROR_MESSAGE_SIZE]; /**< NUL-terminated, possibly truncated */
} dk_error;

DK_API void dk_error_init(dk_error *err);

/** Frees memory a dk function handed to the caller as its own (text such as the output of
 *  dk_parquet_meta_json, dk_variant_json, dk_expr_to_string): the one free function for
 *  everything dk allocates for a caller (objects have their own dk_<type>_free). Accepts
 *  NULL. */
DK_API void dk_free(void *p);

/** Borrowed view of bytes; never assumed to be NUL-terminated. */
typedef struct dk_str {
  const char *ptr; /**< first byte; may be NULL when len == 0 */
  size_t len;      /**< number of bytes */
} dk_str;

/** Pluggable allocator; pass NULL anywhere one is accepted to use libc. */
typedef struct dk_allocator {
  void *ctx;                                             /**< passed to every call */
  void *(*malloc)(void *ctx, size_t size);               /**< like malloc */
  void *(*realloc)(void *ctx, void *ptr, size_t size);   /**< like realloc */
  void (*free)(void *ctx, void *ptr);                    /**< like free; accepts NULL */
} dk_allocator;

DK_END_DECL

#endif /* DK_COMMON_H */
