/* log: leveled logging to stderr; every line carries the wall time, role[rank] and level. */
#ifndef ORDO_LOG_H
#define ORDO_LOG_H

typedef enum {
    ORDO_LOG_DEBUG = 0,
    ORDO_LOG_INFO = 1,
    ORDO_LOG_WARN = 2,
    ORDO_LOG_ERROR = 3,
} ordo__log_level_t;

extern int ordo__log_threshold;

/* ordo__log_set_role sets the role name and rank printed on every line (rank < 0: none). */
void ordo__log_set_role(const char *role, int rank);

/* ordo__log_set_level sets the lowest level printed. */
void ordo__log_set_level(ordo__log_level_t level);

/* ordo__log_parse_level maps "debug|info|warn|error" to a level; returns 0 or ORDO_ERR_INVAL. */
int ordo__log_parse_level(const char *s, ordo__log_level_t *out);

/* ordo__log_write formats and writes one line; use ORDO_LOG, which checks the level first. */
void ordo__log_write(ordo__log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define ORDO_LOG(level, ...)                                                               \
    do {                                                                                   \
        if ((int)(level) >= ordo__log_threshold) ordo__log_write((level), __VA_ARGS__);      \
    } while (0)

#define ORDO_DEBUG(...) ORDO_LOG(ORDO_LOG_DEBUG, __VA_ARGS__)
#define ORDO_INFO(...)  ORDO_LOG(ORDO_LOG_INFO, __VA_ARGS__)
#define ORDO_WARN(...)  ORDO_LOG(ORDO_LOG_WARN, __VA_ARGS__)
#define ORDO_ERROR(...) ORDO_LOG(ORDO_LOG_ERROR, __VA_ARGS__)

#endif
