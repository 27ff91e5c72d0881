/*
** stats.c — the stats blocks of a replay state: file statistics text kept compactly while a
** snapshot lives (appended to ~128 KiB blocks, LZ4-compressed once past a raw budget, or a
** checkpoint's add.stats Parquet pages kept as stored), and a reader that decodes them.
**
** A reader (dk__stats_reader) belongs to one caller — a file iterator, a scan plan — and owns
** its buffers: one decoded block, so a stats pointer it returns lives until its next call;
** and, when given a multi-threaded executor, a second buffer into which the chunk's next
** page is decoded ahead on the executor while the current one is read (listing a snapshot
** reads the pages in order). No state is shared between readers.
**
** Follows PROTOCOL.md "Per-file Statistics" (stats are kept as the JSON text the log holds)
** and "Checkpoint Schema" (add.stats).
*/
#include <lz4.h>

#include "log/replay.h"

#define SBLOCK_TARGET (128u * 1024u)

/* Stats text from commit files (and checkpoints read through Arrow) is kept uncompressed up
 * to this many bytes per state, and LZ4-compressed beyond: the few commits after a checkpoint
 * cost no compression, a long run of commits stays small. */
#define RAW_STATS_BUDGET ((size_t)32 << 20)

dk_status dk_log__stats_seal(dk__state *st, dk_error *err) {
  dk__sblock *b = st->cur_sblock;
  if (!b) return DK_OK;
  size_t n = st->pending.len;
  void *dst = NULL;
  int cl = 0;
  if (st->raw_stats + n > RAW_STATS_BUDGET) {
    /* LZ4 rather than zstd: on Spark-style stats text it compresses ~1.6x and decompresses
    ** ~2.6x faster for a ratio of ~3.3 instead of ~5.8 (zstd was ~29% of the instructions of
    ** loading and listing a big table) */
    int cap = LZ4_compressBound((int)n);
    dst = dk__malloc(st->alloc, cap > 0 ? (size_t)cap : 1);
    if (!dst) return dk__error_set(err, DK_NOMEM, "log: out of memory compressing stats");
    /* acceleration 8: on Spark-style stats ~1.3x faster than the default for a ratio of ~2.9
    ** instead of ~3.3 (compressing was ~20% of loading and listing a 1M-file table) */
    cl = n ? LZ4_compress_fast(st->pending.data, dst, (int)n, cap, 8) : 0;
  }
  size_t c = cl > 0 ? (size_t)cl : 0;
  if (cl <= 0 || c >= n) {
    /* keep it raw */
    void *raw = dk__realloc(st->alloc, dst, n ? n : 1);
    if (!raw) {
      dk__free(st->alloc, dst);
      return dk__error_set(err, DK_NOMEM, "log: out of memory");
    }
    memcpy(raw, st->pending.data, n);
    b->data = raw;
    b->csize = (uint32_t)n;
    b->raw = 1;
    st->raw_stats += n;
  } else {
    void *shr = dk__realloc(st->alloc, dst, c);
    b->data = shr ? shr : dst;
    b->csize = (uint32_t)c;
  }
  b->usize = (uint32_t)n;
  st->cur_sblock = NULL;
  dk__buf_clear(&st->pending);
  return DK_OK;
}

static dk_status sblock_new(dk__state *st, dk__sblock **out, dk_error *err) {
  dk__sblock *b = dk__calloc(st->alloc, 1, sizeof *b);
  if (!b) return dk__error_set(err, DK_NOMEM, "log: out of memory");
  dk_status s = dk_log__adopt_block(st, b, err);
  if (s != DK_OK) {
    dk__free(st->alloc, b);
    return s;
  }
  *out = b;
  return DK_OK;
}

