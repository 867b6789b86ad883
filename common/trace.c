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

struct ordo_trace {
    char name[64];
    int pid;
    pthread_mutex_t mu;
    ev_t *ev;
    size_t n, cap;
    char *tracks[16];
    int64_t t0;
};

int ordo_trace_new(const char *name, int pid, ordo_trace_t **out)
{
    ordo_trace_t *t = calloc(1, sizeof *t);
    if (!t) return ORDO_ENOMEM;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->pid = pid;
    t->t0 = -1;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return 0;
}

void ordo_trace_complete(ordo_trace_t *t, const char *name, const char *cat, int tid,
                         int64_t start_ns, int64_t dur_ns, const char *args_json)
{
    if (!t) return;
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

void ordo_trace_name_track(ordo_trace_t *t, int tid, const char *name)
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
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

int ordo_trace_write(ordo_trace_t *t, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return ordo_error_set(ORDO_EIO, "cannot write trace %s", path);
    pthread_mutex_lock(&t->mu);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", t->pid);
    json_str(f, t->name);
    fputs("}}", f);
    for (int i = 0; i < 16; i++) {
        if (!t->tracks[i]) continue;
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
                t->pid, i);
        json_str(f, t->tracks[i]);
        fputs("}}", f);
    }
    for (size_t i = 0; i < t->n; i++) {
        const ev_t *e = &t->ev[i];
        fputs(",\n{\"ph\":\"X\",\"name\":", f);
        json_str(f, e->name);
        fputs(",\"cat\":", f);
        json_str(f, e->cat);
        /* microseconds since boot (monotonic) keep processes of one host aligned */
        fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", t->pid, e->tid,
                (double)e->ts_ns / 1e3, (double)e->dur_ns / 1e3);
        if (e->args) fprintf(f, ",\"args\":%s", e->args);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    pthread_mutex_unlock(&t->mu);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return ordo_error_set(ORDO_EIO, "cannot write trace %s", path);
    return 0;
}

void ordo_trace_destroy(ordo_trace_t **tp)
{
    ordo_trace_t *t = *tp;
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->ev[i].args);
    for (int i = 0; i < 16; i++) free(t->tracks[i]);
    free(t->ev);
    pthread_mutex_destroy(&t->mu);
    free(t);
    *tp = NULL;
}
