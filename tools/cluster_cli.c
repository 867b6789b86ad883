/* cluster_cli: `ordo-plan cluster`: parses a cluster from the command line, chooses what is
 * left auto (planner/cluster_plan), predicts the step under ordo's PS and under ring and
 * hierarchical all-reduces, and prints a table or one JSON object. */
#include "tools/cluster_cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "core/model.h"
#include "planner/allreduce.h"
#include "planner/cluster.h"
#include "planner/cluster_plan.h"

static const char usage_text[] =
    "usage: ordo-plan cluster --workers W [OPTIONS] MODEL.json\n"
    "\n"
    "Predicts one training step of MODEL (an ordo-model/1 profile: conf/models/NAME.json, or\n"
    "the one an ordo.torch run wrote) on a cluster of W workers, L per host, and S server\n"
    "hosts (one server each): the step and its bound, the bytes on each kind of link, the\n"
    "resource that limits the step, the same cluster under a ring and a hierarchical\n"
    "all-reduce, and, for what is left auto, the settings it recommends and why\n"
    "(docs/planning.md).\n"
    "\n"
    "  --workers W             workers (required)\n"
    "  --workers-per-host L    workers per host, dividing W (default 1)\n"
    "  --server-hosts S|auto   server hosts, 1..W (default auto)\n"
    "  --worker-link RATE      each worker host's link, each way, tc style: 1gbit, 25gbit\n"
    "                          (required)\n"
    "  --server-link RATE      each server host's link (default: the worker link)\n"
    "  --compression C|auto    none | bf16 | onebit | topk (default auto)\n"
    "  --density D             topk: k / n (default 0.01)\n"
    "  --groups on|off|auto    host groups: a host's workers sum inside it first (default auto)\n"
    "  --order tao|fifo|auto   the transfer order (default auto)\n"
    "  --latency-us US         one-way latency per message (default 50)\n"
    "  --msg-us US             link time a message costs beyond its bytes (default 20)\n"
    "  --compute-scale X       the profile's op times times X (default 1)\n"
    "  --convert-ns NS         a codec's CPU per value per encode or decode (default: the\n"
    "                          codec's: bf16 0.5, onebit 1.5, topk 4)\n"
    "  --intra-ns NS           a host group's reduce and gather per value (default 1:\n"
    "                          ordo-bench intra's 3.6 GB/s for 4 members, docs/planning.md)\n"
    "  --server-ns NS          a server's CPU per value per pusher, receive, sum and answer\n"
    "                          (default 4: measured, docs/planning.md)\n"
    "  --link-efficiency E     TCP payload over link rate (default 0.93: measured)\n"
    "  --sched-us US           the scheduler's CPU per member per step at one STATS\n"
    "                          message an iteration (default 35: measured,\n"
    "                          scripts/experiments/control_plane.sh); above 500 workers\n"
    "                          its per-message 0.65 is divided by [output] stats_every\n"
    "  --partition-bytes N     tensors above this are chunks spread over servers (default 4MiB)\n"
    "  --json                  one JSON object instead of the table\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0; 2 with one line naming the option on a usage error or a cluster that\n"
    "cannot be; 1 when the model cannot be loaded.\n";

typedef struct {
    ordo__cluster_t c;
    ordo__cluster_auto_t a;
    const char *model_path;
    int json;
    int have_workers, have_link, have_server_link;
} args_t;

static int usage_error(const char *opt, const char *what, const char *val)
{
    fprintf(stderr, "ordo-plan cluster: %s: %s%s%s (see ordo-plan cluster --help)\n", opt, what,
            val ? ": " : "", val ? val : "");
    return 2;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    double v;
    if (parse_num(s, lo, hi, &v) || v != floor(v)) return -1;
    *out = (int)v;
    return 0;
}

