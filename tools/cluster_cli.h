/* cluster_cli: the `ordo-plan cluster` subcommand: a cluster's predicted training step under
 * ordo's parameter servers and under all-reduce, and the settings it recommends
 * (docs/planning.md). */
#ifndef ORDO_CLUSTER_CLI_H
#define ORDO_CLUSTER_CLI_H

/* ordo__cluster_cli runs `ordo-plan cluster` with argv[0] == "cluster"; returns the process
 * exit status: 0 on success (and for --help), 2 after one line naming the option on a usage
 * error or an impossible cluster, 1 when the model cannot be loaded. */
int ordo__cluster_cli(int argc, char **argv);

#endif
