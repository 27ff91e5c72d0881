/* cli.h — subcommand entry points of the dk tool. Each returns the process exit code. */
#ifndef DK_CLI_H
#define DK_CLI_H
#include "dk/common.h"
int dk_cli_parquet(int argc, char **argv);
/* Hidden: `dk _dv TABLE_ROOT DESCRIPTOR_JSON` prints a DV's deleted rows (tests only). */
int dk_cli_dv(int argc, char **argv);
#endif
