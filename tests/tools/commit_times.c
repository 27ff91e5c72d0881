/*
** commit_times.c — test tool: the commit times dk gives a commit range (dk/history.h
** dk_commit_range_open / dk_commit_range_timestamp, what the change data feed reports as
** _commit_timestamp), for tests/spark/test_spark_history.py to compare with delta-spark's
** readChangeFeed. Usage: dk_test_commit_times TABLE FIRST LAST; prints one JSON object
** {"<version>": <ms>, ...}; exit 1 with dk's message on stderr on error.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dk/history.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: dk_test_commit_times TABLE FIRST LAST\n");
    return 2;
  }
  int64_t first = strtoll(argv[2], NULL, 10), last = strtoll(argv[3], NULL, 10);
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_commit_range *r = NULL;
  if (dk_table_open(&t, argv[1], NULL, &err) != DK_OK ||
      dk_commit_range_open(&r, t, first, last, &err) != DK_OK) {
    fprintf(stderr, "dk_test_commit_times: %s\n", err.message);
    dk_table_free(t);
    return 1;
  }
  printf("{");
  for (int64_t v = first; v <= last; v++)
    printf("%s\"%" PRId64 "\": %" PRId64, v > first ? ", " : "", v, dk_commit_range_timestamp(r, v));
  printf("}\n");
  dk_commit_range_free(r);
  dk_table_free(t);
  return 0;
}
