/* test_changes_offset.c — stream offsets (dk/changes.h) against Delta's DeltaSourceOffset
** JSON: offsets Spark's streaming source wrote (copied from the CDF oracle's recentProgress,
** tests/interop/cdf_oracle.py, table cdf_basic) parse to the offsets they name and are written
** back byte for byte; BASE/-1 and the metadata-change indexes follow Spark's serializer;
** malformed offsets, reserved/new source versions and another table's offsets are DK_INVALID. */
#include <string.h>

#include "dk/changes.h"
#include "test.h"

static const char *ID = "5b186891-a1a7-429c-a059-46bef7418a32";

DK_TEST(changes__offset_spark_round_trip) {
  static const char *spark[] = {
      "{\"sourceVersion\":1,\"reservoirId\":\"5b186891-a1a7-429c-a059-46bef7418a32\","
      "\"reservoirVersion\":10,\"index\":-1,\"isStartingVersion\":false}",
      "{\"sourceVersion\":1,\"reservoirId\":\"5b186891-a1a7-429c-a059-46bef7418a32\","
      "\"reservoirVersion\":1,\"index\":0,\"isStartingVersion\":false}",
      "{\"sourceVersion\":1,\"reservoirId\":\"5b186891-a1a7-429c-a059-46bef7418a32\","
      "\"reservoirVersion\":9,\"index\":3,\"isStartingVersion\":true}",
  };
  const int64_t want[][3] = {{10, DK_STREAM_INDEX_BASE, 0}, {1, 0, 0}, {9, 3, 1}};
  for (size_t i = 0; i < sizeof spark / sizeof *spark; i++) {
    dk_error err = {0};
    dk_stream_offset o;
    CHECK_OK(dk_stream_offset_parse(&o, spark[i], strlen(spark[i]), ID, &err), &err);
    CHECK_EQ_INT(o.version, want[i][0]);
    CHECK_EQ_INT(o.index, want[i][1]);
    CHECK_EQ_INT(o.is_initial_snapshot, want[i][2]);
    char buf[256];
    size_t n = dk_stream_offset_json(buf, sizeof buf, &o, ID);
    CHECK_EQ_INT((int64_t)n, (int64_t)strlen(spark[i]));
    CHECK_EQ_STR(buf, spark[i]);
    /* a short buffer is truncated, NUL-terminated, and the needed length still returned */
    char small[20];
    CHECK_EQ_INT((int64_t)dk_stream_offset_json(small, sizeof small, &o, ID), (int64_t)n);
    CHECK_EQ_INT((int64_t)strlen(small), (int64_t)sizeof small - 1);
  }
}

DK_TEST(changes__offset_metadata_index_and_order) {
  dk_error err = {0};
  dk_stream_offset o = {7, DK_STREAM_INDEX_METADATA_CHANGE, 0}, back;
  char buf[256];
  dk_stream_offset_json(buf, sizeof buf, &o, "t\"id");
  CHECK(strstr(buf, "\"sourceVersion\":3") != NULL);
  CHECK(strstr(buf, "\"index\":-20") != NULL);
  CHECK(strstr(buf, "\"reservoirId\":\"t\\\"id\"") != NULL);
  CHECK_OK(dk_stream_offset_parse(&back, buf, strlen(buf), "t\"id", &err), &err);
  CHECK_EQ_INT(back.index, DK_STREAM_INDEX_METADATA_CHANGE);
  /* BASE under sourceVersion 3 is written as -100 by Spark when forced to v3 */
  const char *v3 = "{\"sourceVersion\":3,\"reservoirId\":\"x\",\"reservoirVersion\":2,"
                   "\"index\":-100,\"isStartingVersion\":false}";
  CHECK_OK(dk_stream_offset_parse(&back, v3, strlen(v3), NULL, &err), &err);
  CHECK_EQ_INT(back.index, DK_STREAM_INDEX_BASE);
  dk_stream_offset a = {3, DK_STREAM_INDEX_BASE, 0}, b = {3, 0, 0}, c = {4, -100, 0};
  CHECK(dk_stream_offset_compare(&a, &b) < 0);
  CHECK(dk_stream_offset_compare(&b, &c) < 0);
  CHECK(dk_stream_offset_compare(&c, &c) == 0);
}

DK_TEST(changes__offset_rejects_bad_input) {
  static const char *bad[] = {
      "", "{", "[1]", "{\"sourceVersion\":1}",
      "{\"sourceVersion\":2,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":0}",
      "{\"sourceVersion\":4,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":0}",
      "{\"sourceVersion\":1,\"reservoirId\":7,\"reservoirVersion\":1,\"index\":0}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":\"1\",\"index\":0}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":-3,\"index\":0}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":-20}",
      "{\"sourceVersion\":3,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":-1}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":-7}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":1,"
      "\"index\":9223372036854775707}",
      "{\"sourceVersion\":1,\"reservoirId\":\"x\",\"reservoirVersion\":1,\"index\":0,"
      "\"isStartingVersion\":\"no\"}",
      "{\"sourceVersion\":1,\"reservoirId\":\"other\",\"reservoirVersion\":1,\"index\":0}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    dk_error err = {0};
    dk_stream_offset o;
    CHECK_STATUS(dk_stream_offset_parse(&o, bad[i], strlen(bad[i]), "x", &err), DK_INVALID);
    CHECK(err.message[0] != 0);
  }
  dk_error err = {0};
  dk_stream_offset o;
  const char *other = bad[sizeof bad / sizeof *bad - 1];
  CHECK_STATUS(dk_stream_offset_parse(&o, other, strlen(other), "x", &err), DK_INVALID);
  CHECK(strstr(err.message, "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE") != NULL);
}