/* one option with its value; returns 0 or the exit status */
static int take(args_t *a, const char *opt, const char *val)
{
    double d;
    if (!strcmp(opt, "--workers")) {
        if (parse_int(val, 0, 1 << 20, &a->c.workers)) return usage_error(opt, "not a count", val);
        a->have_workers = 1;
    } else if (!strcmp(opt, "--workers-per-host")) {
        if (parse_int(val, 0, 1 << 20, &a->c.workers_per_host))
            return usage_error(opt, "not a count", val);
    } else if (!strcmp(opt, "--server-hosts")) {
        a->a.server_hosts = !strcmp(val, "auto");
        if (!a->a.server_hosts && parse_int(val, 0, 1 << 20, &a->c.server_hosts))
            return usage_error(opt, "not a count or auto", val);
    } else if (!strcmp(opt, "--worker-link") || !strcmp(opt, "--server-link")) {
        double *r = opt[2] == 'w' ? &a->c.worker_bps : &a->c.server_bps;
        if (ordo__conf_parse_rate(val, r)) return usage_error(opt, "not a rate (1gbit)", val);
        if (opt[2] == 'w') a->have_link = 1;
        else a->have_server_link = 1;
    } else if (!strcmp(opt, "--compression")) {
        a->a.wire = !strcmp(val, "auto");
        if (!a->a.wire && ordo__cluster_wire_parse(val, &a->c.wire))
            return usage_error(opt, "none, bf16, onebit, topk or auto", val);
    } else if (!strcmp(opt, "--groups") || !strcmp(opt, "--order")) {
        int g = opt[2] == 'g';
        const char *on = g ? "on" : "tao", *off = g ? "off" : "fifo";
        int is_auto = !strcmp(val, "auto"), v = !strcmp(val, on);
        if (!is_auto && !v && strcmp(val, off))
            return usage_error(opt, g ? "on, off or auto" : "tao, fifo or auto", val);
        if (g) a->a.groups = is_auto, a->c.groups = v;
        else a->a.order = is_auto, a->c.ordered = v;
    } else if (!strcmp(opt, "--link-efficiency")) {
        if (parse_num(val, 0, 1, &a->c.link_efficiency))
            return usage_error(opt, "not in (0, 1]", val);
    } else if (!strcmp(opt, "--density")) {
        if (parse_num(val, 0, 1, &a->c.topk_density)) return usage_error(opt, "not in (0, 1]", val);
    } else if (!strcmp(opt, "--partition-bytes")) {
        if (ordo__conf_parse_bytes(val, &a->c.partition_bytes))
            return usage_error(opt, "not a size", val);
    } else {
        static const char *const nums[] = {"--latency-us", "--msg-us",    "--compute-scale",
                                           "--convert-ns", "--intra-ns",  "--server-ns",
                                           "--sched-us"};
        double *dst[] = {&a->c.latency_us, &a->c.msg_us,    &a->c.compute_scale, &a->c.convert_ns,
                         &a->c.intra_ns,   &a->c.server_ns, &a->c.sched_us};
        for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
            if (!strcmp(opt, nums[i])) {
                if (parse_num(val, 0, 1e9, &d)) return usage_error(opt, "not a number >= 0", val);
                *dst[i] = d;
                return 0;
            }
        return usage_error(opt, "unknown option", NULL);
    }
    return 0;
}

static int parse(int argc, char **argv, args_t *a)
{
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "--json")) {
            a->json = 1;
            continue;
        }
        if (arg[0] != '-' || !arg[1]) {
            if (a->model_path) return usage_error(arg, "more than one model file", NULL);
            a->model_path = arg;
            continue;
        }
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=')) {
            val = strchr(arg, '=') + 1;
            val[-1] = '\0';
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return usage_error(arg, "missing value", NULL);
        }
        int rc = take(a, arg, val);
        if (rc) return rc;
    }
    if (!a->model_path) return usage_error("MODEL.json", "missing", NULL);
    if (!a->have_workers) return usage_error("--workers", "missing", NULL);
    if (!a->have_link) return usage_error("--worker-link", "missing", NULL);
    if (!a->have_server_link) a->c.server_bps = a->c.worker_bps;
    return 0;
}

/* ---- output ---- */

