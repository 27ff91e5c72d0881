/*
** main.c — the `dk` command line tool: the command table, help, version, dispatch.
**
** Conventions (README "Command line", docs/cli.md, docs/dk.1): `dk --help`, `dk help [COMMAND]`
** and `dk COMMAND --help` print help on stdout and exit 0; `dk --version` prints the version.
** Exit status: 0 success, 1 a runtime error (the table or file could not be read: not found,
** corrupt, unsupported feature, I/O), 2 a usage error (unknown command or option, a missing or
** malformed argument), 4 a commit conflict of a writing command (cmd_txn.c; retry).
** Errors go to stderr as "dk COMMAND: ...".
*/
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct cli_command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary; /* one line of `dk --help` */
  const char *help;    /* `dk help NAME`: usage lines, a blank line, then the options */
} cli_command;

#define SNAPSHOT_OPTS                                                                       \
  "  --version N        the table as of version N (default: the latest)\n"                 \
  "  --timestamp TS     the latest version committed at or before TS (milliseconds since\n" \
  "                     the epoch, or 'YYYY-MM-DD[ HH:MM:SS[.fff]]' in UTC)\n"              \
  "  --threads N        threads replaying the log (0 = one per CPU, 1 = none)\n"       \
  "  --storage-option KEY=VALUE   for s3://bucket/prefix tables: aws_endpoint_url,\n"     \
  "                     aws_region, ... (default: the AWS_* environment)\n"

