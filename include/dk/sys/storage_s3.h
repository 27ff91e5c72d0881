/**
 * @file dk/sys/storage_s3.h
 * @brief The S3-compatible object-store backend of dk/sys/storage.h (AWS S3, MinIO,
 *        SeaweedFS, R2, ...).
 *
 * One backend reaches one bucket. Paths passed to it name keys within that bucket, either as
 * URIs ("s3://bucket/tables/t/_delta_log/00000000000000000000.json", also s3a://; another
 * bucket is DK_INVALID) or as absolute paths ("/tables/t/_delta_log/0...0.json"): both are the
 * key "tables/t/_delta_log/00000000000000000000.json". A table `s3://bucket/tables/t` is
 * opened with dk_table_open("s3://bucket/tables/t", {.storage = <this backend for "bucket">}).
 *
 * Settings not given in ::dk_s3_options come from the environment and the shared AWS files,
 * as the AWS SDKs and delta-rs read them (unless `skip_env` is set):
 *   credentials  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; else the
 *                profile (options, AWS_PROFILE, "default") in AWS_SHARED_CREDENTIALS_FILE
 *                (~/.aws/credentials) and AWS_CONFIG_FILE (~/.aws/config); else none
 *                (anonymous, unsigned requests). A profile named in the options wins over
 *                the environment's keys.
 *   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1.
 *   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`, else
 *                https://s3.<region>.amazonaws.com.
 *   allow_http   AWS_ALLOW_HTTP=true (an http:// endpoint is refused without it).
 *
 * Writes that must not replace (put_if_absent, a writer committed with if_absent = 1 — the
 * Delta commit primitive) use a conditional PUT (`If-None-Match: *`). Before the first one the
 * backend checks once that the server honours it; a server that does not makes those writes
 * fail with DK_UNSUPPORTED unless the unsafe mode is chosen (DK_S3_PUT_IF_ABSENT_UNSAFE, or the
 * delta-rs option aws_s3_allow_unsafe_rename=true), where two concurrent writers can both
 * "win" and one commit is lost.
 *
 * libcurl is initialised once per process (curl_global_init, on the first dk_storage_s3_new;
 * it is never cleaned up). The backend keeps no other global state; one backend may be used
 * from many threads at once.
 */
#ifndef DK_SYS_STORAGE_S3_H
#define DK_SYS_STORAGE_S3_H

#include "dk/sys/storage.h"

DK_BEGIN_DECL

#define DK_S3_OPTIONS_VERSION 1

/** How the bucket appears in request URLs. */
typedef enum dk_s3_addressing {
  DK_S3_ADDRESSING_AUTO = 0,    /**< virtual-hosted on AWS's own endpoints, path-style on others */
  DK_S3_ADDRESSING_PATH = 1,    /**< https://endpoint/bucket/key */
  DK_S3_ADDRESSING_VIRTUAL = 2  /**< https://bucket.endpoint/key */
} dk_s3_addressing;

/** How writes that must not replace an existing object are made. */
typedef enum dk_s3_put_if_absent {
  DK_S3_PUT_IF_ABSENT_AUTO = 0,   /**< conditional PUT, after checking once that it is honoured */
  DK_S3_PUT_IF_ABSENT_TRUST = 1,  /**< conditional PUT, no check (the server is known to honour it) */
  DK_S3_PUT_IF_ABSENT_UNSAFE = 2  /**< HEAD then plain PUT: concurrent writers can lose commits */
} dk_s3_put_if_absent;

/** Options of dk_storage_s3_new. Zero-initialise, set `version`, then the fields wanted;
 *  0 / NULL means "the default" (see each field). Strings are copied by dk_storage_s3_new. */
