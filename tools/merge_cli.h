/* merge_cli: the `ordo-plan merge` subcommand: plans a model's merged pushes with one of the
 * merge algorithms and writes the ordo-merge/1 plan (or, with --compare, a table of every
 * algorithm's predicted iteration time) to stdout. */
#ifndef ORDO_MERGE_CLI_H
#define ORDO_MERGE_CLI_H

/* ordo__merge_cli runs `ordo-plan merge` with argv[0] == "merge"; returns the process exit
 * status: 0 on success (and for --help), 2 after one line on a usage error, 1 when the model
 * cannot be loaded or planned. */
int ordo__merge_cli(int argc, char **argv);

#endif