static json_t *ps_json(const ordo__cluster_t *c, const ordo__cluster_result_t *r)
{
    return json_pack("{s:f,s:f,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:I,s:I,s:i}",
                     "step_ms", r->step_us / 1e3, "bound_ms", r->bound_us / 1e3, "limit",
                     ordo__cluster_limit_name(r->limit), "compute_ms", r->compute_us / 1e3,
                     "worker_link_ms", r->worker_link_us / 1e3, "server_link_ms",
                     r->server_link_us / 1e3, "server_cpu_ms", r->server_cpu_us / 1e3,
                     "scheduler_ms", r->scheduler_us / 1e3, "worker_link_bytes_out",
                     r->worker_bytes_out, "worker_link_bytes_in", r->worker_bytes_in,
                     "server_link_bytes_in", r->server_bytes_in, "server_link_bytes_out",
                     r->server_bytes_out, "pushers", r->pushers, "slice_bytes",
                     (json_int_t)r->slice_bytes, "credit_bytes", (json_int_t)r->credit_bytes,
                     "server_hosts", c->server_hosts);
}

static json_t *ar_json(const ordo__allreduce_result_t *r)
{
    return json_pack("{s:f,s:f,s:f,s:f}", "step_ms", r->step_us / 1e3, "bound_ms",
                     r->bound_us / 1e3, "comm_ms", r->comm_us / 1e3, "worker_link_bytes",
                     r->bytes);
}

static int print_json(const ordo__model_t *m, const args_t *a, const ordo__cluster_plan_t *p,
                      const ordo__allreduce_result_t *ring, const ordo__allreduce_result_t *hier)
{
    const ordo__cluster_t *c = &p->chosen;
    json_t *why = json_array(), *autos = json_array();
    for (int i = 0; i < p->n_why; i++)
        json_array_append_new(why, json_string(p->why[i]));
    const char *names[] = {"server_hosts", "compression", "groups", "order"};
    int on[] = {a->a.server_hosts, a->a.wire, a->a.groups, a->a.order};
    for (int i = 0; i < 4; i++)
        if (on[i]) json_array_append_new(autos, json_string(names[i]));
    json_t *root = json_pack(
        "{s:s,s:s,s:{s:i,s:i,s:i,s:f,s:f,s:f},s:{s:i,s:s,s:f,s:s,s:s,s:o},s:o,s:o,s:o,s:o}",
        "format", "ordo-cluster/1", "model", m->name, "cluster", "workers", c->workers,
        "workers_per_host", c->workers_per_host, "worker_hosts",
        c->workers / c->workers_per_host, "worker_link_bps", c->worker_bps, "server_link_bps",
        c->server_bps, "compute_scale", c->compute_scale, "settings", "server_hosts",
        c->server_hosts, "compression", ordo__cluster_wire_name(c->wire), "density",
        c->topk_density, "groups", c->groups ? "on" : "off", "order", c->ordered ? "tao" : "fifo",
        "auto", autos, "ps", ps_json(c, &p->result), "ring", ar_json(ring), "hierarchical",
        ar_json(hier), "why", why);
    char *txt = root ? json_dumps(root, JSON_COMPACT) : NULL;
    if (txt) puts(txt);
    free(txt);
    json_decref(root);
    return txt ? 0 : 1;
}

static const char *mark(int is_auto)
{
    return is_auto ? " (auto)" : "";
}