typedef struct dk_s3_options {
  unsigned version;              /**< DK_S3_OPTIONS_VERSION */
  const char *bucket;            /**< required */
  const char *region;            /**< see the file comment for the defaults */
  const char *endpoint;          /**< "http://127.0.0.1:8333", "https://s3.eu-west-1.amazonaws.com" */
  const char *access_key_id;     /**< with secret_access_key; NULL: environment or profile */
  const char *secret_access_key;
  const char *session_token;     /**< temporary credentials (used with access_key_id only) */
  const char *profile;           /**< profile of the shared files (wins over AWS_* keys) */
  const char *config_file;       /**< NULL: AWS_CONFIG_FILE or ~/.aws/config */
  const char *credentials_file;  /**< NULL: AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials */
  int skip_env;                  /**< non-zero: read neither the environment nor the shared files */
  int addressing;                /**< a dk_s3_addressing */
  int allow_http;                /**< 1: allow an http:// endpoint; -1: refuse (AWS_ALLOW_HTTP ignored) */
  int put_if_absent;             /**< a dk_s3_put_if_absent */
  int max_retries;               /**< retries of a failed request; 0: 8; -1: none */
  int64_t retry_timeout_ms;      /**< no retry starts later than this after the first try; 0: 60 s */
  int64_t connect_timeout_ms;    /**< TCP/TLS connect; 0: 10 s */
  int64_t stall_timeout_ms;      /**< a transfer moving no byte this long fails (and is retried); 0: 30 s */
  int64_t request_timeout_ms;    /**< whole request; 0: none (a stall still ends it) */
  int max_connections;           /**< concurrent requests of one batched read or write; 0: 8 */
  size_t part_size;              /**< multipart part size, >= 5 MiB; 0: 8 MiB (also the single-PUT limit) */
  size_t coalesce_gap;           /**< read_ranges merges ranges closer than this; 0: 1 MiB; set 1 for none */
  int list_page_size;            /**< ListObjectsV2 max-keys; 0: the server's (1000) */
  /** Polled during requests and backoff waits; returning non-zero stops with DK_CANCELLED. */
  int (*cancel)(void *ctx);
  void *cancel_ctx;              /**< passed to cancel */
} dk_s3_options;

/** Sets one option by name (case-insensitive), with the names delta-rs and object_store use:
 *  aws_access_key_id, aws_secret_access_key, aws_session_token (aws_token), aws_region,
 *  aws_endpoint_url (aws_endpoint), aws_allow_http, aws_virtual_hosted_style_request,
 *  aws_profile, aws_bucket, aws_s3_allow_unsafe_rename, connect_timeout, timeout
 *  (durations "10s", "500ms" or milliseconds), max_retries; and dk's own dk_s3_put_if_absent
 *  (auto|trust|unsafe), dk_s3_part_size, dk_s3_max_connections, dk_s3_coalesce_gap,
 *  dk_s3_stall_timeout, dk_s3_list_page_size. The "aws_" prefix may be left out. `value` is
 *  borrowed: keep it alive until dk_storage_s3_new returns. Unknown names are DK_INVALID. */
DK_API dk_status dk_s3_options_set(dk_s3_options *o, const char *key, const char *value,
                                   dk_error *err);

/** Creates the backend. Fails (DK_INVALID) on options it cannot use — no bucket, a malformed
 *  endpoint, an http:// endpoint without allow_http, a profile that no shared file has — but
 *  makes no request: a missing bucket or wrong credentials show at the first operation.
 *  Free with s->free(s). */
DK_API dk_status dk_storage_s3_new(dk_storage **out, const dk_s3_options *opts,
                                   const dk_allocator *alloc, dk_error *err);

/** 1 when uri names an object in S3 (scheme s3:// or s3a://, any case), else 0. */
DK_API int dk_storage_s3_is_uri(const char *uri);

/** The backend for the bucket of an s3:// or s3a:// URI (a table root such as
 *  "s3://bucket/tables/t"), configured by n options given by name (keys[i] = values[i], the
 *  names of dk_s3_options_set) over the environment and the shared files. The URI's bucket
 *  wins over an aws_bucket option. What connectors that take a table URI and a map of storage
 *  options call (the dk CLI, the Python binding, SQLite, Spark).
 *  @return DK_OK; DK_INVALID (not an s3 URI, no bucket in it, an unknown option or a value it
 *  cannot parse); what dk_storage_s3_new returns. Free with (*out)->free(*out). */
DK_API dk_status dk_storage_s3_for_uri(dk_storage **out, const char *uri, size_t n,
                                       const char *const *keys, const char *const *values,
                                       const dk_allocator *alloc, dk_error *err);

#define DK_S3_STATS_VERSION 1

/** What a backend has sent so far (cumulative, all threads). */
typedef struct dk_s3_stats {
  unsigned version;        /**< DK_S3_STATS_VERSION (set by the caller) */
  int64_t requests;        /**< HTTP requests sent, retries included */
  int64_t retries;         /**< of which retries */
  int64_t get_requests;    /**< GETs (whole and ranged) */
  int64_t bytes_received;  /**< response body bytes */
  int64_t bytes_sent;      /**< request body bytes */
} dk_s3_stats;

/** Fills *out from an S3 backend (DK_INVALID for any other backend). */
DK_API dk_status dk_storage_s3_stats(dk_storage *s, dk_s3_stats *out, dk_error *err);

DK_END_DECL

#endif /* DK_SYS_STORAGE_S3_H */
