/* error: error code texts and the per-thread failure detail. */
#include "common/error.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char detail[1024];

const char *ordo_strerror(int rc)
{
    switch (rc) {
    case ORDO_OK: return "success";
    case ORDO_EINVAL: return "invalid argument";
    case ORDO_ENOMEM: return "out of memory";
    case ORDO_EPROTO: return "malformed message";
    case ORDO_EIO: return "I/O error";
    case ORDO_ETIMEDOUT: return "timed out";
    case ORDO_ECLOSED: return "closed";
    case ORDO_ENOTFOUND: return "not found";
    case ORDO_EPEERDEAD: return "peer dead";
    case ORDO_EAUTH: return "wrong cluster token";
    case ORDO_ERANGE: return "value out of range";
    case ORDO_EFORMAT: return "malformed file";
    case ORDO_EAGAIN: return "try again";
    case ORDO_EFULL: return "queue full";
    case ORDO_ENOTSUP: return "not supported";
    case ORDO_EABORT: return "run aborted";
    default: return "unknown error";
    }
}

int ordo_error_set(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return rc;
}

int ordo_error_context(int rc, const char *what)
{
    char why[sizeof detail]; /* the detail is copied first: it is the buffer being written */
    snprintf(why, sizeof why, "%s", ordo_error_text(rc));
    return ordo_error_set(rc, "%s: %s", what, why);
}

const char *ordo_error_detail(void)
{
    return detail;
}

void ordo_error_clear(void)
{
    detail[0] = '\0';
}

const char *ordo_error_text(int rc)
{
    return detail[0] ? detail : ordo_strerror(rc);
}
