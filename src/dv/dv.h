/*
** dv.h — library-internal deletion vectors (not API): descriptors, Z85, loading and the
** row-selection queries the scan layer uses.
**
** Follows Delta PROTOCOL.md § "Deletion Vectors", § "Deletion Vector Descriptor Schema" and
** § "Deletion Vector Format" (RoaringBitmapArray, DV file storage format), and ZeroMQ RFC 32
** (Z85) for the text encoding of inline DVs and UUIDs.
**
** Layering: dv sits below scan. It reads DV files only through a dk_storage vtable; the
** decoding layer (dk_dv__decode_bitmap, dk_dv__decode_file_range) takes bytes, so it can be
** tested and fuzzed without I/O.
**
** Thread-safety: a loaded dk_dv is immutable; its queries may run from many threads.
*/
#ifndef DK_DV_DV_H
#define DK_DV_DV_H

#include "dk/sys/storage.h"
#include "io/uri.h"
#include "util/util.h"

/* Magic number of a serialized RoaringBitmapArray (PROTOCOL.md § Deletion Vector Format),
 * stored little endian in the first 4 bytes. */
#define DK_DV_MAGIC 1681511377u
/* Magic number of the older "native" RoaringBitmapArray framing, which Delta's readers
 * accept too (and which PROTOCOL.md's inline example uses). */
#define DK_DV_MAGIC_NATIVE 1681511376u
/* Version byte at offset 0 of a DV file (§ Deletion Vector File Storage Format). */
#define DK_DV_FILE_VERSION 1
/* Length of the Z85 text of a UUID in a 'u' descriptor (16 bytes -> 20 characters). */
#define DK_DV_UUID_Z85_LEN 20

/* ---- Z85 (ZeroMQ RFC 32) ---------------------------------------------------------------- */

/* Appends the Z85 text of data[0..n) to out. n must be a multiple of 4 (DK_INVALID
 * otherwise); use dk_dv__z85_encode_padded for other lengths. */
dk_status dk_dv__z85_encode(dk_buf *out, const uint8_t *data, size_t n, dk_error *err);
/* Like dk_dv__z85_encode, but zero-pads the last group to 4 bytes first (what Delta writers do
 * for inline DVs, whose sizeInBytes then tells the reader how many bytes are real). */
dk_status dk_dv__z85_encode_padded(dk_buf *out, const uint8_t *data, size_t n, dk_error *err);
/* Decodes Z85 text into out (appending len/5*4 bytes). DK_CORRUPT, naming the character
 * offset, when len is not a multiple of 5, a character is outside the alphabet, or a group
 * exceeds 2^32-1. */
dk_status dk_dv__z85_decode(dk_buf *out, const char *text, size_t len, dk_error *err);

/* ---- descriptor ------------------------------------------------------------------------- */

typedef enum dk_dv_storage_type {
  DK_DV_STORAGE_UUID = 'u',    /* relative path from a UUID with optional random prefix */
  DK_DV_STORAGE_INLINE = 'i',  /* Z85 bytes of the bitmap inside the log */
  DK_DV_STORAGE_PATH = 'p'     /* absolute path (URI) of the DV file */
} dk_dv_storage_type;

/* One DeletionVectorDescriptor. The text is borrowed: it must outlive the descriptor's use
 * (dk_dv__load copies what it keeps). Fill it with dk_dv__descriptor_init. */
typedef struct dk_dv_desc {
  dk_dv_storage_type storage_type; /* 'u', 'i' or 'p' */
  dk_str path_or_inline;           /* pathOrInlineDv, borrowed, not NUL-terminated */
  bool has_offset;                 /* offset present in the log (it is part of the unique id) */
  int64_t offset;                  /* offset of the DV in its file; 0 when absent */
  int32_t size_in_bytes;           /* sizeInBytes: bytes of the serialized bitmap */
  int64_t cardinality;             /* number of rows the DV deletes */
} dk_dv_desc;

/* Fills *out from the five descriptor fields (as read from a JSON commit or a checkpoint
 * struct). storage_type is the one-character storageType string; offset may be NULL
 * (absent). Validates what can be validated without I/O: a legal storage type, no offset
 * for inline DVs, offset >= 0, sizeInBytes >= 0 (Int), cardinality >= 0, a 'u' path of at
 * least 20 characters. Errors: DK_CORRUPT (message names the field). path is borrowed. */
