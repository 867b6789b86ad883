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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

#define ORDO_CK_OK(expr)                                                                   \
    do {                                                                                   \
        int ck_rc_ = (expr);                                                               \
        ck_assert_msg(ck_rc_ == 0, "%s: %s", #expr, ordo_error_text(ck_rc_));              \
    } while (0)

#define ORDO_CK_ERR(expr, code)                                                            \
    do {                                                                                   \
        int ck_rc_ = (expr);                                                               \
        ck_assert_msg(ck_rc_ == (code), "%s: expected %s, got %s (%s)", #expr,             \
                      ordo_strerror(code), ordo_strerror(ck_rc_), ordo_error_detail());    \
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
            why = probe(w);
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