dk_status dk_log__page_block_new(dk__sblock **out, const dk_allocator *alloc,
                                 const dk_pq__page *pg, const dk__sblock *dict, const char *src,
                                 dk_error *err) {
  *out = NULL;
  dk__sblock *b = dk__calloc(alloc, 1, sizeof *b);
  if (!b) return dk__error_set(err, DK_NOMEM, "log: out of memory");
  b->data = dk__malloc(alloc, pg->len ? pg->len : 1);
  if (!b->data) {
    dk__free(alloc, b);
    return dk__error_set(err, DK_NOMEM, "log: out of memory keeping a stats page");
  }
  if (pg->len) memcpy(b->data, pg->data, pg->len);
  b->is_page = 1;
  b->page = *pg;
  b->page.data = b->data;
  b->csize = pg->len;
  b->dict = dict;
  b->src = src;
  *out = b;
  return DK_OK;
}

void dk_log__page_block_free(dk__sblock *b, const dk_allocator *alloc) {
  if (!b) return;
  dk__free(alloc, b->data);
  dk__free(alloc, b);
}

dk_status dk_log__adopt_block(dk__state *st, dk__sblock *b, dk_error *err) {
  if (st->n_sblocks == st->cap_sblocks) {
    size_t nc = st->cap_sblocks ? st->cap_sblocks * 2 : 16;
    dk__sblock **p = dk__realloc(st->alloc, st->sblocks, nc * sizeof *p);
    if (!p) return dk__error_set(err, DK_NOMEM, "log: out of memory");
    st->sblocks = p;
    st->cap_sblocks = nc;
  }
  st->sblocks[st->n_sblocks++] = b;
  return DK_OK;
}

dk_status dk_log__stats_add(dk__state *st, dk__file *f, const char *text, size_t n,
                            dk_error *err) {
  if (n >= UINT32_MAX / 2) return dk__error_set(err, DK_CORRUPT, "log: stats text too large");
  if (st->cur_sblock && st->pending.len + n + 1 > SBLOCK_TARGET && st->pending.len)
    DK_RETURN_NOT_OK(dk_log__stats_seal(st, err));
  if (!st->cur_sblock) DK_RETURN_NOT_OK(sblock_new(st, &st->cur_sblock, err));
  f->sblk = st->cur_sblock;
  f->soff = (uint32_t)st->pending.len;
  f->slen = (uint32_t)n;
  DK_RETURN_NOT_OK(dk__buf_append(&st->pending, text, n, err));
  return dk__buf_putc(&st->pending, 0, err);
}

