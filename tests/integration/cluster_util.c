/* cluster_util: process helpers for integration tests. */
#include "cluster_util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *bin_path(const char *name)
{
    static char buf[4][1024];
    static int i;
    const char *dir = getenv("ORDO_BIN_DIR");
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir ? dir : "build/bin", name);
    return buf[i];
}

int proc_start(proc_t *p, const char *bin, char *const argv[])
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    p->pid = fork();
    if (p->pid < 0) return -1;
    if (p->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(bin, argv);
        perror(bin);
        _exit(127);
    }
    close(fds[1]);
    p->out_fd = fds[0];
    char line[512];
    size_t n = 0;
    struct pollfd pf = {.fd = p->out_fd, .events = POLLIN};
    for (int waited = 0; waited < 10000;) {
        if (poll(&pf, 1, 100) <= 0) {
            waited += 100;
            continue;
        }
        char c;
        if (read(p->out_fd, &c, 1) != 1) return -1;
        if (c != '\n') {
            if (n < sizeof line - 1) line[n++] = c;
            continue;
        }
        line[n] = '\0';
        n = 0;
        if (strncmp(line, "READY ", 6) == 0) {
            snprintf(p->ready, sizeof p->ready, "%s", line + 6);
            return 0;
        }
    }
    return -1;
}

int proc_wait(proc_t *p, int timeout_ms)
{
    int status;
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            if (p->out_fd >= 0) close(p->out_fd);
            p->out_fd = -1;
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            return 128 + WTERMSIG(status);
        }
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
    if (p->out_fd >= 0) close(p->out_fd);
    p->out_fd = -1;
    return -1;
}
