/* api_errors: the public API's error paths, built like any program outside the tree (only
 * <ordo/ordo.h> and pkg-config). `api_errors local DIR` needs no cluster: bad conf files,
 * keys and values, calls out of sequence, bad update rules, an unreachable scheduler, the
 * version.
 * `api_errors mismatch CONF ENDPOINT` joins a cluster whose model is not the declared one and
 * expects ordo_join to name the tensor. Each check prints "ok: ..."; a failure exits 1. */
#include <ordo/ordo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

/* expect checks that rc is the code `want` and that the last error contains `text`. */
static void expect(const char *what, int rc, int want, const char *text)
{
    const char *msg = ordo_last_error();
    if (rc != want || !strstr(msg, text)) {
        printf("FAIL: %s: rc %d (want %d), message \"%s\" (want it to contain \"%s\")\n", what, rc,
               want, msg, text);
        failures++;
    } else {
        printf("ok: %s: %s\n", what, msg);
    }
}

static void local_checks(const char *dir)
{
    if (strcmp(ordo_version(), ORDO_VERSION_STRING) != 0) {
        printf("FAIL: library %s, headers %s\n", ordo_version(), ORDO_VERSION_STRING);
        failures++;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/bad.ini", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        printf("FAIL: cannot write %s\n", path);
        exit(1);
    }
    fputs("[optimizer]\nlr = abc\n", f);
    fclose(f);
    ordo_t *o = NULL;
    int rc;
    expect("a bad value in a conf file", ordo_new(path, &o), ORDO_ERR_FORMAT, "bad.ini:2");
    rc = ordo_new("/nonexistent/ordo.ini", &o);
    expect("a missing conf file", rc, rc < 0 ? rc : -1, "/nonexistent/ordo.ini");
    if (o) {
        printf("FAIL: ordo_new failed but returned a handle\n");
        failures++;
    }
    rc = ordo_new(NULL, &o);
    if (rc) {
        printf("FAIL: ordo_new(NULL): %s\n", ordo_last_error());
        exit(1);
    }
    expect("an unknown key", ordo_set(o, "optimizer.nosuchkey", "1"), ORDO_ERR_INVAL,
           "unknown key 'optimizer.nosuchkey'");
    expect("a bad value", ordo_set(o, "optimizer.lr", "fast"), ORDO_ERR_INVAL,
           "optimizer.lr: 'fast' is not a number");
    expect("a push before ordo_join", ordo_push(o, 0, (float[1]){0}, 0, NULL), ORDO_ERR_INVAL,
           "ordo_join first");
    expect("an empty tensor", ordo_declare(o, "empty", 0, NULL), ORDO_ERR_INVAL,
           "\"empty\": 0 elements");
    int t = -1;
    if (ordo_declare(o, "w", 10, &t) != 0 || t != 0 || ordo_tensor_numel(o, 0) != 10 ||
        strcmp(ordo_tensor_name(o, 0), "w") != 0 || ordo_rank(o) != -1) {
        printf("FAIL: a declared tensor reads back wrong\n");
        failures++;
    }
    ordo_update_t sgd = {ORDO_UPDATE_SGD, -0.5, 0.9, 0};
    expect("a negative learning rate", ordo_declare_update(o, 0, &sgd), ORDO_ERR_INVAL,
           "\"w\": lr -0.5");
    expect("an update of no tensor", ordo_declare_update(o, 4, &sgd), ORDO_ERR_NOTFOUND,
           "no tensor 4");
    expect("a broadcast before ordo_join", ordo_broadcast(o, (char[4]){0}, 4, 0, 100),
           ORDO_ERR_INVAL, "ordo_join first");
    sgd.lr = 0.5;
    if (ordo_declare_update(o, 0, &sgd) != 0) {
        printf("FAIL: a good update rule: %s\n", ordo_last_error());
        failures++;
    }
    expect("an update rule without trainer = declared", ordo_join(o), ORDO_ERR_INVAL,
           "needs [model] trainer = declared");
    ordo_set(o, "model.trainer", "declared");
    ordo_set(o, "cluster.scheduler", "tcp://127.0.0.1:1");
    ordo_set(o, "fault.startup_ms", "300");
    expect("no scheduler", ordo_join(o), ORDO_ERR_TIMEDOUT,
           "from the scheduler at tcp://127.0.0.1:1");
    ordo_destroy(&o);
    ordo_destroy(&o); /* NULL-safe */
    if (o) failures++;
}

/* mismatch joins with the hello_ordo tensors, one of them the wrong size. */
static void mismatch(const char *conf, const char *endpoint)
{
    ordo_t *o = NULL;
    int rc = ordo_new(conf, &o);
    if (!rc) rc = ordo_set(o, "cluster.scheduler", endpoint);
    if (!rc) rc = ordo_declare(o, "layer1.weight", 65536, NULL);
    if (!rc) rc = ordo_declare(o, "layer1.bias", 256, NULL);
    if (!rc) rc = ordo_declare(o, "layer2.weight", 2560, NULL);
    if (rc) {
        printf("FAIL: set-up: %s\n", ordo_last_error());
        exit(1);
    }
    expect("a tensor of the wrong size", ordo_join(o), ORDO_ERR_INVAL,
           "tensor 1 \"layer1.bias\": declared 256 elements, the cluster's tensor 1 has 512");
    expect("a push after a failed join", ordo_push(o, 0, (float[1]){0}, 0, NULL), ORDO_ERR_INVAL,
           "ordo_join first");
    ordo_destroy(&o);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "local"))
        local_checks(argv[2]);
    else if (argc == 4 && !strcmp(argv[1], "mismatch"))
        mismatch(argv[2], argv[3]);
    else
        return fprintf(stderr, "usage: api_errors local DIR | mismatch CONF ENDPOINT\n"), 2;
    return failures ? 1 : 0;
}
