/* transport_drop: what the transport and its application refused, counted per reason for
 * the run's summary and logged in summary lines: at most one line per second per peer
 * (ROUTER routing id, or socket) and DROP_LINES_PER_S lines per second in all, each line
 * with the counts of what it stands for. A flood from outside the cluster costs counters,
 * not disk. */
#include "common/clock.h"
#include "common/log.h"
#include "common/transport.h"
#include "common/transport_internal.h"

#include <stdio.h>
#include <string.h>

#define SECOND_NS 1000000000LL

/* peer_name: the socket's endpoint and, on a ROUTER, the routing id in hex */
static void peer_name(const ordo__transport_t *t, const drop_peer_t *p, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s", p->sock >= 0 && p->sock < t->nsocks ? t->socks[p->sock].endpoint
                                                                          : "?");
    if (p->rid_len && n > 0 && (size_t)n + 6 < size) {
        n += snprintf(buf + n, size - (size_t)n, " peer ");
        for (size_t i = 0; i < p->rid_len && (size_t)n + 3 < size; i++)
            n += snprintf(buf + n, size - (size_t)n, "%02x", p->rid[i]);
    }
}

/* find_peer: the peer's entry, made (replacing the longest quiet one) when new */
static drop_peer_t *find_peer(ordo__transport_t *t, const ordo__msg_t *m, bool *fresh)
{
    drop_table_t *d = &t->drops;
    drop_peer_t *old = NULL;
    size_t rl = m->rid_len > sizeof old->rid ? sizeof old->rid : m->rid_len;
    for (int i = 0; i < DROP_PEERS; i++) {
        drop_peer_t *p = &d->peers[i];
        if (p->used && p->sock == m->sock && p->rid_len == rl && !memcmp(p->rid, m->rid, rl)) {
            *fresh = false;
            return p;
        }
        if (!old || !p->used || (old->used && p->seen_ns < old->seen_ns)) old = p;
    }
    /* what the replaced peer had not logged yet goes to the unattributed count */
    if (old->used) d->suppressed += old->pending;
    memset(old, 0, sizeof *old);
    old->used = true;
    old->sock = m->sock;
    old->rid_len = rl;
    memcpy(old->rid, m->rid, rl);
    *fresh = true;
    return old;
}

static void count_reason(drop_table_t *d, const char *reason)
{
    for (int i = 0; i < d->n_reasons; i++)
        if (!strcmp(d->reasons[i], reason)) {
            d->counts[i]++;
            return;
        }
    if (d->n_reasons < DROP_REASONS) {
        snprintf(d->reasons[d->n_reasons], sizeof d->reasons[0], "%s", reason);
        d->counts[d->n_reasons++] = 1;
    } else {
        d->counts[DROP_REASONS - 1]++; /* "other" would do; the last reason takes it */
    }
}

/* may_log: whether the line budget of this second has room */
static bool may_log(drop_table_t *d, int64_t now)
{
    if (now - d->window_ns >= SECOND_NS) {
        d->window_ns = now;
        d->lines = 0;
    }
    return d->lines < DROP_LINES_PER_S;
}

void ordo__transport_drop(ordo__transport_t *t, const ordo__msg_t *m, const char *reason,
                         const char *detail)
{
    drop_table_t *d = &t->drops;
    int64_t now = ordo__clock_ns();
    pthread_mutex_lock(&d->mu);
    count_reason(d, reason);
    bool fresh;
    drop_peer_t *p = find_peer(t, m, &fresh);
    p->seen_ns = now;
    p->pending++;
    snprintf(p->last_reason, sizeof p->last_reason, "%s", reason);
    char name[400];
    if ((fresh || now - p->logged_ns >= SECOND_NS) && may_log(d, now)) {
        peer_name(t, p, name, sizeof name);
        d->lines++;
        if (p->pending == 1)
            ORDO_WARN("dropped %s from %s: %s%s%s", ordo__wire_type_name(m->hdr.type), name, reason,
                      detail ? ": " : "", detail ? detail : "");
        else
            ORDO_WARN("dropped %lld messages from %s in %.1f s (the last: %s%s%s)",
                      (long long)p->pending, name, (double)(now - p->logged_ns) / 1e9, reason,
                      detail ? ": " : "", detail ? detail : "");
        if (d->suppressed)
            ORDO_WARN("dropped %lld more messages from other peers, not logged one by one",
                      (long long)d->suppressed);
        d->suppressed = 0;
        p->pending = 0;
        p->logged_ns = now;
    }
    pthread_mutex_unlock(&d->mu);
}

int ordo__transport_dropped(ordo__transport_t *t, char (*reasons)[ORDO_DROP_REASON_LEN],
                           uint64_t *counts, int max)
{
    drop_table_t *d = &t->drops;
    pthread_mutex_lock(&d->mu);
    int n = d->n_reasons < max ? d->n_reasons : max;
    for (int i = 0; i < n; i++) {
        snprintf(reasons[i], ORDO_DROP_REASON_LEN, "%s", d->reasons[i]);
        counts[i] = d->counts[i];
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}
