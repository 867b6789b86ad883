/* ckpt: the server's part of a checkpoint ([fault] checkpoint_every) and of resuming from
 * one ([fault] resume). Worker 0's checkpoint.bin holds the parameter values; what else the
 * next update depends on lives on the servers: the optimizer's momentum. Each server copies
 * a slice's momentum when the slice's update count reaches a multiple of N, and once every
 * slice it holds got there writes RUN/checkpoint-server-R.bin (replacing it atomically; the
 * one before is kept as checkpoint-server-R.prev.bin, for a run that died between the
 * servers' files and worker 0's). Layout, integers little-endian:
 *   bytes 0-7  magic "ORDOSRV1"
 *   uint32     the server's rank
 *   uint32     n, the slices it holds
 *   int64      iteration: how many updates the momentum has seen
 *   n entries  uint32 key, uint32 chunk, uint64 numel (the key map's slices of this server,
 *              in key-map order)
 *   then each slice's numel float32 momentum values, and nothing after but the checksum
 *   trailer of common/durable.h (written durably; a file without it is read too).
 * Without momentum ([optimizer] momentum = 0) there is nothing to save and no file. */
#ifndef ORDO_CKPT_H
#define ORDO_CKPT_H

#include <stdint.h>

#include "common/keys.h"
#include "server/store.h"

#define ORDO_CKPT_MAGIC "ORDOSRV1"

typedef struct ordo__srv_ckpt ordo__srv_ckpt_t;

/* ordo__srv_ckpt_new prepares server `rank`'s checkpoints into folder dir every `every`
 * updates, counting from `base` (the updates a resumed run started after). *out stays NULL
 * (and 0 is returned) when there is nothing to do: every = 0 or no momentum. */
int ordo__srv_ckpt_new(ordo__store_t *st, const ordo__keys_t *keys, int rank, int every,
                      int64_t base, const char *dir, ordo__srv_ckpt_t **out);

/* ordo__srv_ckpt_updated tells the checkpoint that slice was just updated (its store version
 * is the run's update count minus base); it copies the momentum when a checkpoint is due and
 * writes the file once the server's last slice got there. Write errors are logged. */
void ordo__srv_ckpt_updated(ordo__srv_ckpt_t *c, int slice);

/* ordo__srv_ckpt_destroy frees *c and sets it to NULL; NULL-safe. */
void ordo__srv_ckpt_destroy(ordo__srv_ckpt_t **c);

/* ordo__srv_ckpt_load restores the momentum of server `rank` from dir's
 * checkpoint-server-R.bin (or .prev.bin) holding the state after `iteration` updates. Fails
 * with ORDO_ERR_NOTFOUND or ORDO_ERR_FORMAT, the detail naming the file and the fault (another
 * server's or key map's file, another iteration, truncation, a checksum mismatch; a damaged
 * file is refused and the other one tried). A store without momentum
 * needs no file. With replicas (keys->replicas > 1) each slice is taken from whichever
 * server's file (this one's first) holds it after `iteration` updates. */
int ordo__srv_ckpt_load(ordo__store_t *st, const ordo__keys_t *keys, int rank, const char *dir,
                       int64_t iteration);

#endif
