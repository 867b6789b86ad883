/* runplan_merge: the merge part of the run's plan ([push] mode = merged). The scheduler
 * computes the groups once at start-up with the merge planner (scheduler/merge.h) and sends
 * them to every node in the plan's "merge" member; the plan decides for everyone, so workers
 * push merged exactly when it is there. */
#ifndef ORDO_RUNPLAN_MERGE_H
#define ORDO_RUNPLAN_MERGE_H

#include <jansson.h>

#include "common/conf.h"
#include "core/model.h"
#include "planner/oracle.h"

/* ordo__runplan_merge adds the member "merge" to plan when conf's push.mode is merged (and
 * does nothing otherwise): {"algo": push.merge, "a": s, "b": s/byte, "c": s/byte, "pull":
 * s/byte, "pull_msg": s/value, "groups": [[key, ...], ...] in push order,
 * "groups_per_worker": n, "max_message_bytes": order.partition_bytes, "predicted_iter_s":
 * backward start to last push end}. Workers cut each group's share of a
 * server into messages of at most max_message_bytes. The cost model is a = push.merge_a_us, b =
 * push.merge_b_ns (0: 8 / [net] bandwidth, or 10gbit's when bandwidth is 0), c =
 * push.merge_c_ns, with [order] pull = early the pull stage p = workers * 8 / the planners'
 * link rate and p_msg = workers * [net] msg_us per pulled value (merge.h,
 * ordo__merge_comm_times3; "pull" and "pull_msg" in the member, 0 otherwise); op times are the
 * profile's times compute_scale (emulated compute), or the measured ones of [order] oracle
 * (oracle when the caller has loaded that file already, else read here). Keys are m's
 * parameters in order. */
int ordo__runplan_merge(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__oracle_t *oracle,
                       json_t *plan);

/* The member of "merge" that holds the plan as ordo-merge/1 text, for the run folder's
 * merge-plan.json; ordo__runplan_merge_take_file removes it. */
#define ORDO_RUNPLAN_MERGE_FILE_MEMBER "ordo_merge_1"

/* ordo__runplan_merge_take_file writes plan's merge plan, when it has one, as ordo-merge/1 to
 * dir/merge-plan.json (a later run can use it as push.merge = file:PATH) and removes the text
 * from the plan, which then goes to the nodes without it. Write errors are logged. */
void ordo__runplan_merge_take_file(json_t *plan, const char *dir);

/* The largest message the start-up calibration times: partition_bytes, at most this. */
#define ORDO_RUNPLAN_CALIBRATE_MAX_BYTES (4 << 20)

/* With push.calibrate = true, ordo__runplan_merge adds "merge_calibrate": {"reps":
 * push.calibrate_reps, "max_bytes": partition_bytes up to ORDO_RUNPLAN_CALIBRATE_MAX_BYTES}
 * instead of "merge": the workers measure first (client/calibrate.h), and
 * ordo__runplan_merge_calibrated then plans with their a (s), b, c (s/byte): it replaces
 * "merge_calibrate" in plan with "merge", as ordo__runplan_merge makes it from those costs. */
int ordo__runplan_merge_calibrated(const ordo__conf_t *conf, const ordo__model_t *m, double a,
                                  double b, double c, json_t *plan);

#endif