dk_status dk_dv__descriptor_init(dk_dv_desc *out, dk_str storage_type, dk_str path,
                                const int64_t *offset, int64_t size_in_bytes,
                                int64_t cardinality, dk_error *err);

/* Appends the descriptor's uniqueId: storageType + pathOrInlineDv [+ '@' + offset when the
 * offset is present]. It tells apart successive DVs of one data file in log replay. */
dk_status dk_dv__unique_id(dk_buf *out, const dk_dv_desc *d, dk_error *err);

/* Appends the storage path of the DV file: for 'u', table_root + "/" [+ prefix + "/"] +
 * "deletion_vector_<uuid>.bin" with the UUID Z85-decoded from the last 20 characters; for
 * 'p', the path percent-decoded, with a "file:" scheme (file:/x, file:///x,
 * file://localhost/x) turned into a local path. table_root is a storage path; a trailing
 * '/' is allowed. Errors: DK_INVALID for inline DVs (they have no file), DK_CORRUPT for a
 * bad UUID or percent escape. */
dk_status dk_dv__resolve_path(const char *table_root, const dk_dv_desc *d, dk_buf *out,
                             dk_error *err);

/* ---- loaded deletion vector ------------------------------------------------------------- */

typedef struct dk_dv dk_dv;

/* Decodes one serialized RoaringBitmapArray (magic, then the 64-bit portable format, or
 * the native framing) from bytes[0..len), which must be consumed exactly. Validates everything before trusting it:
 * ascending keys (bucket keys with the top bit clear, so rows stay < 2^63), container
 * headers against the bytes present, sorted array values, bitset cardinalities, ordered
 * non-overlapping runs inside 16 bits, and offset headers. Errors: DK_CORRUPT naming the
 * byte offset (relative to bytes) and the cause; DK_NOMEM. Memory is O(len). */
dk_status dk_dv__decode_bitmap(dk_dv **out, const uint8_t *bytes, size_t len,
                              const dk_allocator *alloc, dk_error *err);

/* Decodes the DV stored at byte `offset` of a DV file, given the bytes file[0..len) that
 * start at that offset: a 4-byte big-endian dataSize that must equal expected_size, the
 * bitmap, and its big-endian CRC-32. `file_offset` and `name` are only used in messages.
 * Errors: DK_CORRUPT (truncated, size mismatch, checksum mismatch with both values, bad
 * bitmap), DK_NOMEM. */
dk_status dk_dv__decode_file_range(dk_dv **out, const uint8_t *bytes, size_t len,
                                  int64_t expected_size, const char *name, int64_t file_offset,
                                  const dk_allocator *alloc, dk_error *err);

/* Loads the DV a descriptor points at: decodes inline DVs, otherwise reads the range
 * [offset, offset + 8 + sizeInBytes) of the resolved file through st (and checks the
 * version byte when the DV starts at offset 1, since that costs no extra read; very large
 * sizes are first checked against the file size with st->stat). Verifies the size, the
 * checksum and that the decoded cardinality equals the descriptor's. A descriptor with
 * cardinality 0 yields an empty DV without any read (as Delta's own readers do).
 * Errors: DK_CORRUPT (message names the DV file and offset), DK_NOT_FOUND/DK_IO from st,
 * DK_NOMEM. On failure *out is NULL. st may be NULL for inline DVs. */
dk_status dk_dv__load(dk_dv **out, dk_storage *st, const char *table_root,
                     const dk_dv_desc *d, const dk_allocator *alloc, dk_error *err);
/* The same for a table's DV: its root, backend and path confinement (io/uri.h): a 'p' DV
** outside the root is DK_UNSUPPORTED when table->confine is set. */
dk_status dk_dv__load_in(dk_dv **out, const dk__root *table, const dk_dv_desc *d,
                        const dk_allocator *alloc, dk_error *err);

/* An empty DV (deletes no row). */
dk_status dk_dv__new_empty(dk_dv **out, const dk_allocator *alloc, dk_error *err);

/* Frees a DV; accepts NULL. */
void dk_dv__free(dk_dv *dv);

/* Number of deleted rows. */
uint64_t dk_dv__cardinality(const dk_dv *dv);

/* Whether row `row_index` (0-based position in the data file) is deleted. */
bool dk_dv__contains(const dk_dv *dv, int64_t row_index);

