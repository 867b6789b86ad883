/* merge_cli: `ordo-plan merge`: parses the command line, loads the model, computes the plan
 * with scheduler/merge and prints it as ordo-merge/1 JSON, or a comparison table. */
#include "tools/merge_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "planner/merge.h"
#include "core/model.h"
#include "planner/oracle.h"

static const char usage_text[] =
    "usage: ordo-plan merge [--algo ALGO] --a SEC --b SEC_PER_BYTE [--c SEC_PER_BYTE]\n"
    "                       [--pull SEC_PER_BYTE] [--pull-msg SEC] [--margin X]\n"
    "                       [--servers N [--partition BYTES] [--segment BYTES]]\n"
    "                       [--oracle FILE] [--compare]\n"
    "                       MODEL.json\n"
    "\n"
    "Plans which gradients are pushed together (MG-WFBP, docs/merging.md) and writes the\n"
    "ordo-merge/1 plan to stdout. A message of B bytes holds the link a + b * B seconds, then\n"
    "the receiver c * B seconds (overlapping the next message's transfer).\n"
    "\n"
    "  --algo ALGO        optimal (default) | mgwfbp | wfbp | all | bytes:N (e.g. bytes:25MB)\n"
    "  --a SEC            start-up cost of one message, seconds (>= 0)\n"
    "  --b SEC_PER_BYTE   cost per byte on the link, seconds (>= 0)\n"
    "  --c SEC_PER_BYTE   the receiver's work per byte once a message has arrived (default 0)\n"
    "  --pull SEC_PER_BYTE  early pulls ([order] pull = early): a group's next values leave\n"
    "                     the servers once it has arrived, each server's link taking this\n"
    "                     per byte of the group it holds (every worker's copy: workers x 8 /\n"
    "                     link rate; default 0, pulls not planned; with --servers N > 4,\n"
    "                     and without --servers, one link for the busiest server's share)\n"
    "  --pull-msg SEC     and this per pulled value (a key's slice) on its server's link, for\n"
    "                     every worker's copy: workers x the per-message cost, e.g. [net] msg_us\n"
    "                     (default 0)\n"
    "  --margin X         optimal's tie rule: among the plans of least time, the least time with\n"
    "                     a, b and c 1 + X times larger (default: [push] merge_margin, 0.5)\n"
    "  --servers N        count the messages a run with N servers sends: a group is one\n"
    "                     message per server holding part of it, cut at --partition (as the\n"
    "                     scheduler plans a run); without it a group is one message\n"
    "  --partition BYTES  the run's [order] partition_bytes (default 4MiB)\n"
    "  --segment BYTES    the run's [order] segment_bytes (default 1MiB)\n"
    "  --oracle FILE      measured op times (ordo-oracle/1, ordo-plan oracle) instead of the\n"
    "                     model's\n"
    "  --compare          print a table of every algorithm's predicted time instead\n"
    "  -h, --help         this text\n";

