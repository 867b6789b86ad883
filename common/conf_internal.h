/* conf_internal: what conf.c (the key table, parsing, validation, the command line) and
 * conf_print.c (the conf printed as INI, as a reference table, as JSON) share. Not part of
 * the module's contract. */
#ifndef ORDO_CONF_INTERNAL_H
#define ORDO_CONF_INTERNAL_H

#include <stddef.h>

typedef enum { T_INT, T_U64, T_DOUBLE, T_BOOL, T_STR, T_ENUM, T_BYTES, T_RATE } ctype_t;

typedef struct {
    const char *section;
    const char *name;
    ctype_t type;
    size_t off;
    size_t size; /* for strings: buffer size */
    const char *def;
    double min, max;
    const char *choices; /* T_ENUM: "a|b|c" mapping to 0,1,2 */
    const char *help;
} key_t_;

/* the table of every key, in section order, and its length */
extern const key_t_ ordo__conf_keys[];
extern const size_t ordo__conf_nkeys;

#endif