static void print_table(const ordo__model_t *m, const args_t *a, const ordo__cluster_plan_t *p,
                        const ordo__allreduce_result_t *ring, const ordo__allreduce_result_t *hier)
{
    const ordo__cluster_t *c = &p->chosen;
    const ordo__cluster_result_t *r = &p->result;
    printf("%s on %d workers (%d per host, %d worker hosts) and %d server hosts; links %.4g "
           "Gbit/s (worker hosts), %.4g Gbit/s (server hosts)\n",
           m->name, c->workers, c->workers_per_host, c->workers / c->workers_per_host,
           c->server_hosts, c->worker_bps / 1e9, c->server_bps / 1e9);
    printf("settings: server hosts %d%s, compression %s%s, groups %s%s, order %s%s; slices %lld "
           "B, credit %lld B\n\n",
           c->server_hosts, mark(a->a.server_hosts), ordo__cluster_wire_name(c->wire),
           mark(a->a.wire), c->groups ? "on" : "off", mark(a->a.groups),
           c->ordered ? "tao" : "fifo", mark(a->a.order), (long long)r->slice_bytes,
           (long long)r->credit_bytes);
    printf("%-26s %12s %12s  %s\n", "", "step ms", "bound ms", "limited by");
    printf("%-26s %12.1f %12.1f  %s\n", "ordo (parameter servers)", r->step_us / 1e3,
           r->bound_us / 1e3, ordo__cluster_limit_name(r->limit));
    printf("%-26s %12.1f %12.1f  %s\n", "ring all-reduce", ring->step_us / 1e3,
           ring->bound_us / 1e3, ring->comm_us > ring->bound_us - 1e-9 ? "worker link" : "compute");
    printf("%-26s %12.1f %12.1f  %s\n\n", "hierarchical all-reduce", hier->step_us / 1e3,
           hier->bound_us / 1e3, hier->comm_us > hier->bound_us - 1e-9 ? "worker link" : "compute");
    printf("%-26s %12s %14s %14s\n", "resource (ordo)", "ms per step", "MB out", "MB in");
    printf("%-26s %12.1f\n", "compute (a worker)", r->compute_us / 1e3);
    printf("%-26s %12.1f %14.1f %14.1f\n", "a worker host's link", r->worker_link_us / 1e3,
           r->worker_bytes_out / 1e6, r->worker_bytes_in / 1e6);
    printf("%-26s %12.1f %14.1f %14.1f\n", "busiest server host's link", r->server_link_us / 1e3,
           r->server_bytes_out / 1e6, r->server_bytes_in / 1e6);
    printf("%-26s %12.1f\n", "busiest server's cpu", r->server_cpu_us / 1e3);
    printf("%-26s %12.1f\n", "scheduler cpu", r->scheduler_us / 1e3);
    printf("%-26s %12s %14.1f %14.1f\n", "ring: a worker host's link", "",
           ring->bytes / 1e6, ring->bytes / 1e6);
    printf("%-26s %12s %14.1f %14.1f\n", "hier: a worker host's link", "", hier->bytes / 1e6,
           hier->bytes / 1e6);
    if (p->n_why) printf("\nwhy (%d clusters modelled, at 1 MiB slices):\n", p->evaluated);
    for (int i = 0; i < p->n_why; i++)
        printf("  %s\n", p->why[i]);
}

int ordo__cluster_cli(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        }
    args_t a = {.a = {.server_hosts = 1, .wire = 1, .groups = 1, .order = 1}};
    ordo__cluster_defaults(&a.c);
    a.c.workers = 0;
    int rc = parse(argc, argv, &a);
    if (rc) return rc;
    /* groups can be chosen only where a host has two workers or more */
    if (a.a.groups && a.c.workers_per_host < 2) a.a.groups = 0, a.c.groups = 0;
    ordo__model_t *m = NULL;
    if ((rc = ordo__model_load_file(a.model_path, &m)) != 0) {
        fprintf(stderr, "ordo-plan cluster: MODEL.json: %s\n", ordo__error_text(rc));
        return 1;
    }
    ordo__cluster_plan_t *p = calloc(1, sizeof *p);
    ordo__allreduce_result_t ring, hier;
    if (!p) rc = ordo__error_set(ORDO_ERR_NOMEM, "out of memory");
    if (!rc) rc = ordo__cluster_plan(m, &a.c, &a.a, p);
    if (!rc) rc = ordo__allreduce_ring(m, &p->chosen, &ring);
    if (!rc) rc = ordo__allreduce_hier(m, &p->chosen, &hier);
    int status = 0;
    if (rc) {
        fprintf(stderr, "ordo-plan cluster: %s\n", ordo__error_text(rc));
        status = rc == ORDO_ERR_INVAL ? 2 : 1;
    } else if (a.json) {
        status = print_json(m, &a, p, &ring, &hier);
    } else {
        print_table(m, &a, p, &ring, &hier);
    }
    free(p);
    ordo__model_destroy(&m);
    return status;
}
