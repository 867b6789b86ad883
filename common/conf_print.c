/* conf_print: the effective conf printed as INI (with its help as comments), the reference
 * table of every key (docs/conf.md), and the conf as JSON (summary.json). */
#include "common/conf.h"
#include "common/conf_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the name of choice idx of "a|b|c" ("?" when out of range) */
static const char *enum_name(const char *choices, int idx, char *buf, size_t size)
{
    const char *p = choices;
    for (int i = 0; i < idx && p; i++) {
        p = strchr(p, '|');
        if (p) p++;
    }
    if (!p) return "?";
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n >= size) n = size - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* ---- printing ----------------------------------------------------------------------- */

static void format_value(const ordo__conf_t *conf, const key_t_ *k, char *buf, size_t size)
{
    const char *field = (const char *)conf + k->off;
    switch (k->type) {
    case T_INT: snprintf(buf, size, "%d", *(const int *)field); break;
    case T_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case T_DOUBLE: snprintf(buf, size, "%.17g", *(const double *)field); break;
    case T_BOOL: snprintf(buf, size, "%s", *(const bool *)field ? "true" : "false"); break;
    case T_STR: snprintf(buf, size, "%s", field); break;
    case T_ENUM: enum_name(k->choices, *(const int *)field, buf, size); break;
    case T_BYTES:
        if (*(const int64_t *)field == ORDO_CONF_AUTO_BYTES) snprintf(buf, size, "auto");
        else snprintf(buf, size, "%lld", (long long)*(const int64_t *)field);
        break;
    case T_RATE: {
        double v = *(const double *)field;
        if (v == 0) snprintf(buf, size, "0");
        else if (fmod(v, 1e9) == 0) snprintf(buf, size, "%.0fgbit", v / 1e9);
        else if (fmod(v, 1e6) == 0) snprintf(buf, size, "%.0fmbit", v / 1e6);
        else snprintf(buf, size, "%.0fbit", v);
        break;
    }
    }
}

/* print_comment writes text as "; " comment lines of at most 100 characters, broken at
 * spaces: INI readers (inih) cut lines at 200, and the rest of a long comment would be read
 * as a key */
static void print_comment(FILE *out, const char *text)
{
    const int width = 98;
    while (*text) {
        int n = (int)strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ') n--;
            if (n == 0) n = width; /* one word longer than a line */
        }
        fprintf(out, "; %.*s\n", n, text);
        text += n;
        while (*text == ' ') text++;
    }
}

void ordo__conf_print(const ordo__conf_t *conf, FILE *out, bool with_help)
{
    const char *section = "";
    char buf[ORDO_CONF_PATH + 32];
    for (size_t i = 0; i < ordo__conf_nkeys; i++) {
        if (strcmp(section, ordo__conf_keys[i].section) != 0) {
            section = ordo__conf_keys[i].section;
            fprintf(out, "%s[%s]\n", i ? "\n" : "", section);
        }
        if (with_help) {
            char help[1024];
            snprintf(help, sizeof help, "%s (default %s)", ordo__conf_keys[i].help, ordo__conf_keys[i].def);
            print_comment(out, help);
        }
        format_value(conf, &ordo__conf_keys[i], buf, sizeof buf);
        fprintf(out, "%s = %s\n", ordo__conf_keys[i].name, buf);
    }
}

static const char *type_name(const key_t_ *k)
{
    switch (k->type) {
    case T_INT: return "integer";
    case T_U64: return "integer";
    case T_DOUBLE: return "number";
    case T_BOOL: return "boolean";
    case T_STR: return "string";
    case T_ENUM: return "choice";
    case T_BYTES: return "size";
    case T_RATE: return "rate";
    }
    return "?";
}

void ordo__conf_reference(FILE *out)
{
    const char *section = "";
    for (size_t i = 0; i < ordo__conf_nkeys; i++) {
        const key_t_ *k = &ordo__conf_keys[i];
        if (strcmp(section, k->section) != 0) {
            section = k->section;
            fprintf(out, "%s### [%s]\n\n| key | type | default | range / choices | meaning |\n"
                         "|---|---|---|---|---|\n",
                    i ? "\n" : "", section);
        }
        char range[128] = "";
        if (k->type == T_ENUM) snprintf(range, sizeof range, "%s", k->choices);
        else if (k->type == T_BYTES && k->choices)
            snprintf(range, sizeof range, "%s, %g .. %g", k->choices, k->min, k->max);
        else if (k->type == T_INT || k->type == T_DOUBLE || k->type == T_BYTES)
            snprintf(range, sizeof range, "%g .. %g", k->min, k->max);
        fprintf(out, "| `%s` | %s | `%s` | %s | %s |\n", k->name, type_name(k), k->def, range,
                k->help);
    }
}

char *ordo__conf_to_json(const ordo__conf_t *conf)
{
    json_t *root = json_object();
    char buf[ORDO_CONF_PATH + 32];
    for (size_t i = 0; i < ordo__conf_nkeys; i++) {
        json_t *sec = json_object_get(root, ordo__conf_keys[i].section);
        if (!sec) {
            sec = json_object();
            json_object_set_new(root, ordo__conf_keys[i].section, sec);
        }
        const char *field = (const char *)conf + ordo__conf_keys[i].off;
        json_t *v;
        switch (ordo__conf_keys[i].type) {
        case T_INT: v = json_integer(*(const int *)field); break;
        case T_U64: v = json_integer((json_int_t) * (const uint64_t *)field); break;
        case T_DOUBLE: v = json_real(*(const double *)field); break;
        case T_BOOL: v = json_boolean(*(const bool *)field); break;
        case T_BYTES:
            v = *(const int64_t *)field == ORDO_CONF_AUTO_BYTES
                    ? json_string("auto")
                    : json_integer(*(const int64_t *)field);
            break;
        default:
            format_value(conf, &ordo__conf_keys[i], buf, sizeof buf);
            v = json_string(buf);
        }
        json_object_set_new(sec, ordo__conf_keys[i].name, v);
    }
    char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return s;
}
