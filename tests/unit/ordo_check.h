/* ordo_check: assertion helpers for ordo's Check suites, and their capability skips.
 * ORDO_CK_OK(expr) fails with the expression and the error text; ORDO_CK_ERR(expr, code)
 * expects a given error code. Cases that need something the machine may lack (the
 * Fashion-MNIST files, a CUDA device) sit in TCases tagged with the capability ("fmnist",
 * "cuda"); ctest runs them as their own entry (CK_INCLUDE_TAGS) with ORDO_CK_NEEDS naming the
 * capabilities, and main exits 77 ("SKIP: <reason>", ctest's SKIP_RETURN_CODE) before running
 * the suite when one is missing. No case returns early as a pass. */
#ifndef ORDO_CHECK_H
#define ORDO_CHECK_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"

#define ORDO_CK_OK(expr)                                                                   \
    do {                                                                                   \
        int ck_rc_ = (expr);                                                               \
        ck_assert_msg(ck_rc_ == 0, "%s: %s", #expr, ordo__error_text(ck_rc_));              \
    } while (0)

#define ORDO_CK_ERR(expr, code)                                                            \
    do {                                                                                   \
        int ck_rc_ = (expr);                                                               \
        ck_assert_msg(ck_rc_ == (code), "%s: expected %s, got %s (%s)", #expr,             \
                      ordo_strerror(code), ordo_strerror(ck_rc_), ordo__error_detail());    \
    } while (0)

/* ordo_ck_probe_fn returns NULL when the capability named need is there, else why it is not;
 * a suite passes one to ORDO_CK_MAIN_PROBE for capabilities other than "fmnist". */
typedef const char *(*ordo_ck_probe_fn)(const char *need);

/* ordo_ck_fmnist_dir returns where the tests look for Fashion-MNIST: ORDO_MODEL_DATA_DIR (the
 * conf's own environment override of [model] data_dir, which the launched runs read too), or
 * the conf's default. */
static inline const char *ordo_ck_fmnist_dir(void)
{
    const char *d = getenv("ORDO_MODEL_DATA_DIR");
    return d && d[0] ? d : "/usr/share/datasets/fashion-mnist";
}

/* ordo_ck_fmnist_missing returns NULL when the training and test images are readable, else
 * why not. */
static inline const char *ordo_ck_fmnist_missing(void)
{
    static char why[700];
    const char *files[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[560];
        snprintf(path, sizeof path, "%s/%s", ordo_ck_fmnist_dir(), files[i]);
        if (access(path, R_OK) != 0) {
            snprintf(why, sizeof why,
                     "Fashion-MNIST is not installed: no %s (package dataset-fashion-mnist, or "
                     "ORDO_MODEL_DATA_DIR)", path);
            return why;
        }
    }
    return NULL;
}

/* ordo_ck_probe_child runs probe(need) in a child process and returns its answer (NULL: the
 * capability is there). A probe may initialise a driver (CUDA) that does not survive fork, and
 * Check forks each case from this process: the parent must stay untouched by it. */
static inline const char *ordo_ck_probe_child(ordo_ck_probe_fn probe, const char *need)
{
    static char why[512];
    int fd[2];
    if (pipe(fd) != 0) return probe(need); /* no pipe: probe here (worst case, cases fail) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return probe(need);
    }
    if (pid == 0) {
        close(fd[0]);
        const char *w = probe(need);
        if (w && write(fd[1], w, strlen(w)) < 0) _exit(3);
        _exit(w ? 1 : 0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof why - 1 && (r = read(fd[0], why + n, sizeof why - 1 - n)) > 0)
        n += (size_t)r;
    why[n] = '\0';
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return NULL;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) exit(2); /* the probe's own refusal */
    if (n == 0) snprintf(why, sizeof why, "the probe for '%s' failed (status %d)", need, status);
    return why;
}

/* ordo_ck_require checks each capability ORDO_CK_NEEDS names (space-separated): "fmnist" here,
 * others through probe. A missing one prints "SKIP: <reason>" and exits 77; a name nobody
 * knows is a mistake in the test's registration and exits 2. */
static inline void ordo_ck_require(ordo_ck_probe_fn probe)
{
    const char *needs = getenv("ORDO_CK_NEEDS");
    char list[256];
    snprintf(list, sizeof list, "%s", needs ? needs : "");
    char *save = NULL;
    for (char *w = strtok_r(list, " ,", &save); w; w = strtok_r(NULL, " ,", &save)) {
        const char *why = NULL;
        if (strcmp(w, "fmnist") == 0)
            why = ordo_ck_fmnist_missing();
        else if (probe)
            why = ordo_ck_probe_child(probe, w);
        else {
            fprintf(stderr, "ORDO_CK_NEEDS names '%s', which this suite cannot check\n", w);
            exit(2);
        }
        if (why) {
            printf("SKIP: %s\n", why);
            fflush(stdout);
            exit(77);
        }
    }
}

/* ORDO_CK_MAIN_PROBE runs one suite made by the given constructor after checking the
 * capabilities ctest asked for (ordo_ck_require), and exits non-zero on failure. */
#define ORDO_CK_MAIN_PROBE(make_suite, probe)                                              \
    int main(void)                                                                         \
    {                                                                                      \
        ordo_ck_require(probe);                                                            \
        SRunner *sr = srunner_create(make_suite());                                        \
        srunner_run_all(sr, CK_NORMAL);                                                    \
        int failed = srunner_ntests_failed(sr);                                            \
        srunner_free(sr);                                                                  \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
    }

/* ORDO_CK_MAIN is ORDO_CK_MAIN_PROBE for suites that need at most "fmnist". */
#define ORDO_CK_MAIN(make_suite) ORDO_CK_MAIN_PROBE(make_suite, NULL)

/* ordo_ck_source_dir returns the repository root (ORDO_SOURCE_DIR, set by ctest). */
static inline const char *ordo_ck_source_dir(void)
{
    const char *d = getenv("ORDO_SOURCE_DIR");
    return d ? d : ".";
}

#endif
