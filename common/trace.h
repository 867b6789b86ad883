/* trace: Chrome trace-event JSON (opens in Perfetto and chrome://tracing). A process
 * records complete events (name, category, track, start, duration) into a memory buffer
 * and writes {"traceEvents":[...]} at the end, so tracing costs no I/O while running. */
#ifndef ORDO_TRACE_H
#define ORDO_TRACE_H

#include <stdint.h>

typedef struct ordo__trace ordo__trace_t;

/* ordo__trace_new starts a trace of process `name` (e.g. "worker 1"), pid shown as pid. */
int ordo__trace_new(const char *name, int pid, ordo__trace_t **out);

/* ordo__trace_complete records an event on track tid (0..15: 0 compute, 1 pulls ...)
 * from monotonic start_ns lasting dur_ns; args_json is NULL or a JSON object text.
 * Thread-safe. */
void ordo__trace_complete(ordo__trace_t *t, const char *name, const char *cat, int tid,
                         int64_t start_ns, int64_t dur_ns, const char *args_json);

/* ordo__trace_name_track names track tid in the viewer. */
void ordo__trace_name_track(ordo__trace_t *t, int tid, const char *name);

/* ordo__trace_write writes the trace file; returns 0 or ORDO_ERR_IO with the path. Events of a
 * track that overlap (transfers in flight together) go to extra lanes, tid + 16 * lane,
 * named "NAME (2)", "NAME (3)" ...: no two complete events of one thread overlap, as the
 * trace-event format requires. */
int ordo__trace_write(ordo__trace_t *t, const char *path);

/* ordo__trace_destroy frees; NULL-safe. */
void ordo__trace_destroy(ordo__trace_t **t);

#endif
