/* sparse_srv: a server's part of sparse pushes ([push] mode = sparse) in the live system.
 * The server owns one contiguous region of the model's flat index space (the plan's sparse
 * member; re-balanced by the scheduler). Per iteration it collects the W workers' COO
 * pushes of its region, sums them in worker rank order (server/sparse_agg), selects its
 * share of the global top-k (exactly k with one server; with several, by a threshold the
 * scheduler agrees from the servers' magnitude histograms every threshold_period
 * iterations, reused in between), applies SGD to the selected entries and answers every
 * worker with exactly those entries (index, new value). When new regions take effect at an
 * iteration boundary it hands the values and momentum of the ranges it loses to their new
 * owners and waits for the ranges it gains before it applies the next update. It also keeps
 * the dense values of its region for the initial values (INIT) and for whole-model pulls.
 * Bad messages are answered with ERROR (workers) or logged (servers) and dropped; they never
 * stop the server. */
#ifndef ORDO_SPARSE_SRV_H
#define ORDO_SPARSE_SRV_H

#include "common/conf.h"
#include "common/node.h"
#include "core/plan.h"
#include "core/sparse_wire.h"

typedef struct ordo__sparse_srv ordo__sparse_srv_t;

/* ordo__sparse_srv_new makes the sparse side of the server joined as node (borrowed, with
 * its transport; data_sock is the server's ROUTER data socket) from plan's sparse member
 * (copied) and conf's optimizer. *out is NULL (and 0 returned) when the plan has none. */
int ordo__sparse_srv_new(ordo__node_t *node, const ordo__conf_t *conf, const ordo__plan_t *plan,
                        int data_sock, ordo__sparse_srv_t **out);

/* ordo__sparse_srv_checkpoints sets up [fault] checkpoint_every (every updates, counted from
 * base, into the run folder dir: RUN/checkpoint-sparse-server-R.bin with the momentum of the
 * region in force) and, with resume_dir (NULL: none), restores the momentum of this server's
 * first region after base updates from the files of every server there (the regions may have
 * moved since). Without momentum there is nothing to save or restore. Errors name the file. */
int ordo__sparse_srv_checkpoints(ordo__sparse_srv_t *srv, int every, int64_t base, const char *dir,
                                const char *resume_dir);

/* ordo__sparse_srv_destroy logs the totals, frees and sets *p to NULL; NULL-safe. */
void ordo__sparse_srv_destroy(ordo__sparse_srv_t **p);

/* ordo__sparse_srv_on_data takes a message with key ORDO_SPARSE_KEY from the data socket
 * (a worker's INIT, PUSH or PULL, another server's handover); it may move the message's
 * frames out of m (the caller still closes m). */
void ordo__sparse_srv_on_data(ordo__sparse_srv_t *srv, ordo__msg_t *m);

/* ordo__sparse_srv_on_ctl takes a sparse PLAN message from the scheduler (THRESHOLD or
 * REGIONS). */
void ordo__sparse_srv_on_ctl(ordo__sparse_srv_t *srv, ordo__msg_t *m);

/* ordo__sparse_srv_iteration returns how many iterations the server has completed. */
int64_t ordo__sparse_srv_iteration(const ordo__sparse_srv_t *srv);

#endif
