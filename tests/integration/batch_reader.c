/* batch_reader: a libordo worker that reads two epochs of a data set through the batch
 * service ([sync] batches) and trains one tensor on them (tests/integration/
 * sched_restart_batches.sh). Epoch 0 it asks for by number until its end, epoch 1 as "any
 * epoch" (then the library asks for the next batch ahead); each batch is one step (a push
 * and a pull of the tensor), and each sample it was handed is written to OUT as a line
 * "EPOCH INDEX". Usage: batch_reader CONF OUT [section.key=value ...]; ORDO_TEST_SLEEP_US
 * sleeps that long per batch (a run long enough to kill its scheduler in). */
#define _POSIX_C_SOURCE 200809L
#include <ordo/ordo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DATASET 1000
#define BATCH 10
#define SIZE 1024

static int die(const char *what, int rc)
{
    fprintf(stderr, "batch_reader: %s: %s (%s)\n", what, ordo_last_error(), ordo_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) return fprintf(stderr, "usage: batch_reader CONF OUT [section.key=value ...]\n"), 2;
    ordo_t *o = NULL;
    int rc = ordo_new(argv[1], &o);
    if (rc) return die("conf", rc);
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) return fprintf(stderr, "batch_reader: '%s' is not key=value\n", argv[i]), 2;
        *eq = '\0';
        if ((rc = ordo_set(o, argv[i], eq + 1)) != 0) return die("setting", rc);
    }
    const char *sleep_env = getenv("ORDO_TEST_SLEEP_US");
    long nap = sleep_env ? atol(sleep_env) : 0;
    static float val[SIZE], grad[SIZE];
    if ((rc = ordo_declare(o, "w", SIZE, NULL)) != 0) return die("declare", rc);
    if ((rc = ordo_batches(o, DATASET, BATCH, 2 * DATASET, 7, 1)) != 0) return die("batches", rc);
    if ((rc = ordo_join(o)) != 0) return die("join", rc);
    int rank = ordo_rank(o);
    if (rank == 0 && (rc = ordo_init(o, 0, val)) != 0) return die("init", rc);
    ordo_handle_t h; /* the initial value, before any push */
    if ((rc = ordo_pull(o, 0, val, 0, &h)) != 0 || (rc = ordo_wait(o, h, -1)) != 0)
        return die("pull", rc);
    FILE *out = fopen(argv[2], "w");
    if (!out) return fprintf(stderr, "batch_reader: cannot write %s\n", argv[2]), 1;
    int64_t idx[BATCH];
    long batches = 0, samples = 0;
    for (int epoch = 0;;) {
        int count = 0;
        rc = ordo_next_batch(o, epoch == 0 ? 0 : -1, idx, BATCH, &count, -1);
        if (rc == ORDO_BATCH_END_OF_RUN) break;
        if (rc == ORDO_BATCH_END_OF_EPOCH) {
            epoch++;
            continue;
        }
        if (rc) return die("next_batch", rc);
        for (int i = 0; i < count; i++)
            fprintf(out, "%d %lld\n", epoch, (long long)idx[i]);
        fflush(out);
        for (int i = 0; i < SIZE; i++)
            grad[i] = (float)count;
        if ((rc = ordo_pushpull(o, 0, grad, val, 0, &h)) != 0) return die("pushpull", rc);
        if ((rc = ordo_wait(o, h, -1)) != 0) return die("wait", rc);
        if ((rc = ordo_step(o, count, 0.0)) != 0) return die("step", rc);
        batches++;
        samples += count;
        struct timespec ts = {.tv_sec = nap / 1000000, .tv_nsec = nap % 1000000 * 1000};
        if (nap > 0) nanosleep(&ts, NULL);
    }
    fclose(out);
    printf("batch_reader: worker %d: %ld batches, %ld samples\n", rank, batches, samples);
    if ((rc = ordo_leave(o)) != 0) return die("leave", rc);
    ordo_destroy(&o);
    return 0;
}
