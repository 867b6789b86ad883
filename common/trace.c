/* trace: buffered Chrome trace events. */
#include "common/trace.h"
#include "common/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[48];
    char cat[16];
    int tid;
    int64_t ts_ns, dur_ns;
    char *args;
} ev_t;

struct ordo__trace {
    char name[64];
    int pid;
    pthread_mutex_t mu;
    ev_t *ev;
    size_t n, cap;
    char *tracks[16];
    int64_t t0;
};

int ordo__trace_new(const char *name, int pid, ordo__trace_t **out)
{
    ordo__trace_t *t = calloc(1, sizeof *t);
    if (!t) return ORDO_ERR_NOMEM;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->pid = pid;
    t->t0 = -1;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return 0;
}

void ordo__trace_complete(ordo__trace_t *t, const char *name, const char *cat, int tid,
                         int64_t start_ns, int64_t dur_ns, const char *args_json)
{
    if (!t || tid < 0 || tid >= 16) return; /* tracks 0..15; lanes take the tids above */
    pthread_mutex_lock(&t->mu);
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        ev_t *p = realloc(t->ev, sizeof *p * cap);
        if (!p) {
            pthread_mutex_unlock(&t->mu);
            return;
        }
        t->ev = p;
        t->cap = cap;
    }
    ev_t *e = &t->ev[t->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->cat, sizeof e->cat, "%s", cat);
    e->tid = tid;
    e->ts_ns = start_ns;
    e->dur_ns = dur_ns < 0 ? 0 : dur_ns;
    e->args = args_json ? strdup(args_json) : NULL;
    pthread_mutex_unlock(&t->mu);
}

void ordo__trace_name_track(ordo__trace_t *t, int tid, const char *name)
{
    if (!t || tid < 0 || tid >= 16) return;
    pthread_mutex_lock(&t->mu);
    free(t->tracks[tid]);
    t->tracks[tid] = strdup(name);
    pthread_mutex_unlock(&t->mu);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* ---- lanes: the trace-event format lets complete events on one thread only nest, and
 * Perfetto drops or misdraws the rest; transfers overlap freely, so each track is split into
 * lanes (extra threads) of which every one holds events that do not overlap. */

static const ev_t *sort_base;

static int by_start(const void *a, const void *b)
{
    const ev_t *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    if (x->dur_ns != y->dur_ns) return x->dur_ns > y->dur_ns ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* fills lane[i] for every event: the lowest lane of its track free at its start; returns
 * the number of lanes per track in n_lanes[16], or -1 when out of memory */
static int assign_lanes(const ordo__trace_t *t, int *lane, int *n_lanes)
{
    size_t *idx = malloc(sizeof *idx * (t->n ? t->n : 1));
    int64_t *end = NULL;
    size_t cap = 0;
    if (!idx) return -1;
    for (size_t i = 0; i < t->n; i++)
        idx[i] = i;
    sort_base = t->ev;
    qsort(idx, t->n, sizeof *idx, by_start);
    for (int tid = 0; tid < 16; tid++) {
        int lanes = 0;
        for (size_t j = 0; j < t->n; j++) {
            const ev_t *e = &t->ev[idx[j]];
            if (e->tid != tid) continue;
            int k = 0;
            while (k < lanes && end[k] > e->ts_ns)
                k++;
            if (k == lanes) {
                if ((size_t)lanes == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    int64_t *p = realloc(end, sizeof *p * nc);
                    if (!p) {
                        free(end);
                        free(idx);
                        return -1;
                    }
                    end = p;
                    cap = nc;
                }
                lanes++;
            }
            end[k] = e->ts_ns + e->dur_ns;
            lane[idx[j]] = k;
        }
        n_lanes[tid] = lanes;
    }
    free(end);
    free(idx);
    return 0;
}

static void thread_meta(FILE *f, int pid, int tid, const char *name, int lane, int sort_index)
{
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            pid, tid);
    if (lane == 0) {
        json_str(f, name);
    } else {
        char buf[96];
        snprintf(buf, sizeof buf, "%s (%d)", name, lane + 1);
        json_str(f, buf);
    }
    fputs("}}", f);
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"sort_index\":%d}}",
            pid, tid, sort_index);
}

int ordo__trace_write(ordo__trace_t *t, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return ordo__error_set(ORDO_ERR_IO, "cannot write trace %s", path);
    pthread_mutex_lock(&t->mu);
    int *lane = malloc(sizeof *lane * (t->n ? t->n : 1)), n_lanes[16] = {0};
    if (!lane || assign_lanes(t, lane, n_lanes) != 0) {
        pthread_mutex_unlock(&t->mu);
        free(lane);
        fclose(f);
        return ordo__error_set(ORDO_ERR_NOMEM, "out of memory writing trace %s", path);
    }
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
            t->pid);
    json_str(f, t->name);
    fputs("}}", f);
    for (int i = 0; i < 16; i++) {
        char unnamed[32];
        snprintf(unnamed, sizeof unnamed, "track %d", i);
        for (int k = 0; k < (n_lanes[i] ? n_lanes[i] : t->tracks[i] ? 1 : 0); k++)
            thread_meta(f, t->pid, i + 16 * k, t->tracks[i] ? t->tracks[i] : unnamed, k,
                        i * 100000 + k);
    }
    for (size_t i = 0; i < t->n; i++) {
        const ev_t *e = &t->ev[i];
        fputs(",\n{\"ph\":\"X\",\"name\":", f);
        json_str(f, e->name);
        fputs(",\"cat\":", f);
        json_str(f, e->cat);
        /* microseconds since boot (monotonic) keep processes of one host aligned */
        fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", t->pid, e->tid + 16 * lane[i],
                (double)e->ts_ns / 1e3, (double)e->dur_ns / 1e3);
        if (e->args) fprintf(f, ",\"args\":%s", e->args);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    pthread_mutex_unlock(&t->mu);
    free(lane);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return ordo__error_set(ORDO_ERR_IO, "cannot write trace %s", path);
    return 0;
}

void ordo__trace_destroy(ordo__trace_t **tp)
{
    ordo__trace_t *t = *tp;
    if (!t) return;
    for (size_t i = 0; i < t->n; i++)
        free(t->ev[i].args);
    for (int i = 0; i < 16; i++)
        free(t->tracks[i]);
    free(t->ev);
    pthread_mutex_destroy(&t->mu);
    free(t);
    *tp = NULL;
}
