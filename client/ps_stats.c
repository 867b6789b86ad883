/* ps_stats: a worker's per-iteration records on their way to the scheduler. With
 * [output] stats_every = 1 each goes at once in a STATS message of its own; with N > 1
 * (auto: above 500 workers, common/conf.h) the worker holds them and sends N in one STATS
 * message, one record a line, so the scheduler takes N times fewer messages for the same
 * records (docs/planning.md, "The scheduler at scale"). Held records go before DONE. */
#include "client/ps_internal.h"
#include "common/error.h"
#include "common/wire.h"

#include <stdlib.h>
#include <string.h>

/* send_stats sends text, one record or several a line, in one STATS message */
static int send_stats(ordo__ps_t *w, const char *text)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_STATS);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    ordo__msg_add_text(&m, text);
    return ordo__node_send_ctl(&w->node, &m);
}

int ordo__ps_stats_flush(ordo__ps_t *w)
{
    if (w->stats_n == 0) return 0;
    w->stats_held[w->stats_len] = '\0';
    w->stats_len = 0;
    w->stats_n = 0;
    return send_stats(w, w->stats_held);
}

int ordo__ps_stats_report(ordo__ps_t *w, const char *json)
{
    int every = ordo__conf_stats_every(&w->conf);
    if (every <= 1 && w->stats_n == 0) return send_stats(w, json);
    size_t n = strlen(json);
    if (w->stats_len + n + 2 > w->stats_cap) {
        size_t cap = (w->stats_len + n + 2) * 2;
        char *p = realloc(w->stats_held, cap);
        if (!p) return ordo__error_set(ORDO_ERR_NOMEM, "holding a STATS record: out of memory");
        w->stats_held = p;
        w->stats_cap = cap;
    }
    /* one record a line: a line break inside one (JSON whitespace) becomes a space */
    char *at = w->stats_held + w->stats_len;
    if (w->stats_n > 0) *at++ = '\n';
    for (size_t i = 0; i < n; i++)
        at[i] = json[i] == '\n' || json[i] == '\r' ? ' ' : json[i];
    w->stats_len = (size_t)(at + n - w->stats_held);
    w->stats_n++;
    return w->stats_n >= every ? ordo__ps_stats_flush(w) : 0;
}

void ordo__ps_stats_drop(ordo__ps_t *w)
{
    w->stats_len = 0;
    w->stats_n = 0;
}

void ordo__ps_stats_free(ordo__ps_t *w)
{
    free(w->stats_held);
    w->stats_held = NULL;
    w->stats_len = w->stats_cap = 0;
    w->stats_n = 0;
}
