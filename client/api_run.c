/* api_run: the calls of the public C API (include/ordo/ordo.h) about the run a worker is
 * part of rather than its transfers: a handle from a command line, the start-up
 * calibration's op timer, the run folder, membership after restarts and shrinks, the
 * servers' loads, per-iteration reports, the library's trace and the push path's saved
 * state. */
#include "ordo/ordo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "common/keys.h"
#include "common/trace.h"
#include "client/api_internal.h"
#include "client/compress.h"
#include "client/ps.h"

/* ---- making a handle ------------------------------------------------------------------- */

int ordo_new_args(int argc, char *const *argv, ordo_t **out)
{
    ordo__error_clear();
    if (!out || argc < 0 || (argc > 0 && !argv))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_new_args: NULL argument");
    const char *conf_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--conf")) {
            if (i + 1 >= argc)
                return ordo__error_set(ORDO_ERR_INVAL, "ordo_new_args: %s needs a file", argv[i]);
            conf_path = argv[++i];
        } else if (strncmp(argv[i], "--", 2) != 0 || !strchr(argv[i], '=')) {
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "ordo_new_args: \"%s\": expected -c FILE or --section.key=VALUE",
                                  argv[i]);
        }
    }
    ordo_t *o = NULL;
    int rc = ordo_new(conf_path, &o);
    if (rc) return rc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--conf")) {
            i++;
            continue;
        }
        char key[128];
        const char *eq = strchr(argv[i], '=');
        size_t len = (size_t)(eq - argv[i] - 2);
        if (len == 0 || len >= sizeof key) {
            ordo_destroy(&o);
            return ordo__error_set(ORDO_ERR_INVAL, "ordo_new_args: \"%s\": no key", argv[i]);
        }
        memcpy(key, argv[i] + 2, len);
        key[len] = '\0';
        if ((rc = ordo__conf_set(&o->conf, key, eq + 1, "command line")) != 0) {
            ordo_destroy(&o);
            return ordo__api_fail(rc);
        }
    }
    *out = o;
    return 0;
}

int ordo_set_op_times(ordo_t *o, ordo_op_times_fn fn, void *ctx)
{
    ordo__error_clear();
    if (!o) return ordo__error_set(ORDO_ERR_INVAL, "ordo_set_op_times: NULL handle");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_set_op_times: only before ordo_join");
    o->op_times = fn;
    o->op_times_ctx = ctx;
    return 0;
}

/* ---- the run --------------------------------------------------------------------------- */

const char *ordo_run_dir(const ordo_t *o)
{
    return o && o->w ? ordo__ps_run_dir(o->w) : "";
}

int64_t ordo_resume_iter(const ordo_t *o)
{
    return o && o->w ? ordo__ps_rejoin_iter(o->w) : -1;
}

int ordo_members(ordo_t *o, int *index, int *live, int64_t *since)
{
    int rc = ordo__api_usable(o, "ordo_members");
    if (rc) return rc;
    int i, n;
    int64_t s;
    int left = ordo__ps_members(o->w, &i, &n, &s);
    if (index) *index = i;
    if (live) *live = n;
    if (since) *since = s;
    return left;
}

int ordo_server_load(const ordo_t *o, int server, int64_t *bytes, int *slices)
{
    ordo__error_clear();
    if (!o || !o->w) return ordo__error_set(ORDO_ERR_INVAL, "ordo_server_load: not joined");
    const ordo__keys_t *k = ordo__ps_keys(o->w);
    if (server < 0 || server >= k->n_servers)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_server_load: no server %d (there are %d)",
                              server, k->n_servers);
    int64_t b = 0;
    int n = 0;
    for (int i = 0; i < k->n_slices; i++)
        if (k->slices[i].server == server) {
            b += k->slices[i].numel * (int64_t)sizeof(float);
            n++;
        }
    if (bytes) *bytes = b;
    if (slices) *slices = n;
    return 0;
}

int ordo__api_report(ordo_t *o, const char *json)
{
    int rc = o->bound ? ordo__bound_report(o->bound, json) : ordo__ps_report(o->w, json);
    return rc ? ordo__api_cluster_failed(o, rc) : 0;
}

int ordo_report(ordo_t *o, const char *json)
{
    int rc = ordo__api_usable(o, "ordo_report");
    if (rc) return rc;
    if (!json || json[0] != '{')
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_report: not a JSON object");
    return ordo__api_report(o, json);
}

/* ---- traces ---------------------------------------------------------------------------- */

void ordo_trace_span(ordo_t *o, const char *name, const char *cat, int track, int64_t t0_ns,
                     int64_t dur_ns, const char *args)
{
    if (!o || !o->trace || !name || !cat || track < 0 || track > 63) return;
    ordo__trace_complete(o->trace, name, cat, track, t0_ns, dur_ns, args);
}

void ordo_trace_track(ordo_t *o, int track, const char *name)
{
    if (!o || !o->trace || !name || track < 0 || track > 63) return;
    ordo__trace_name_track(o->trace, track, name);
}

/* ---- the push path's own state --------------------------------------------------------- */

static int path_state(ordo_t *o, const char *path, bool save, const char *fn)
{
    int rc = ordo__api_usable(o, fn);
    if (rc) return rc;
    if (!path) return ordo__error_set(ORDO_ERR_INVAL, "%s: NULL path", fn);
    if (o->bound) return ordo__api_fail(ordo__bound_state(o->bound, path, save));
    /* unbound: the codecs' error-feedback residuals, updated as each push is encoded */
    ordo__compress_t *c = ordo__ps_compress(o->w);
    if (!ordo__compress_has_state(c)) return 0;
    int queued = ordo__ps_queued(o->w);
    if (queued > 0)
        return ordo__error_set(ORDO_ERR_INVAL, "%s: %d pushes are still queued, their "
                              "residuals not updated yet: call it between iterations, once "
                              "the pushes completed", fn, queued);
    rc = ordo__compress_state(c, path, save);
    if (rc) rc = ordo__error_context(rc, fn);
    return ordo__api_fail(rc);
}

int ordo_save_state(ordo_t *o, const char *path)
{
    return path_state(o, path, true, "ordo_save_state");
}

int ordo_load_state(ordo_t *o, const char *path)
{
    return path_state(o, path, false, "ordo_load_state");
}
