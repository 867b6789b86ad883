/* runplan_compress: compression = auto from the step model and a measured conversion cost. */
#include "scheduler/runplan_compress.h"

#include "common/clock.h"
#include "common/codec.h"
#include "common/error.h"
#include "common/log.h"
#include "planner/step.h"
#include "scheduler/runplan_inputs.h"
#include "scheduler/runplan_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a tensor below this many values stays float32: its message's fixed costs (a frame to
 * allocate, a call per side) outweigh the few bytes a cast saves */
#define MIN_VALUES 1024

/* conversion_ns measures, on this CPU, one encode and one decode of a value in codec: the
 * best of a few passes over 1M values (a cache-sized tensor would flatter it) */
static double conversion_ns(const ordo__codec_ops_t *ops)
{
    const int64_t n = 1 << 20;
    float *src = malloc((size_t)n * sizeof *src), *dst = malloc((size_t)n * sizeof *dst);
    ordo__codec_spec_t c = {.id = ops->id, .scale = 1.0f};
    void *frame = malloc(ops->max_bytes(&c, n));
    double best = 1e30;
    if (!src || !dst || !frame) goto done;
    for (int64_t i = 0; i < n; i++)
        src[i] = (float)(i % 1000) * 1e-3f - 0.5f;
    for (int rep = 0; rep < 5; rep++) {
        int64_t t0 = ordo__clock_ns();
        int64_t len = ops->encode(&c, src, n, frame, NULL);
        if (len < 0 || ops->decode(frame, (size_t)len, n, dst) != 0) break;
        double ns = (double)(ordo__clock_ns() - t0) / (double)n;
        if (ns < best) best = ns;
    }
done:
    free(src);
    free(dst);
    free(frame);
    return best < 1e30 ? best : 1.0; /* 1 ns a value: a conservative guess if it failed */
}

int ordo__runplan_compress(const ordo__conf_t *conf, const ordo__model_t *m,
                          const ordo__oracle_t *oracle, const int *channel, int n_channels,
                          const int *priority, json_t *plan)
{
    if (strncmp(conf->compression, "auto", 4) != 0) return 0;
    const char *name = conf->compression[4] == ':' ? conf->compression + 5 : "bf16";
    ordo__codec_spec_t cand;
    int rc = ordo__codec_parse(name, &cand);
    if (rc) return ordo__error_context(rc, "push.compression");
    const ordo__codec_ops_t *ops = ordo__codec_ops(cand.id);
    int n = m->n_params;
    double *factor = malloc(sizeof *factor * (size_t)n);
    ordo__oracle_times_t *t = NULL;
    json_t *keys = json_array();
    if (!factor || !keys) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    double bps = ordo__runplan_bps(conf), conv = conversion_ns(ops);
    /* a value's link time as a cast sends it, its conversions (one encode and one decode each
     * way, on the sending and the receiving side) counted as link time they hold it up */
    double cast_bytes = ops->max_bytes(&cand, 1 << 20) / (double)(1 << 20) + conv * 1e-9 * bps / 8;
    int compressed = 0;
    for (int p = 0; p < n; p++) {
        bool take = m->params[p].numel >= MIN_VALUES && cast_bytes < 4.0;
        factor[p] = take ? cast_bytes / 4.0 : 1.0;
        json_array_append_new(keys, json_string(take ? name : "none"));
        compressed += take;
    }
    /* the step model, float32 against the choice, with the slice and credit float32 tunes */
    ordo__step_opts_t o = ordo__runplan_step_opts(conf, channel, n_channels);
    ordo__step_result_t f32, chosen;
    if ((rc = ordo__oracle_times_new(m, bps, conf->latency_us, oracle, &t)) != 0) goto done;
    if ((rc = ordo__step_tune_auto(m, t, priority, &o)) != 0) goto done;
    if ((rc = ordo__step_simulate(m, t, priority, &o, &f32)) != 0) goto done;
    o.wire_factor = factor;
    if ((rc = ordo__step_simulate(m, t, priority, &o, &chosen)) != 0) goto done;
    char why[400];
    if (compressed && chosen.step_us >= f32.step_us) { /* saves bytes, not time: keep float32 */
        snprintf(why, sizeof why,
                 "the step model predicts no gain (%.3f ms in %s, %.3f ms in float32: the step "
                 "is bound by %s, not by the links)",
                 chosen.step_us / 1e3, name, f32.step_us / 1e3,
                 chosen.compute_us >= chosen.push_us && chosen.compute_us >= chosen.answer_us
                     ? "compute"
                     : "what a cast does not shorten");
        for (int p = 0; p < n; p++)
            json_array_set_new(keys, (size_t)p, json_string("none"));
        compressed = 0;
        chosen = f32;
    } else if (compressed) {
        snprintf(why, sizeof why,
                 "%s halves the bytes of %d of %d tensors; at %.3g gbit/s a value's conversions "
                 "(%.2f ns) cost less link time than the 2 bytes they save (%.2f ns): modelled "
                 "step %.3f ms against %.3f ms in float32",
                 name, compressed, n, bps / 1e9, conv, 16e9 / bps, chosen.step_us / 1e3,
                 f32.step_us / 1e3);
    } else {
        snprintf(why, sizeof why,
                 "at %.3g gbit/s a value's conversions (%.2f ns) cost more than the link time "
                 "the 2 bytes they save take (%.2f ns): float32",
                 bps / 1e9, conv, 16e9 / bps);
    }
    ORDO_INFO("compression auto: %s", why);
    json_t *js = json_pack("{s:s,s:s,s:o,s:i,s:f,s:f,s:f,s:f,s:s}", "policy", "auto", "codec", name,
                           "keys", keys, "compressed", compressed, "conversion_ns_per_value", conv,
                           "link_bps", bps, "float32_step_ms", f32.step_us / 1e3, "chosen_step_ms",
                           chosen.step_us / 1e3, "why", why);
    keys = NULL; /* the pack took it */
    if (!js || json_object_set_new(plan, "compression", js) != 0) rc = ORDO_ERR_NOMEM;
done:
    json_decref(keys);
    ordo__oracle_times_destroy(&t);
    free(factor);
    return rc;
}
