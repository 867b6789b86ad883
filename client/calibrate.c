/* calibrate: the merge planner's cost model measured by the run's workers at start-up. */
#include "client/calibrate.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 60000 /* one probe's or barrier's wait; dead peers end it sooner (ABORT) */

/* seconds from sending n probes of bytes (at once) to the last acknowledgement */
static int burst(ordo__ps_t *w, const float *src, size_t bytes, int n, int first_server,
                 double *secs)
{
    int rc, servers = ordo__ps_n_servers(w);
    int64_t t0 = ordo__clock_ns(), last = t0;
    for (int j = 0; j < n; j++)
        if ((rc = ordo__ps_probe(w, (first_server + j) % servers, src, bytes, j)) != 0)
            return rc;
    for (int got = 0; got < n;) {
        ordo__ps_event_t ev;
        if ((rc = ordo__ps_poll(w, WAIT_MS, &ev)) != 0) return rc;
        if (ev.kind != ORDO__EV_PROBE_DONE) continue;
        last = ev.t_ns;
        got++;
    }
    *secs = (double)(last - t0) / 1e9;
    return 0;
}

/* every worker reaches barrier *id before anyone goes on: a worker that finished its burst
 * first would otherwise measure its next one against the others' still in flight */
static int meet(ordo__ps_t *w, int64_t *id)
{
    int rc = ordo__ps_barrier(w, ++*id);
    while (!rc) {
        ordo__ps_event_t ev;
        if ((rc = ordo__ps_poll(w, WAIT_MS, &ev)) != 0) return rc;
        if (ev.kind == ORDO__EV_BARRIER && ev.iter == *id) return 0;
    }
    return rc;
}

int ordo__calibrate_measure(ordo__ps_t *w, const ordo__calibrate_opts_t *o,
                           ordo__calibration_t *out)
{
    if (o->reps < 1 || o->max_bytes < 4096 || o->max_bytes > (int64_t)ORDO_PROBE_MAX_BYTES)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "calibration: %d repeats up to %lld bytes (needs at least 1 "
                              "repeat and 4 KiB to %u bytes)",
                              o->reps, (long long)o->max_bytes, ORDO_PROBE_MAX_BYTES);
    memset(out, 0, sizeof *out);
    for (int64_t b = 1024; b <= o->max_bytes && out->n < ORDO_CALIBRATE_MAX_SIZES; b *= 4)
        out->bytes[out->n++] = (double)b;
    float *src = calloc((size_t)o->max_bytes / sizeof(float), sizeof(float));
    double *one = malloc(sizeof *one * (size_t)o->reps), *msg = malloc(sizeof *msg * (size_t)o->reps);
    int rc = src && one && msg ? 0 : ORDO_ERR_NOMEM;
    int64_t barrier = 0;
    int64_t t0 = ordo__clock_ns();
    for (int i = 0; !rc && i < out->n; i++) {
        size_t bytes = (size_t)out->bytes[i];
        for (int r = -1; !rc && r < o->reps; r++) { /* a warm-up, then the repeats */
            double t1 = 0, tn = 0;
            if (!rc) rc = burst(w, src, bytes, 1, r < 0 ? 0 : r, &t1);
            if (!rc) rc = meet(w, &barrier);
            if (!rc) rc = burst(w, src, bytes, ORDO_CALIBRATE_BURST, r < 0 ? 0 : r, &tn);
            if (!rc) rc = meet(w, &barrier);
            if (!rc && r >= 0) {
                one[r] = t1;
                msg[r] = (tn - t1) / (ORDO_CALIBRATE_BURST - 1);
            }
        }
        if (rc) break;
        out->one_s[i] = ordo__merge_median(one, o->reps);
        /* with per-message costs below the noise the difference can come out negative */
        double m = ordo__merge_median(msg, o->reps);
        out->per_msg_s[i] = m > 0 ? m : 0;
    }
    if (!rc)
        rc = ordo__merge_fit_planner(out->bytes, out->per_msg_s, out->one_s, out->n, o->link_bps,
                                    &out->cost);
    if (!rc)
        ORDO_INFO("calibration: %d sizes to %lld bytes, %d repeats, %.2f s: a = %.2f us, b = %.4g "
                  "ns/byte (pipelined fit %.4g), c = %.4g ns/byte",
                  out->n, (long long)o->max_bytes, o->reps,
                  (double)(ordo__clock_ns() - t0) / 1e9, out->cost.a * 1e6, out->cost.b * 1e9,
                  out->cost.b_msg * 1e9, out->cost.c * 1e9);
    free(src);
    free(one);
    free(msg);
    return rc ? ordo__error_context(rc, "push.calibrate") : 0;
}

static json_t *array_of(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

int ordo__calibrate_send(ordo__ps_t *w, const ordo__calibration_t *c, const char *op_times)
{
    json_t *ops = NULL;
    if (op_times && !(ops = json_loads(op_times, 0, NULL)))
        return ordo__error_set(ORDO_ERR_FORMAT, "the measured op times are not JSON");
    json_t *o = json_pack("{s:{s:f,s:f,s:f,s:f,s:f,s:o,s:o,s:o}}", "calibration", "a_s", c->cost.a,
                          "b_s", c->cost.b, "c_s", c->cost.c, "b_msg_s", c->cost.b_msg, "b_one_s",
                          c->cost.b_one, "bytes", array_of(c->bytes, c->n), "per_msg_s",
                          array_of(c->per_msg_s, c->n), "one_s", array_of(c->one_s, c->n));
    if (o && ops) json_object_set(o, "op_times", ops);
    json_decref(ops);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return ORDO_ERR_NOMEM;
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PLAN);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    int rc = ordo__msg_add_text(&m, text);
    free(text);
    if (rc) {
        ordo__msg_close(&m);
        return rc;
    }
    return ordo__ps_send(w, -1, &m);
}