void dk_log__stats_dispose(dk__state *st) {
  for (size_t i = 0; i < st->n_sblocks; i++) {
    dk__free(st->alloc, st->sblocks[i]->data);
    dk__free(st->alloc, st->sblocks[i]);
  }
  dk__free(st->alloc, st->sblocks);
  st->sblocks = NULL;
  st->n_sblocks = st->cap_sblocks = 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

static void sbuf_init(dk__stats_buf *b, const dk_allocator *alloc) {
  memset(b, 0, sizeof *b);
  dk__buf_init(&b->text, alloc);
  dk__buf_init(&b->scratch, alloc);
}

static void sbuf_dispose(dk__stats_buf *b, const dk_allocator *alloc) {
  dk__free(alloc, b->buf);
  dk__free(alloc, b->offs);
  dk__buf_dispose(&b->text);
  dk__buf_dispose(&b->scratch);
  memset(b, 0, sizeof *b);
}

/* Decodes block blk into b (b->blk is blk on success, NULL otherwise). */
static dk_status sbuf_decode(dk__stats_buf *b, const dk__sblock *blk, const dk_allocator *alloc,
                             dk_error *err) {
  b->blk = NULL;
  if (blk->is_page) {
    const dk_pq__page *pg = &blk->page;
    if (b->offs_cap < (size_t)pg->num_values) {
      uint32_t *p = dk__realloc(alloc, b->offs, (size_t)pg->num_values * sizeof *p);
      if (!p) return dk__error_set(err, DK_NOMEM, "out of memory decoding stats");
      b->offs = p;
      b->offs_cap = (size_t)pg->num_values;
    }
    dk_status s = dk_pq__page_decode_text(pg, blk->dict ? &blk->dict->page : NULL, &b->scratch,
                                          &b->text, b->offs, err);
    if (s != DK_OK) {
      dk__error_prefix(err, "checkpoint %s: add.stats page at offset %lld",
                       blk->src ? blk->src : "?", (long long)pg->offset);
      return s;
    }
  } else {
    if (b->cap < blk->usize) {
      char *p = dk__realloc(alloc, b->buf, blk->usize ? blk->usize : 1);
      if (!p) return dk__error_set(err, DK_NOMEM, "out of memory decompressing stats");
      b->buf = p;
      b->cap = blk->usize;
    }
    int r = LZ4_decompress_safe(blk->data, b->buf, (int)blk->csize, (int)b->cap);
    if (r < 0 || (uint32_t)r != blk->usize)
      return dk__error_set(err, DK_CORRUPT, "stats block does not decompress");
  }
  b->blk = blk;
  return DK_OK;
}

void dk_log__stats_reader_init(dk__stats_reader *r, const dk_allocator *alloc, dk__exec *exec) {
  memset(r, 0, sizeof *r);
  r->alloc = alloc;
  r->exec = dk__exec_threads(exec) > 1 ? exec : NULL;
  sbuf_init(&r->cur, alloc);
  sbuf_init(&r->ahead, alloc);
}

/* Waits for the block being read ahead, if any. */
static void ahead_wait(dk__stats_reader *r) {
  if (!r->ahead_blk) return;
  dk__exec_join(r->exec, &r->task);
  r->ahead_blk = NULL;
}

void dk_log__stats_reader_dispose(dk__stats_reader *r) {
  ahead_wait(r);
  sbuf_dispose(&r->cur, r->alloc);
  sbuf_dispose(&r->ahead, r->alloc);
}

static void ahead_task(void *arg) {
  dk__stats_reader *r = arg;
  dk_error e;
  dk_error_init(&e);
  /* a failure is reported when the reader decodes the block itself */
  (void)sbuf_decode(&r->ahead, r->ahead_blk, r->alloc, &e);
}

/* Makes r->cur hold blk: taken over from the read-ahead when it decoded blk, else decoded
 * here; then the chunk's next page is handed to the executor. */
static dk_status reader_load(dk__stats_reader *r, const dk__sblock *blk, dk_error *err) {
  if (r->ahead_blk) {
    const dk__sblock *want = r->ahead_blk;
    ahead_wait(r);
    if (want == blk && r->ahead.blk == blk) {
      dk__stats_buf t = r->cur;
      r->cur = r->ahead;
      r->ahead = t;
    }
  }
  if (r->cur.blk != blk) DK_RETURN_NOT_OK(sbuf_decode(&r->cur, blk, r->alloc, err));
  if (r->exec && blk->is_page && blk->next) {
    r->ahead.blk = NULL;
    r->ahead_blk = blk->next;
    dk__exec_submit(r->exec, &r->task, ahead_task, r);
  }
  return DK_OK;
}

dk_status dk_log__stats_get(const char **out, dk__stats_reader *r, const dk__file *f,
                            dk_error *err) {
  const dk__sblock *b = f->sblk;
  *out = NULL;
  if (!b) return DK_OK;
  if (b->raw) {
    *out = (const char *)b->data + f->soff;
    return DK_OK;
  }
  if (r->cur.blk != b) DK_RETURN_NOT_OK(reader_load(r, b, err));
  if (!b->is_page) {
    *out = r->cur.buf + f->soff;
    return DK_OK;
  }
  uint32_t row = f->soff;
  if (row >= (uint32_t)b->page.num_values) return DK_OK;
  uint32_t o = r->cur.offs[row];
  if (o != UINT32_MAX) *out = r->cur.text.data + o;
  return DK_OK;
}
