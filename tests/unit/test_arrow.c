/* test_arrow.c — Arrow builders and export: layouts checked against the Arrow columnar spec. */
#include "arrow/array.h"
#include "test.h"

DK_TEST(arrow__format_roundtrip) {
  const char *fmts[] = {"b", "c", "s", "i", "l", "C", "S", "I", "L", "f", "g", "tdD", "u", "z",
                        "+l", "+s", "+m", "d:38,10", "w:16", "tsu:UTC", "tsu:", "tsn:", "ttu"};
  dk_error err = {0};
  for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
    dk_atype t;
    char buf[64];
    CHECK_OK(dk__atype_parse(&t, fmts[i], &err), &err);
    CHECK_OK(dk__atype_format(&t, buf, sizeof buf, &err), &err);
    CHECK_EQ_STR(buf, fmts[i]);
  }
  dk_atype t;
  CHECK_STATUS(dk__atype_parse(&t, "+ud:1,2", &err), DK_UNSUPPORTED);
}

DK_TEST(arrow__int64_with_nulls) {
  dk_error err = {0};
  dk_arr a;
  dk_atype t = dk__atype_make(DK_AT_INT64);
  CHECK_OK(dk__arr_init(&a, &t, NULL, &err), &err);
  for (int i = 0; i < 100; i++) {
    if (i % 7 == 3)
      CHECK_OK(dk__arr_append_null(&a, &err), &err);
    else
      CHECK_OK(dk__arr_append_int(&a, i * 1000000000LL, &err), &err);
  }
  struct ArrowArray out;
  CHECK_OK(dk__arr_finish(&a, &out, &err), &err);
  CHECK_EQ_INT(out.length, 100);
  CHECK_EQ_INT(out.null_count, 14);
  CHECK_EQ_INT(out.n_buffers, 2);
  const uint8_t *valid = out.buffers[0];
  const int64_t *v = out.buffers[1];
  CHECK(((uintptr_t)v & 63) == 0);
  for (int i = 0; i < 100; i++) {
    CHECK_EQ_INT(dk__bit_get(valid, i), i % 7 != 3);
    if (i % 7 != 3) CHECK_EQ_INT(v[i], i * 1000000000LL);
  }
  out.release(&out);
  CHECK(out.release == NULL);
  /* builder is reusable */
  CHECK_OK(dk__arr_append_int(&a, 5, &err), &err);
  CHECK_OK(dk__arr_finish(&a, &out, &err), &err);
  CHECK_EQ_INT(out.length, 1);
  CHECK_EQ_INT(out.null_count, 0);
  CHECK(out.buffers[0] == NULL);
  out.release(&out);
  dk__arr_reset(&a);
}

DK_TEST(arrow__nested_list_struct_string) {
  /* list<struct<s: utf8, b: bool>> */
  dk_error err = {0};
  struct ArrowSchema s;
  dk_atype tl = dk__atype_make(DK_AT_LIST), ts = dk__atype_make(DK_AT_STRUCT),
           tu = dk__atype_make(DK_AT_STRING), tb = dk__atype_make(DK_AT_BOOL);
  CHECK_OK(dk__schema_init(&s, &tl, "l", ARROW_FLAG_NULLABLE, 1, &err), &err);
  CHECK_OK(dk__schema_init(s.children[0], &ts, "element", ARROW_FLAG_NULLABLE, 2, &err), &err);
  CHECK_OK(dk__schema_init(s.children[0]->children[0], &tu, "s", ARROW_FLAG_NULLABLE, 0, &err), &err);
  CHECK_OK(dk__schema_init(s.children[0]->children[1], &tb, "b", 0, 0, &err), &err);
  const char *k[] = {"PARQUET:field_id"}, *v[] = {"7"};
  CHECK_OK(dk__schema_set_metadata(s.children[0]->children[0], k, v, 1, &err), &err);
  dk_str md = dk__schema_metadata_get(s.children[0]->children[0]->metadata, "PARQUET:field_id");
  CHECK(md.len == 1 && md.ptr[0] == '7');
  struct ArrowSchema copy;
  CHECK_OK(dk__schema_copy(&copy, &s, &err), &err);
  CHECK_EQ_STR(copy.children[0]->children[1]->name, "b");
  s.release(&s);

  dk_arr a;
  CHECK_OK(dk__arr_init_from_schema(&a, &copy, NULL, &err), &err);
  dk_arr *st = &a.children[0];
  /* row 0: [ {s:"x", b:true}, null ] ; row 1: null ; row 2: [] */
  CHECK_OK(dk__arr_append_bytes(&st->children[0], "x", 1, &err), &err);
  CHECK_OK(dk__arr_append_bool(&st->children[1], true, &err), &err);
  CHECK_OK(dk__arr_finish_element(st, &err), &err);
  CHECK_OK(dk__arr_append_null(st, &err), &err);
  CHECK_OK(dk__arr_finish_element(&a, &err), &err);
  CHECK_OK(dk__arr_append_null(&a, &err), &err);
  CHECK_OK(dk__arr_finish_element(&a, &err), &err);
  struct ArrowArray out;
  CHECK_OK(dk__arr_finish(&a, &out, &err), &err);
  CHECK_EQ_INT(out.length, 3);
  CHECK_EQ_INT(out.null_count, 1);
  const int32_t *off = out.buffers[1];
  CHECK(off[0] == 0 && off[1] == 2 && off[2] == 2 && off[3] == 2);
  struct ArrowArray *sa = out.children[0];
  CHECK_EQ_INT(sa->length, 2);
  CHECK_EQ_INT(sa->null_count, 1);
  CHECK_EQ_INT(sa->children[0]->length, 2);
  CHECK_EQ_INT(sa->children[1]->length, 2);
  const int32_t *soff = sa->children[0]->buffers[1];
  CHECK(soff[0] == 0 && soff[1] == 1 && soff[2] == 1);
  CHECK(memcmp(sa->children[0]->buffers[2], "x", 1) == 0);
  out.release(&out);
  dk__arr_reset(&a);
  copy.release(&copy);
}

DK_TEST(arrow__stream_from_batches) {
  dk_error err = {0};
  struct ArrowSchema s;
  dk_atype ti = dk__atype_make(DK_AT_INT32);
  CHECK_OK(dk__schema_init(&s, &ti, "x", ARROW_FLAG_NULLABLE, 0, &err), &err);
  dk_arr a;
  CHECK_OK(dk__arr_init(&a, &ti, NULL, &err), &err);
  struct ArrowArray batches[2];
  CHECK_OK(dk__arr_append_int(&a, 1, &err), &err);
  CHECK_OK(dk__arr_finish(&a, &batches[0], &err), &err);
  CHECK_OK(dk__arr_append_int(&a, 2, &err), &err);
  CHECK_OK(dk__arr_append_int(&a, 3, &err), &err);
  CHECK_OK(dk__arr_finish(&a, &batches[1], &err), &err);
  dk__arr_reset(&a);
  struct ArrowArrayStream stream;
  CHECK_OK(dk__stream_from_batches(&stream, &s, batches, 2, NULL, &err), &err);
  CHECK(s.release == NULL);
  struct ArrowSchema got;
  CHECK(stream.get_schema(&stream, &got) == 0);
  CHECK_EQ_STR(got.format, "i");
  got.release(&got);
  struct ArrowArray b;
  CHECK(stream.get_next(&stream, &b) == 0 && b.length == 1);
  b.release(&b);
  /* release with one batch still pending: must not leak (ASan) */
  stream.release(&stream);
}
