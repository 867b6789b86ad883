/* cluster_util: helpers for multi-process integration tests: start ordo daemons as real
 * processes, read their READY line, wait for them with a bounded timeout, and stop them. */
#ifndef ORDO_CLUSTER_UTIL_H
#define ORDO_CLUSTER_UTIL_H

#include <sys/types.h>

typedef struct {
    pid_t pid;
    int out_fd; /* the child's stdout */
    char ready[512];
} proc_t;

/* proc_start runs bin (a path) with argv (NULL-terminated, argv[0] included), stdout piped;
 * waits up to 10 s for its "READY endpoint" line. Returns 0 or -1. */
int proc_start(proc_t *p, const char *bin, char *const argv[]);

/* proc_wait waits up to timeout_ms for p to exit; returns its exit status, 128+signal when
 * killed, or -1 on timeout (then it is killed). */
int proc_wait(proc_t *p, int timeout_ms);

/* bin_path returns ORDO_BIN_DIR/name in a static buffer. */
const char *bin_path(const char *name);

#endif
