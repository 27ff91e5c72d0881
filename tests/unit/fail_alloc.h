/*
** fail_alloc.h — a counting dk_allocator that fails from the Nth call on, for tests only
** (SQLite's malloc tests are the model): `left` allocations still succeed, then every one
** fails; `live` counts blocks not yet freed, `calls` every malloc/realloc. Thread-safe (a
** table with several threads allocates on its workers too).
**
**   dk_test_fail_alloc f = {.left = n};
**   dk_allocator a = dk_test_fail_allocator(&f);
**   ... run with a, then CHECK_EQ_INT(f.live, 0) ...
*/
#ifndef DK_TEST_FAIL_ALLOC_H
#define DK_TEST_FAIL_ALLOC_H

#include "dk/common.h"

typedef struct dk_test_fail_alloc {
  long left;  /* allocations that still succeed; then every one fails */
  long live;  /* blocks not yet freed */
  long calls; /* malloc and realloc calls */
} dk_test_fail_alloc;

dk_allocator dk_test_fail_allocator(dk_test_fail_alloc *f);

#endif /* DK_TEST_FAIL_ALLOC_H */
