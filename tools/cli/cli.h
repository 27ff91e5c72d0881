/* cli.h — subcommand entry points of the dk tool. Each returns the process exit code. */
#ifndef DK_CLI_H
#define DK_CLI_H
#include "dk/common.h"
int dk_cli_parquet(int argc, char **argv);
/* Hidden: `dk _dv TABLE_ROOT DESCRIPTOR_JSON` prints a DV's deleted rows (tests only). */
int dk_cli_dv(int argc, char **argv);
/* Hidden: `dk _rows TABLE [--where EXPR] ...` rows the single-file reader selects (tests). */
int dk_cli_rows(int argc, char **argv);
int dk_cli_describe(int argc, char **argv);
int dk_cli_history(int argc, char **argv);
int dk_cli_files(int argc, char **argv);
int dk_cli_scan(int argc, char **argv);
/* `dk sql "SQL" [--format table|jsonl|csv] [--stats]` (cmd_sql.c). */
int dk_cli_sql(int argc, char **argv);
/* `dk files ... --where EXPR` (cmd_scan.c): selected and skipped files. */
int dk_cli_files_where(int argc, char **argv);
/* Shared by describe/files/history (cmd_describe.c). */
struct dk_snapshot_options;
struct dk_table;
struct dk_snapshot;
int dk_cli_snapshot_args(int argc, char **argv, const char **table,
                         struct dk_snapshot_options *o, int *json, int64_t *limit);
int dk_cli_open(const char *uri, const struct dk_snapshot_options *o, struct dk_table **t,
                struct dk_snapshot **s);
void dk_cli_format_ts(char *buf, size_t cap, int64_t ms);
/* Prints a stream's rows to stdout (print_stream.c): format is a DK_PRINT_* value (or'd with
** DK_PRINT_NO_HEADER), or -1 to only count; at most limit rows (-1 = all); *rows gets the count.
** Errors go to stderr as "dk CMD: ..."; returns 0, 1, or 3 when the stream reports corruption. */
struct ArrowArrayStream;
int dk_cli_print_stream(struct ArrowArrayStream *st, int format, int64_t limit, const char *cmd,
                        int64_t *rows);
#endif