static const cli_command commands[] = {
    {"describe", dk_cli_describe, "snapshot summary: version, schema, protocol, properties",
     "usage: dk describe TABLE [--version N | --timestamp TS] [--json] [--threads N]\n"
     "\n"
     "Prints a snapshot of the Delta table at TABLE (a path or file:// URI): version, commit\n"
     "timestamp, id, format, protocol, partition columns, file count and size, schema and\n"
     "properties.\n"
     "\n" SNAPSHOT_OPTS
     "  --json             one JSON object (docs/cli.md \"dk describe --json\")\n"},
    {"history", dk_cli_history, "commitInfo of each version, newest first",
     "usage: dk history TABLE [--limit N] [--json] [--threads N]\n"
     "\n"
     "Prints one line per version, newest first: version, commit timestamp, operation.\n"
     "\n"
     "  --limit N          at most N versions (0 = all)\n"
     "  --json             one JSON array (docs/cli.md \"dk history --json\")\n"
     "  --threads N        threads replaying the log (0 = one per CPU, 1 = none)\n"},
    {"files", dk_cli_files, "the active data files of a snapshot",
     "usage: dk files TABLE [--version N | --timestamp TS] [--json] [--threads N]\n"
     "       dk files TABLE [--version N | --timestamp TS] --where EXPR [--json]\n"
     "\n"
     "Prints the active files: path, size, partition values, deletion vector. With --where,\n"
     "the files a scan with that filter reads and those it skips, with the reason\n"
     "(partition values or statistics).\n"
     "\n" SNAPSHOT_OPTS
     "  --where EXPR       a filter (dk's predicate grammar: include/dk/expr.h)\n"
     "  --json             one JSON object (docs/cli.md \"dk files --json\")\n"},
    {"scan", dk_cli_scan, "read rows",
     "usage: dk scan TABLE [--version N | --timestamp TS] [--columns a,b.c] [--where EXPR]\n"
     "               [--limit N] [--with-metadata] [--format jsonl|csv|table] [--threads N]\n"
     "               [--batch-size N] [--stats] [--no-page-checksums]\n"
     "\n"
     "Reads the table's rows (deletion vectors applied, column mapping resolved, partition\n"
     "values filled in) and prints them, one JSON object per line by default.\n"
     "\n"
     "  --version N, --timestamp TS   time travel, as for dk describe\n"
     "  --columns a,b.c    the columns to read (nested fields by dotted path; default all)\n"
     "  --where EXPR       a filter; files and row groups it rules out are not read\n"
     "  --limit N          at most N rows\n"
     "  --with-metadata    append the _metadata struct (file path, name, size, row index...)\n"
     "  --format F         jsonl (default), csv or table\n"
     "  --threads N        reader threads (one file each at a time)\n"
     "  --batch-size N     rows per batch (default 65536)\n"
     "  --stats            after the rows, what pushdown did, as JSON on stderr\n"
     "  --no-page-checksums  do not verify Parquet page CRCs (verified when present)\n"},
    {"parquet", dk_cli_parquet, "inspect and read one Parquet file",
     "usage: dk parquet schema FILE\n"
     "       dk parquet meta FILE\n"
     "       dk parquet cat FILE [--columns a,b.c] [--format jsonl|csv|table|count]\n"
     "                           [--batch-size N] [--row-groups 0,2] [--range START,END]\n"
     "                           [--field-ids 1,5] [--limit ROWS] [--mmap] [--threads N]\n"
     "                           [--no-page-checksums]\n"
     "       dk parquet write OUT --from IN [--format parquet|csv|jsonl]\n"
     "                           [--compression snappy|zstd|gzip|lz4_raw|none]\n"
     "                           [--row-group-size ROWS] [--page-version 1|2]\n"
     "                           [--no-dictionary] [--threads N]\n"
     "\n"
     "schema prints the file's schema as Arrow types; meta prints its footer (row groups,\n"
     "column chunks, statistics, encodings) as JSON; cat prints its rows; write writes a new\n"
     "Parquet file from a Parquet, CSV or JSON-lines file with dk's writer (nothing appears at\n"
     "OUT unless the write succeeds).\n"
     "\n"
     "  --columns a,b.c    the columns to read (default all)\n"
     "  --format F         jsonl (default), csv, table, or count (decode, print the row count)\n"
     "  --row-groups L     only these row groups;  --range S,E: the row groups whose first\n"
     "                     byte lies in [S, E)\n"
     "  --field-ids L      the columns with these Parquet field ids\n"
     "  --limit ROWS       at most ROWS rows\n"
     "  --mmap             map the file instead of reading it (pread)\n"
     "  --threads N        decode threads;  --batch-size N: rows per batch\n"
     "  --no-page-checksums  do not verify page CRCs (verified when present)\n"},
    {"sql", dk_cli_sql, "SQLite over Delta tables",
     "usage: dk sql \"SQL\" [--format table|jsonl|csv] [--stats] [--allow-attach]\n"
     "\n"
     "Runs SQL in an in-memory SQLite database with dk's connector: delta_scan('path'\n"
     "[, version]), delta_files('path' [, version]), delta_history('path'), and\n"
     "CREATE VIRTUAL TABLE t USING delta('path' [, version=N] [, timestamp='...']).\n"
     "\n"
     "  --format F         table (default), jsonl or csv\n"
     "  --stats            after each statement, what pushdown did, on stderr\n"
     "  --allow-attach     allow ATTACH and VACUUM INTO (refused by default: they open or\n"
     "                     create database files)\n"},
    {"create", dk_cli_create, "CREATE TABLE (a new Delta table, or replace one)",
     "usage: dk create TABLE --schema \"a long, b string\" [--partition-by b,c]\n"
     "                 [--property k=v]... [--replace | --if-not-exists]\n"
     "\n"
     "Writes version 0 of a new table (or, with --replace, a new version replacing the schema\n"
     "and the data of an existing one).\n"
     "\n"
     "  --schema S         the columns, as \"name type, ...\" (Delta type names)\n"
     "  --partition-by L   partition columns\n"
     "  --property k=v     a table property (repeatable)\n"
     "  --replace          replace an existing table;  --if-not-exists: do nothing if it exists\n"},
    {"vacuum", dk_cli_vacuum, "delete files no version within the retention needs",
     "usage: dk vacuum TABLE [--retain-hours N] [--dry-run] [--no-retention-check]\n"
     "\n"
     "  --retain-hours N   the retention (default: the table's, 168 hours)\n"
     "  --dry-run          list the files, delete nothing\n"
     "  --no-retention-check  allow a retention shorter than the table's\n"},
    {"restore", dk_cli_restore, "RESTORE the table to a version (a new commit)",
     "usage: dk restore TABLE --version N\n"},
    {"checkpoint", dk_cli_checkpoint, "write a checkpoint and _last_checkpoint",
     "usage: dk checkpoint TABLE [--version N]\n"},
    {"write", dk_cli_write, "write files' rows to a table in one commit",
     "usage: dk write TABLE FILE... [--mode append|overwrite|error|ignore] [--partition-by a,b]\n"
     "                [--replace-where EXPR] [--dynamic]\n"
     "\n"
     "Writes the rows of the Parquet files as new data files of the Delta table at TABLE, in\n"
     "one WRITE commit (creating the table when there is none), as delta-spark's\n"
     "DataFrameWriter does. A progress line (files, rows, bytes) goes to stderr when it is a\n"
     "terminal.\n"
     "\n"
     "  --mode M           error (default: a new table), append, overwrite, or ignore\n"
     "  --partition-by L   partition columns of a new table\n"
     "  --replace-where E  with --mode overwrite: replace only the rows matching E (every new\n"
     "                     row must match it)\n"
     "  --dynamic          with --mode overwrite: replace exactly the partitions written\n"},
    {"version", NULL, "print dk's version", "usage: dk version   (or dk --version)\n"},
    {"help", NULL, "help on a command", "usage: dk help [COMMAND]   (or dk COMMAND --help)\n"},
};

