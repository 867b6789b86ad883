/* error: ordo's error codes, their text, and a per-thread detail message that says where
 * and why the last failure happened (file:line, JSON path, peer). Every fallible function
 * returns 0 or a negative ORDO_ERR_* code: the public enum of include/ordo/ordo.h, one for the
 * whole tree. */
#ifndef ORDO_ERROR_H
#define ORDO_ERROR_H

#include <stdio.h>
#include <stdlib.h>

#include "ordo/ordo.h" /* ORDO_ERR_*, ordo_strerror */

enum { ORDO_OK = 0 };

/* ordo__error_set stores a formatted detail for the calling thread and returns rc, so a
 * failing path can `return ordo__error_set(ORDO_ERR_FORMAT, "%s: ...", path)`. */
int ordo__error_set(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ordo__error_detail returns the calling thread's last detail ("" if none); the text stays
 * valid until the thread's next ordo__error_set or ordo__error_clear. */
const char *ordo__error_detail(void);

/* ordo__error_clear forgets the calling thread's detail. */
void ordo__error_clear(void);

/* ordo__error_context prefixes the calling thread's detail (or ordo_strerror(rc) when there is
 * none) with what was being read or done ("order.oracle: FILE: $.model: ...") and returns rc. */
int ordo__error_context(int rc, const char *what);

/* ordo__error_text returns the detail when there is one, else ordo_strerror(rc). */
const char *ordo__error_text(int rc);

/* ORDO_ASSERT checks an invariant of ordo's own code (never untrusted input) and aborts
 * with file:line when it fails. */
#define ORDO_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#endif
