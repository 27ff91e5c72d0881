/*
** ext.c — entry point of the loadable extension dk_sqlite.so. SQLite's default entry point
** for a file named dk_sqlite.so is sqlite3_dksqlite_init (https://sqlite.org/loadext.html:
** "sqlite3_" + the file name's letters, lowercased, up to the first '.', without "lib").
** Compiled only into the extension (DK_SQLITE_LOADABLE).
*/
#ifdef DK_SQLITE_LOADABLE
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#include "dk_sqlite.h"

__attribute__((visibility("default"))) int sqlite3_dksqlite_init(
    sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  int rc = dk_sqlite_register(db, NULL);
  if (rc != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("dk_sqlite: cannot register modules");
  return rc;
}
#else
typedef int dk_sqlite_ext_unused; /* ISO C forbids an empty translation unit */
#endif