static const cli_command *find_command(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(commands[i].name, name)) return &commands[i];
  return NULL;
}

static void overview(FILE *f) {
  fprintf(f, "usage: dk COMMAND [ARGS]     dk help COMMAND     dk --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\nExit status: 0 success, 1 runtime error (not found, corrupt, unsupported, I/O),\n"
          "2 usage error, 4 a commit conflict (writing commands). `dk COMMAND --help` shows a\n"
          "command's options.\n");
}

int dk_cli_usage(const char *name) {
  const cli_command *c = find_command(name);
  if (!c) {
    overview(stderr);
    return 2;
  }
  /* the usage lines only: up to the first blank line */
  const char *end = strstr(c->help, "\n\n");
  fprintf(stderr, "%.*s\nTry 'dk help %s' for the options.\n",
          (int)(end ? end - c->help : (long)strlen(c->help) - 1), c->help, name);
  return 2;
}

static int print_version(void) {
  printf("dk %d.%d.%d\n", DK_VERSION_MAJOR, DK_VERSION_MINOR, DK_VERSION_PATCH);
  return 0;
}

static int help(int argc, char **argv) {
  if (argc == 0) {
    overview(stdout);
    return 0;
  }
  const cli_command *c = find_command(argv[0]);
  if (!c || argc > 1) {
    fprintf(stderr, "dk help: unknown command '%s'\n", argv[0]);
    overview(stderr);
    return 2;
  }
  fputs(c->help, stdout);
  return 0;
}

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

int main(int argc, char **argv) {
  if (argc < 2) {
    overview(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (is_help(name)) return help(0, NULL);
  if (!strcmp(name, "--version") || !strcmp(name, "version")) return print_version();
  if (!strcmp(name, "help")) return help(argc - 2, argv + 2);
  /* hidden: `dk _dv TABLE_ROOT DESCRIPTOR_JSON` prints a DV's deleted rows (tests only) */
  if (!strcmp(name, "_dv")) return dk_cli_dv(argc - 2, argv + 2);
  /* hidden: `dk _rows TABLE [--where EXPR] ...` prints the matching row indexes (tests only) */
  if (!strcmp(name, "_rows")) return dk_cli_rows(argc - 2, argv + 2);
  const cli_command *c = find_command(name);
  if (!c || !c->run) {
    fprintf(stderr, "dk: unknown command '%s'\n", name);
    overview(stderr);
    return 2;
  }
  /* `dk COMMAND ... --help`: an option value equal to --help is not supported (sql text
  ** that is exactly "--help" is not SQL either) */
  for (int i = 2; i < argc; i++)
    if (is_help(argv[i])) return help(1, &argv[1]);
  return c->run(argc - 2, argv + 2);
}
