/* replan: the scheduler's side of a collective re-plan (ordo_replan, docs/ordering-live.md). Every
 * worker sends REPLAN at the same point of its run, with nothing in flight; worker 0's
 * carries an ordo-model/1 profile of the tensors. Once all are in, the coordinator plans
 * exactly as the scheduler does at start-up ([order] policy over the profile, the key map
 * and the link), sends the new plan to every server, waits for every server's
 * acknowledgement (each has switched its enforcement to the new priorities) and then
 * answers every worker with the plan, which releases them like a barrier. A profile that
 * cannot be planned is answered to every worker as {"error", "code"}; the run goes on with
 * the plan it had. */
#ifndef ORDO_REPLAN_H
#define ORDO_REPLAN_H

#include <jansson.h>

#include "common/conf.h"
#include "common/keys.h"
#include "common/wire.h"
#include "core/model.h"

typedef struct ordo__replan ordo__replan_t;

/* ordo_replan_send_fn sends a REPLAN with JSON text to every member of role. */
typedef void (*ordo_replan_send_fn)(void *ctx, int role, const char *text);

/* ordo__replan_new makes the coordinator for conf's workers and servers (conf copied);
 * run_dir gets each new plan as replan-N.json; send delivers its messages. */
int ordo__replan_new(const ordo__conf_t *conf, const char *run_dir, ordo_replan_send_fn send,
                    void *ctx, ordo__replan_t **out);

/* ordo__replan_on_msg takes a REPLAN from the member (role, rank); keys is the run's key map
 * (its numel are the tensors' sizes). Returns 0 (dropped or bad requests are logged and, for
 * a worker's, answered), or an error when a server could not switch: the caller aborts the
 * run with ordo__error_detail(). */
int ordo__replan_on_msg(ordo__replan_t *r, const ordo__keys_t *keys, int role, int rank,
                       ordo__msg_t *m);

/* ordo__replan_set_declared gives the model the workers declared (borrowed; it outlives r):
 * each re-planned model takes its tensors' occasional marks. */
void ordo__replan_set_declared(ordo__replan_t *r, const ordo__model_t *declared);

/* ordo__replan_set_slice gives the start-up's slice size (the key map is cut with it): a re-plan
 * of a run whose slices and credit the step model tuned keeps the slices and tunes the push
 * credit again on the profile (0: neither is tuned again). */
void ordo__replan_set_slice(ordo__replan_t *r, int64_t slice_bytes);

/* ordo__replan_count returns the re-plans completed; ordo__replan_last_plan and
 * ordo__replan_last_model the last one's plan (with its "step" member when tuned) and the
 * model planned from worker 0's profile (NULL before the first; r keeps them). */
int ordo__replan_count(const ordo__replan_t *r);
json_t *ordo__replan_last_plan(const ordo__replan_t *r);
const ordo__model_t *ordo__replan_last_model(const ordo__replan_t *r);

/* ordo__replan_destroy frees *r and sets it to NULL; NULL-safe. */
void ordo__replan_destroy(ordo__replan_t **r);

#endif
