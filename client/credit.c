/* credit: the bytes a worker's queued pushes may have ahead of them on the egress link. */
#include "client/credit.h"

void ordo__credit_init(ordo__credit_t *c, int64_t limit, double link_bps)
{
    c->limit = limit < 0 ? 0 : limit;
    c->link_bps = link_bps > 0 ? link_bps : 0;
    c->unacked = 0;
    c->handed_free_ns = 0;
}

void ordo__credit_set_limit(ordo__credit_t *c, int64_t limit)
{
    c->limit = limit < 0 ? 0 : limit;
}

/* the bytes the emulated link still has to carry at now_ns */
static int64_t backlog(const ordo__credit_t *c, int64_t now_ns, int64_t link_free_ns)
{
    if (link_free_ns <= now_ns) return 0;
    return (int64_t)((double)(link_free_ns - now_ns) * 1e-9 * c->link_bps / 8);
}

/* when the emulated link frees: the transport's word, or later with what was handed since */
static int64_t link_free(const ordo__credit_t *c, int64_t link_free_ns)
{
    return c->handed_free_ns > link_free_ns ? c->handed_free_ns : link_free_ns;
}

bool ordo__credit_allows(const ordo__credit_t *c, int64_t now_ns, int64_t link_free_ns)
{
    int64_t ahead =
        c->link_bps > 0 ? backlog(c, now_ns, link_free(c, link_free_ns)) : c->unacked;
    return ahead <= 0 || ahead < c->limit;
}

int64_t ordo__credit_wake_ns(const ordo__credit_t *c, int64_t link_free_ns)
{
    if (c->link_bps <= 0) return INT64_MAX;
    return link_free(c, link_free_ns) - (int64_t)((double)c->limit * 8 / c->link_bps * 1e9);
}

void ordo__credit_sent(ordo__credit_t *c, int64_t bytes, int64_t now_ns, bool acked)
{
    if (c->link_bps > 0) {
        int64_t start = c->handed_free_ns > now_ns ? c->handed_free_ns : now_ns;
        c->handed_free_ns = start + (int64_t)((double)bytes * 8e9 / c->link_bps);
    } else if (acked) {
        c->unacked += bytes;
    }
}

void ordo__credit_acked(ordo__credit_t *c, int64_t bytes)
{
    if (c->link_bps > 0) return;
    c->unacked -= bytes;
    if (c->unacked < 0) c->unacked = 0; /* an answer to a push sent before a reset */
}

void ordo__credit_reset(ordo__credit_t *c)
{
    c->unacked = 0;
    c->handed_free_ns = 0;
}