/* Number of deleted rows in [first_row, first_row + n). */
uint64_t dk_dv__range_cardinality(const dk_dv *dv, int64_t first_row, int64_t n);

/* The hot path for a batch of rows [first_row, first_row + n): sets keep[i] = 0 for every
 * deleted row first_row + i and leaves the other bytes untouched (so it composes with a
 * predicate's selection; initialise keep to 1s). Works container by container, without a
 * call per row. Returns the number of deleted rows in the range. */
uint64_t dk_dv__fill_selection(const dk_dv *dv, int64_t first_row, int64_t n, uint8_t *keep);

/* Same, on an LSB-first bitmap (Arrow validity layout): clears bit i of keep_bits for each
 * deleted row first_row + i. */
uint64_t dk_dv__fill_selection_bits(const dk_dv *dv, int64_t first_row, int64_t n,
                                   uint8_t *keep_bits);

/* Calls cb(row, payload) for every deleted row in ascending order; stops and returns the
 * first non-OK status of cb. */
dk_status dk_dv__foreach(const dk_dv *dv, dk_status (*cb)(int64_t row, void *payload),
                        void *payload);

/* ---- writing (write.c) ------------------------------------------------------------------ */

/* A set of row indexes being built (CRoaring buckets of 2^32 rows). Not thread-safe. */
typedef struct dk_dv_builder dk_dv_builder;

dk_status dk_dv__builder_new(dk_dv_builder **out, const dk_allocator *alloc, dk_error *err);
void dk_dv__builder_free(dk_dv_builder *b);
/* Adds rows (any order, duplicates allowed; each in [0, 2^63)). DK_INVALID otherwise. */
dk_status dk_dv__builder_add(dk_dv_builder *b, const int64_t *rows, size_t n, dk_error *err);
/* Adds rows [first, first + n). */
dk_status dk_dv__builder_add_range(dk_dv_builder *b, int64_t first, int64_t n, dk_error *err);
/* Adds every row an existing DV deletes (merging a new DV with the file's old one). */
dk_status dk_dv__builder_add_dv(dk_dv_builder *b, const dk_dv *dv, dk_error *err);
uint64_t dk_dv__builder_cardinality(const dk_dv_builder *b);
/* Appends the serialized RoaringBitmapArray (magic + 64-bit portable format, run containers
 * where smaller) to out; its length is the descriptor's sizeInBytes. */
dk_status dk_dv__builder_serialize(dk_buf *out, dk_dv_builder *b, dk_error *err);

/* One DV file being assembled in memory (delta-spark's DeletionVectorStore.Writer): the
 * version byte, then per DV size + bitmap + CRC-32. Published by commit under
 * <root>/[<prefix>/]deletion_vector_<uuid>.bin (never overwriting). */
typedef struct dk_dv_file_writer {
  dk_buf bytes;            /* the file so far */
  dk_buf id;               /* pathOrInlineDv of its 'u' descriptors: prefix + Z85(uuid) */
  uint8_t uuid[16];
  char uuid_text[37];
  char prefix[64];
  size_t n_dvs;
  int committed;
} dk_dv_file_writer;

/* uuid: 36-character text form; prefix: "" / NULL, or a random directory name. */
dk_status dk_dv__file_writer_init(dk_dv_file_writer *w, const char *uuid, const char *prefix,
                                  const dk_allocator *alloc, dk_error *err);
/* Appends one DV's bitmap bytes; *offset receives its descriptor offset. */
dk_status dk_dv__file_writer_add(dk_dv_file_writer *w, const uint8_t *bitmap, size_t len,
                                 int32_t *offset, dk_error *err);
/* The file's storage path under root. */
dk_status dk_dv__file_writer_path(dk_buf *out, const dk_dv_file_writer *w, const char *root,
                                  dk_error *err);
/* Writes the file (nothing when no DV was added). */
dk_status dk_dv__file_writer_commit(dk_dv_file_writer *w, dk_storage *st, const char *root,
                                    dk_error *err);
void dk_dv__file_writer_dispose(dk_dv_file_writer *w);
/* The pathOrInlineDv text of an inline ('i') DV: the Z85 text of the bitmap, zero-padded. */
dk_status dk_dv__inline_text(dk_buf *out, const uint8_t *bitmap, size_t len, dk_error *err);

#endif /* DK_DV_DV_H */
