/* log: leveled logging with a role[rank] prefix. */
#include "common/log.h"
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

int ordo__log_threshold = ORDO_LOG_INFO;
static char log_prefix[64] = "ordo";

void ordo__log_set_role(const char *role, int rank)
{
    if (rank >= 0)
        snprintf(log_prefix, sizeof log_prefix, "%s[%d]", role, rank);
    else
        snprintf(log_prefix, sizeof log_prefix, "%s", role);
}

void ordo__log_set_level(ordo__log_level_t level)
{
    ordo__log_threshold = (int)level;
}

int ordo__log_parse_level(const char *s, ordo__log_level_t *out)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (ordo__log_level_t)i;
            return 0;
        }
    }
    return ORDO_ERR_INVAL;
}

void ordo__log_write(ordo__log_level_t level, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03d %s %s ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), log_prefix, names[level & 3]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line so lines of concurrent threads do not interleave. */
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}
