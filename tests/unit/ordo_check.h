/* ordo_check: assertion helpers for ordo's Check suites. ORDO_CK_OK(expr) fails with the
 * expression and the error text; ORDO_CK_ERR(expr, code) expects a given error code. */
#ifndef ORDO_CHECK_H
#define ORDO_CHECK_H

#include <check.h>
#include <stdlib.h>

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

/* ORDO_CK_MAIN runs one suite made by the given constructor and exits non-zero on failure. */
#define ORDO_CK_MAIN(make_suite)                                                           \
    int main(void)                                                                         \
    {                                                                                      \
        SRunner *sr = srunner_create(make_suite());                                        \
        srunner_run_all(sr, CK_NORMAL);                                                    \
        int failed = srunner_ntests_failed(sr);                                            \
        srunner_free(sr);                                                                  \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
    }

/* ordo_ck_source_dir returns the repository root (ORDO_SOURCE_DIR, set by ctest). */
static inline const char *ordo_ck_source_dir(void)
{
    const char *d = getenv("ORDO_SOURCE_DIR");
    return d ? d : ".";
}

#endif
