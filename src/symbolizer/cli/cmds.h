/* SPDX-License-Identifier: MIT */
/*
 * cmds.h - the symbolizer's commands, one cmd_<name>.c each; main.c puts
 * them in its command table.
 */
#ifndef SPANPROF_SYMBOLIZER_CMDS_H
#define SPANPROF_SYMBOLIZER_CMDS_H

#include "symbolizer/cli/cli.h"

extern const struct sp_cmd sp_cmd_file;
extern const struct sp_cmd sp_cmd_report;
extern const struct sp_cmd sp_cmd_addr;
extern const struct sp_cmd sp_cmd_lookup;
extern const struct sp_cmd sp_cmd_serve;

#endif /* SPANPROF_SYMBOLIZER_CMDS_H */
