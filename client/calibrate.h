/* calibrate: the start-up calibration of the merge planner's cost model ([push] calibrate =
 * true). Every worker of the run runs the same sequence against the run's own servers,
 * through the same (emulated) links as its pushes, so the figures include the other workers'
 * contention: for sizes 1 KiB, 4 KiB, 16 KiB, ... up to max_bytes, reps times each, one probe
 * alone (to its acknowledgement), a barrier, a burst of ORDO_CALIBRATE_BURST probes in flight
 * (to the last acknowledgement), a barrier. Probes (ordo__ps_probe) are pushes the servers
 * sum into scratch memory, so nothing of the model changes. The medians per size give, as
 * for ordo-bench calibrate, what one more pipelined push costs ((T_burst - T_one) / (burst -
 * 1)) and what one push alone costs (T_one), and ordo__merge_fit_planner turns them into the
 * planner's a, b, c. */
#ifndef ORDO_CALIBRATE_H
#define ORDO_CALIBRATE_H

#include <stdint.h>

#include "core/merge_cost.h"
#include "client/ps.h"

#define ORDO_CALIBRATE_BURST 8   /* probes in flight at once */
#define ORDO_CALIBRATE_MAX_SIZES 12

typedef struct ordo__calibrate_opts {
    int reps;          /* repeats per size (the median is fitted); at least 1 */
    int64_t max_bytes; /* the largest size (at least 4 KiB, at most ORDO_PROBE_MAX_BYTES) */
    double link_bps;   /* the emulated link's rate (0: none), the floor of the planner's b */
} ordo__calibrate_opts_t;

/* What a calibration measured: per size, the medians it fitted. */
typedef struct ordo__calibration {
    int n;
    double bytes[ORDO_CALIBRATE_MAX_SIZES];
    double per_msg_s[ORDO_CALIBRATE_MAX_SIZES]; /* one more pipelined push */
    double one_s[ORDO_CALIBRATE_MAX_SIZES];     /* one push alone, to its ack */
    ordo__merge_cost_t cost;                     /* the fit */
} ordo__calibration_t;

/* ordo__calibrate_measure runs the sequence above on w (every worker of the run must call it
 * with the same options, or the barriers never complete) and fits the result into *out.
 * Probes go to the servers in turn (probe j of a burst to server j mod servers). Fails with
 * the transport's and the fit's errors; ORDO_ERR_INVAL for options out of range. */
int ordo__calibrate_measure(ordo__ps_t *w, const ordo__calibrate_opts_t *o,
                           ordo__calibration_t *out);

/* ordo__calibrate_send gives the scheduler a calibration as a PLAN message with the JSON body
 * {"calibration": {"a_s", "b_s", "c_s", "b_msg_s", "b_one_s", "bytes": [...],
 * "per_msg_s": [...], "one_s": [...]}}, and "op_times": the ordo-oracle/1 object of op_times
 * when that is not NULL (the op times the worker measured). Fails with ORDO_ERR_FORMAT when
 * op_times is not JSON. */
int ordo__calibrate_send(ordo__ps_t *w, const ordo__calibration_t *c, const char *op_times);

#endif
