/*
** xml.c — the XML documents S3 answers with (ListBucketResult of ListObjectsV2, Error,
** InitiateMultipartUploadResult, CompleteMultipartUploadResult), read with expat.
**
** Why expat (libexpat1-dev) and not libxml2: S3's documents are flat records read once, front
** to back, so a streaming (SAX) parser is all that is needed; expat is small, keeps no global
** state (libxml2 has process-wide initialisation and error handlers), and resists entity
** expansion attacks by default (2.4+). dk_s3__xml_parse reduces expat's callbacks to one:
** "element at path P ended with text T", which every document here is read through.
*/
#include <expat.h>
#include <stdio.h>

#include "storage/s3/s3.h"

typedef struct xml_state {
  dk_buf path;          /* "A/B/C" of the open elements */
  size_t *marks;        /* path length before each open element */
  size_t depth, cap;
  dk_buf text;          /* text of the innermost open element */
  dk_s3__xml_cb cb;
  void *ctx;
  dk_status st;
  XML_Parser parser;
  dk_error *err;
  const dk_allocator *alloc;
} xml_state;

static void stop(xml_state *x, dk_status st) {
  if (x->st == DK_OK) x->st = st;
  XML_StopParser(x->parser, XML_FALSE);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs) {
  (void)attrs;
  xml_state *x = ud;
  if (x->st != DK_OK) return;
  if (x->depth == x->cap) {
    size_t nc = x->cap ? x->cap * 2 : 16;
    size_t *m = dk__realloc(x->alloc, x->marks, nc * sizeof *m);
    if (!m) return stop(x, dk__error_set(x->err, DK_NOMEM, "out of memory parsing XML"));
    x->marks = m;
    x->cap = nc;
  }
  x->marks[x->depth++] = x->path.len;
  const char *local = strchr(name, ' '); /* namespace separator (not used: no ns parsing) */
  local = local ? local + 1 : name;
  if ((x->path.len && dk__buf_putc(&x->path, '/', x->err) != DK_OK) ||
      dk__buf_puts(&x->path, local, x->err) != DK_OK)
    return stop(x, DK_NOMEM);
  dk__buf_clear(&x->text);
}

static void XMLCALL on_end(void *ud, const XML_Char *name) {
  (void)name;
  xml_state *x = ud;
  if (x->st != DK_OK || x->depth == 0) return;
  dk_status st = x->cb(x->ctx, x->path.data ? x->path.data : "", x->text.data ? x->text.data : "",
                       x->text.len);
  if (st != DK_OK) return stop(x, st);
  x->path.len = x->marks[--x->depth];
  if (x->path.data) x->path.data[x->path.len] = 0;
  dk__buf_clear(&x->text);
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len) {
  xml_state *x = ud;
  if (x->st != DK_OK) return;
  if (dk__buf_append(&x->text, s, (size_t)len, x->err) != DK_OK) stop(x, DK_NOMEM);
}

dk_status dk_s3__xml_parse(const char *doc, size_t len, dk_s3__xml_cb cb, void *ctx,
                           const dk_allocator *alloc, dk_error *err) {
  DK_RETURN_IF(len > (size_t)INT32_MAX, DK_CORRUPT, err, "s3: XML response too large");
  XML_Parser p = XML_ParserCreate("UTF-8");
  DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory (XML parser)");
  xml_state x = {.cb = cb, .ctx = ctx, .parser = p, .err = err, .alloc = alloc};
  dk__buf_init(&x.path, alloc);
  dk__buf_init(&x.text, alloc);
  XML_SetUserData(p, &x);
  XML_SetElementHandler(p, on_start, on_end);
  XML_SetCharacterDataHandler(p, on_text);
  if (XML_Parse(p, doc, (int)len, XML_TRUE) == XML_STATUS_ERROR && x.st == DK_OK)
    x.st = dk__error_set(err, DK_CORRUPT, "s3: malformed XML response (line %lu: %s)",
                         (unsigned long)XML_GetCurrentLineNumber(p),
                         XML_ErrorString(XML_GetErrorCode(p)));
  XML_ParserFree(p);
  dk__buf_dispose(&x.path);
  dk__buf_dispose(&x.text);
  dk__free(alloc, x.marks);
  return x.st;
}

/* ---- <Error> ------------------------------------------------------------------------------ */

static void copy_field(char *dst, size_t cap, const char *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}

static dk_status on_error_elem(void *ctx, const char *path, const char *text, size_t len) {
  dk_s3__xml_error *e = ctx;
  if (!strcmp(path, "Error/Code")) copy_field(e->code, sizeof e->code, text, len);
  else if (!strcmp(path, "Error/Message")) copy_field(e->message, sizeof e->message, text, len);
  else if (!strcmp(path, "Error/RequestId")) copy_field(e->request_id, sizeof e->request_id, text, len);
  return DK_OK;
}

int dk_s3__xml_error_parse(const char *doc, size_t len, dk_s3__xml_error *e,
                           const dk_allocator *alloc) {
  memset(e, 0, sizeof *e);
  if (!doc || !len || !memchr(doc, '<', len < 512 ? len : 512)) return 0;
  dk_error ignored = {0};
  (void)dk_s3__xml_parse(doc, len, on_error_elem, e, alloc, &ignored);
  return e->code[0] != 0;
}
