/* error: error code texts and the per-thread failure detail. */
#include "common/error.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char detail[1024];

const char *ordo_strerror(int rc)
{
    switch (rc) {
    case ORDO_OK: return "success";
    case ORDO_ERR_INVAL: return "invalid argument";
    case ORDO_ERR_NOMEM: return "out of memory";
    case ORDO_ERR_PROTO: return "malformed message";
    case ORDO_ERR_IO: return "I/O error";
    case ORDO_ERR_TIMEDOUT: return "timed out";
    case ORDO_ERR_CLOSED: return "closed";
    case ORDO_ERR_NOTFOUND: return "not found";
    case ORDO_ERR_PEERDEAD: return "peer dead";
    case ORDO_ERR_AUTH: return "wrong cluster token";
    case ORDO_ERR_RANGE: return "value out of range";
    case ORDO_ERR_FORMAT: return "malformed file";
    case ORDO_ERR_AGAIN: return "try again";
    case ORDO_ERR_FULL: return "queue full";
    case ORDO_ERR_NOTSUP: return "not supported";
    case ORDO_ERR_ABORT: return "run aborted";
    default: return "unknown error";
    }
}

int ordo__error_set(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return rc;
}

int ordo__error_context(int rc, const char *what)
{
    char why[sizeof detail]; /* the detail is copied first: it is the buffer being written */
    snprintf(why, sizeof why, "%s", ordo__error_text(rc));
    return ordo__error_set(rc, "%s: %s", what, why);
}

const char *ordo__error_detail(void)
{
    return detail;
}

void ordo__error_clear(void)
{
    detail[0] = '\0';
}

const char *ordo__error_text(int rc)
{
    return detail[0] ? detail : ordo_strerror(rc);
}