/* parse_cost reads a finite number >= 0 for option opt. */
static int parse_cost(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0) {
        fprintf(stderr, "ordo-plan merge: %s '%s' is not a number >= 0\n", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* compare prints the predicted time of every algorithm (bytes:N with the given N, or 25 MB
 * as PyTorch DDP's default when none was asked for). */
static int compare(const ordo__model_t *m, double a, double b, double c, double pull,
                   double pull_msg, double margin, int64_t bucket,
                   const ordo__merge_layout_t *layout)
{
    static const ordo__merge_algo_t algos[] = {ORDO_MERGE_WFBP, ORDO_MERGE_ALL, ORDO_MERGE_BYTES,
                                              ORDO_MERGE_MGWFBP, ORDO_MERGE_OPTIMAL};
    if (bucket <= 0) bucket = 25 * 1024 * 1024;
    double wfbp = 0;
    printf("model %s: %d params, %lld bytes, a = %g s, b = %g s/byte, c = %g s/byte%s", m->name,
           m->n_params, (long long)ordo__model_total_bytes(m), a, b, c,
           pull > 0 || pull_msg > 0 ? "" : "\n");
    if (pull > 0 || pull_msg > 0) printf(", pull = %g s/byte + %g s/value\n", pull, pull_msg);
    printf("%-16s %7s %8s %18s %9s\n", "algo", "groups", "messages", "predicted_iter_s", "vs_wfbp");
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        ordo__merge_plan_t *p = NULL;
        int rc = ordo__merge_plan_compute3(m, algos[i], bucket, a, b, c, pull, pull_msg, margin,
                                          layout, &p);
        if (rc) {
            fprintf(stderr, "ordo-plan merge: %s\n", ordo__error_text(rc));
            return 1;
        }
        if (algos[i] == ORDO_MERGE_WFBP) wfbp = p->predicted_iter_s;
        char name[48];
        if (algos[i] == ORDO_MERGE_BYTES)
            snprintf(name, sizeof name, "bytes:%lld", (long long)bucket);
        else
            snprintf(name, sizeof name, "%s", ordo__merge_algo_name(algos[i]));
        printf("%-16s %7d %8d %18.6f %8.3fx\n", name, p->n_groups, ordo__merge_plan_messages(p, m),
               p->predicted_iter_s, p->predicted_iter_s > 0 ? wfbp / p->predicted_iter_s : 1.0);
        ordo__merge_plan_destroy(&p);
    }
    return 0;
}

int ordo__merge_cli(int argc, char **argv)
{
    const char *algo_text = "optimal", *path = NULL, *oracle_path = NULL;
    double a = NAN, b = NAN, c = 0, pull = 0, pull_msg = 0;
    int want_compare = 0;
    ordo__conf_t defaults;
    ordo__conf_defaults(&defaults);
    ordo__merge_layout_t layout = {0, defaults.partition_bytes, ordo__conf_segment_bytes(&defaults)};
    double margin = defaults.merge_margin;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(arg, "--compare") == 0) {
            want_compare = 1;
            continue;
        }
        if (arg[0] == '-' && arg[1]) {
            /* --opt VALUE or --opt=VALUE */
            const char *eq = strchr(arg, '=');
            size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
            static const char *const keys[] = {"--algo",    "--a",         "--b",       "--c",
                                               "--servers", "--partition", "--segment", "--margin",
                                               "--oracle",  "--pull",      "--pull-msg"};
            int which = -1;
            for (int k = 0; k < 11; k++)
                if (strlen(keys[k]) == klen && strncmp(arg, keys[k], klen) == 0) which = k;
            if (which < 0) {
                fprintf(stderr, "ordo-plan merge: unknown option '%s' (see --help)\n", arg);
                return 2;
            }
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else {
                fprintf(stderr, "ordo-plan merge: %s needs a value\n", keys[which]);
                return 2;
            }
            if (which == 0)
                algo_text = val;
            else if (which == 8)
                oracle_path = val;
            else if (which == 9) {
                if (parse_cost(keys[which], val, &pull)) return 2;
            } else if (which == 10) {
                if (parse_cost(keys[which], val, &pull_msg)) return 2;
            } else if (which == 7) {
                if (parse_cost(keys[which], val, &margin)) return 2;
            } else if (which >= 4) {
                int64_t v;
                if (ordo__conf_parse_bytes(val, &v) != 0 || v < 0 ||
                    (which == 4 && (v < 1 || v > 1024))) {
                    fprintf(stderr, "ordo-plan merge: %s '%s' is not %s\n", keys[which], val,
                            which == 4 ? "a number of servers in [1, 1024]" : "a size in bytes");
                    return 2;
                }
                if (which == 4)
                    layout.servers = (int)v;
                else if (which == 5)
                    layout.partition_bytes = v;
                else
                    layout.segment_bytes = v;
            } else if (parse_cost(keys[which], val, which == 1 ? &a : which == 2 ? &b : &c))
                return 2;
            continue;
        }
        if (path) {
            fprintf(stderr, "ordo-plan merge: one model file only ('%s' and '%s')\n", path, arg);
            return 2;
        }
        path = arg;
    }
    ordo__merge_algo_t algo;
    int64_t bucket;
    if (ordo__merge_algo_parse(algo_text, &algo, &bucket)) {
        fprintf(stderr, "ordo-plan merge: --algo %s\n", ordo__error_detail());
        return 2;
    }
    if (!path || isnan(a) || isnan(b)) {
        fprintf(stderr, "ordo-plan merge: %s (see --help)\n",
                !path ? "no MODEL.json given" : "--a and --b are required");
        return 2;
    }

    ordo__model_t *m = NULL;
    ordo__merge_plan_t *p = NULL;
    char *json = NULL;
    int status = 1, rc = ordo__model_load_file(path, &m);
    if (!rc && oracle_path) {
        /* plan with the measured op times */
        ordo__model_t *timed = NULL;
        rc = ordo__oracle_timed_model_file(oracle_path, m, &timed);
        if (!rc) {
            ordo__model_destroy(&m);
            m = timed;
        }
    }
    if (rc) {
        fprintf(stderr, "ordo-plan merge: %s\n", ordo__error_text(rc));
        goto done;
    }
    if (want_compare) {
        status = compare(m, a, b, c, pull, pull_msg, margin, algo == ORDO_MERGE_BYTES ? bucket : 0,
                         &layout);
        goto done;
    }
    if ((rc = ordo__merge_plan_compute3(m, algo, bucket, a, b, c, pull, pull_msg, margin, &layout,
                                       &p)) ||
        (rc = ordo__merge_plan_to_json(p, m, &json))) {
        fprintf(stderr, "ordo-plan merge: %s: %s\n", path, ordo__error_text(rc));
        goto done;
    }
    fputs(json, stdout);
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    free(json);
    ordo__merge_plan_destroy(&p);
    ordo__model_destroy(&m);
    return status;
}
