/*
** expand.c — `delta_scan('path' [, version])` and `delta_changes('path', start [, end])` for
** the dk SQLite connector. SQLite fixes a
** table-valued function's columns when the statement is prepared, before it sees the path,
** so a scan whose columns are the table's cannot be eponymous. dk_sqlite_expand_sql() finds
** each delta_scan(...) call (outside string literals, quoted identifiers and comments) whose
** arguments are literals, creates `temp."_dk_scan_<hash>"` USING delta(<the same arguments>)
** once per distinct argument text, and substitutes that name for the call (delta_changes:
** `temp."_dk_changes_<hash>"` USING delta_changes).
*/
#include <ctype.h>
#include <string.h>

#include "dk_sqlite.h"

/* Length of the token starting at s that must be copied verbatim (string, quoted name,
** comment), or 0. */
static size_t skip_opaque(const char *s) {
  char q = s[0];
  if (q == '\'' || q == '"' || q == '`' || q == '[') {
    char e = q == '[' ? ']' : q;
    size_t i = 1;
    for (;;) {
      if (!s[i]) return i;
      if (s[i] == e) {
        if (e != ']' && s[i + 1] == e) {
          i += 2;
          continue;
        }
        return i + 1;
      }
      i++;
    }
  }
  if (s[0] == '-' && s[1] == '-') {
    size_t i = 2;
    while (s[i] && s[i] != '\n') i++;
    return i;
  }
  if (s[0] == '/' && s[1] == '*') {
    const char *e = strstr(s + 2, "*/");
    return e ? (size_t)(e - s) + 2 : strlen(s);
  }
  return 0;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$'; }

/* The functions expanded and the modules their temp tables use. */
static const struct {
  const char *fn, *module, *prefix;
} EXPANDED[] = {{"delta_scan", "delta", "_dk_scan_"}, {"delta_changes", "delta_changes", "_dk_changes_"}};

int dk_sqlite_expand_sql(sqlite3 *db, const char *sql, char **out, char **errmsg) {
  sqlite3_str *o = sqlite3_str_new(db);
  *out = NULL;
  *errmsg = NULL;
  size_t i = 0;
  while (sql[i]) {
    size_t n = skip_opaque(sql + i);
    if (n) {
      sqlite3_str_append(o, sql + i, (int)n);
      i += n;
      continue;
    }
    int which = -1;
    size_t kwlen = 0;
    for (int f = 0; f < 2 && (i == 0 || !ident_char(sql[i - 1])); f++) {
      size_t l = strlen(EXPANDED[f].fn);
      if (!sqlite3_strnicmp(sql + i, EXPANDED[f].fn, (int)l) && !ident_char(sql[i + l])) {
        which = f;
        kwlen = l;
      }
    }
    if (which >= 0) {
      size_t j = i + kwlen;
      while (isspace((unsigned char)sql[j])) j++;
      if (sql[j] == '(') {
        /* the argument text up to the matching ')', literals only (no nested parentheses) */
        size_t a = j + 1, k = a;
        int ok = 1;
        while (sql[k] && sql[k] != ')') {
          size_t m = skip_opaque(sql + k);
          if (m) {
            if (sql[k] != '\'') ok = 0;
            k += m;
          } else {
            if (sql[k] == '(' || sql[k] == ';') ok = 0;
            k++;
          }
        }
        if (sql[k] == ')' && ok) {
          uint64_t h = 1469598103934665603ULL;
          for (size_t x = a; x < k; x++) h = (h ^ (unsigned char)sql[x]) * 1099511628211ULL;
          char *ddl = sqlite3_mprintf(
              "CREATE VIRTUAL TABLE IF NOT EXISTS temp.\"%s%016llx\" USING %s(%.*s)",
              EXPANDED[which].prefix, (unsigned long long)h, EXPANDED[which].module,
              (int)(k - a), sql + a);
          if (!ddl) break;
          char *e = NULL;
          int rc = sqlite3_exec(db, ddl, NULL, NULL, &e);
          sqlite3_free(ddl);
          if (rc) {
            *errmsg = e ? e : sqlite3_mprintf("%s", sqlite3_errmsg(db));
            sqlite3_free(sqlite3_str_finish(o));
            return rc;
          }
          sqlite3_str_appendf(o, "temp.\"%s%016llx\"", EXPANDED[which].prefix,
                              (unsigned long long)h);
          i = k + 1;
          continue;
        }
      }
    }
    sqlite3_str_append(o, sql + i, 1);
    i++;
  }
  int rc = sqlite3_str_errcode(o);
  *out = sqlite3_str_finish(o);
  if (rc == SQLITE_OK && !*out) *out = sqlite3_mprintf("");
  return *out ? rc : SQLITE_NOMEM;
}
