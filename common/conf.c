/* conf: table-driven configuration: the key table, values from files, the environment and the
 * command line (the rules between keys: conf_check.c; printing: conf_print.c). */
#include "common/conf.h"
#include "common/conf_internal.h"
#include "common/error.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(ordo__conf_t, f)
#define SZ(f) sizeof(((ordo__conf_t *)0)->f)
#define BIG 1e18

const key_t_ ordo__conf_keys[] = {
    {"cluster", "scheduler", T_STR, OFF(scheduler), SZ(scheduler), "tcp://127.0.0.1:9100", 0, 0, NULL,
     "scheduler endpoint every node connects to"},
    {"cluster", "servers", T_INT, OFF(servers), 0, "1", 1, 1024, NULL, "number of servers"},
    {"cluster", "workers", T_INT, OFF(workers), 0, "1", 1, 4096, NULL, "number of workers"},
    {"cluster", "token", T_STR, OFF(token), SZ(token), "ordo", 0, 0, NULL,
     "shared secret a node must present to register"},
    {"cluster", "host", T_STR, OFF(host), SZ(host), "127.0.0.1", 0, 0, NULL,
     "address this node binds and advertises"},
    {"cluster", "port", T_INT, OFF(port), 0, "0", 0, 65535, NULL,
     "server bind port (0 = any free port)"},
    {"cluster", "rank", T_INT, OFF(rank), 0, "-1", -1, 4095, NULL,
     "requested rank (-1 = assigned by the scheduler)"},
    {"cluster", "local_size", T_INT, OFF(local_size), 0, "0", 0, 4096, NULL,
     "workers per host that aggregate inside the host first ([intra] backend; consecutive "
     "ranks form a group; 0 = the workers ordo-launch starts on one host, else 1)"},
    {"model", "file", T_STR, OFF(model_file), SZ(model_file), "", 0, 0, NULL,
     "ordo-model/1 profile for trainer = profile"},
    {"model", "trainer", T_STR, OFF(trainer), SZ(trainer), "synthetic", 0, 0, NULL,
     "synthetic | profile | mlp | cnn | declared (the workers' declared tensors, ordo_declare; "
     "the default when worker.command is set under ordo-launch)"},
    {"model", "tensors", T_STR, OFF(tensors), SZ(tensors), "4KiB,256KiB,1MiB,6MiB", 0, 0, NULL,
     "synthetic job: comma-separated tensor sizes in bytes (suffixes KiB, MiB)"},
    {"model", "compute", T_ENUM, OFF(compute), 0, "emulate", 0, 0, "emulate|cpu|cuda",
     "compute backend"},
    {"model", "compute_scale", T_DOUBLE, OFF(compute_scale), 0, "1.0", 0, 1000, NULL,
     "multiplier on profiled op times (emulate)"},
    {"model", "iterations", T_INT, OFF(iterations), 0, "20", 0, 100000000, NULL,
     "iterations to run (0 = as many as epochs need)"},
    {"model", "epochs", T_INT, OFF(epochs), 0, "0", 0, 100000, NULL,
     "epochs to train (trainers mlp, cnn; 0 = use iterations)"},
    {"model", "batch", T_INT, OFF(batch), 0, "0", 0, 1000000, NULL,
     "per-worker batch (0 = the model's own)"},
    {"model", "warmup", T_INT, OFF(warmup), 0, "2", 0, 1000000, NULL,
     "iterations left out of throughput figures"},
    {"model", "seed", T_U64, OFF(seed), 0, "1", 0, BIG, NULL, "random seed"},
    {"model", "forward_only", T_BOOL, OFF(forward_only), 0, "false", 0, 0, NULL,
     "run only the forward pass (ordering experiments)"},
    {"model", "data_dir", T_STR, OFF(data_dir), SZ(data_dir), "/usr/share/datasets/fashion-mnist",
     0, 0, NULL, "Fashion-MNIST IDX files"},
    {"model", "init", T_STR, OFF(init_params), SZ(init_params), "", 0, 0, NULL,
     "parameter values to start from: a params.bin of an earlier run (output.save_params) of "
     "the same model; empty = the trainer's own initialisation (momentum starts from zero)"},
    {"model", "target_accuracy", T_DOUBLE, OFF(target_accuracy), 0, "0", 0, 1, NULL,
     "summary.json reports the time until worker 0's test accuracy (model.eval_every) first "
     "reaches this (0 = not reported)"},
    {"model", "eval_every", T_INT, OFF(eval_every), 0, "0", 0, 100000000, NULL,
     "trainers mlp, cnn: worker 0 evaluates the test set every N iterations and reports the "
     "accuracy in metrics.jsonl (0 = only at the end)"},
    {"model", "eval_samples", T_INT, OFF(eval_samples), 0, "0", 0, 100000000, NULL,
     "the evaluations of model.eval_every use the first N test samples (0 = the whole test "
     "set; the final evaluation always does)"},
    {"order", "policy", T_STR, OFF(policy), SZ(policy), "fifo", 0, 0, NULL,
     "none | fifo | tio | tao | search | layer | file:PATH"},
    {"order", "enforce", T_ENUM, OFF(enforce), 0, "auto", 0, 0, "strict|greedy|auto",
     "how servers release ordered transfers: strict (the plan's order, TicTac), greedy (the "
     "ready one of smallest priority) or auto (greedy for a planned policy in training, else "
     "strict)"},
    {"order", "share", T_ENUM, OFF(share), 0, "fair", 0, 0, "fair|serial",
     "a server's link among the workers' pulled values: fair (byte-fair turns, as connections "
     "share a NIC) or serial (the worker furthest along in its iteration first)"},
    {"order", "pull", T_ENUM, OFF(pull), 0, "auto", 0, 0, "start|early|auto",
     "when a worker asks for a parameter's next value: start (every pull at the start of the "
     "iteration, in the order policy's order), early (each key's right after its gradient "
     "is pushed, so pulled values travel during backward) or auto (early for a planned "
     "policy in training without intra groups, else start)"},
    {"order", "partition_bytes", T_BYTES, OFF(partition_bytes), 0, "4MiB", 1024, 1LL << 32, NULL,
     "tensors above this are split into chunks; a chunk is the unit spread over the servers"},
    {"order", "segment_bytes", T_BYTES, OFF(segment_bytes), 0, "auto", 0, 1LL << 32, "auto",
     "the slice size: chunks travel, are summed and answered in pieces of at most this size, "
     "each with its tensor's priority (0 = whole chunks; auto = chosen with order.credit_bytes "
     "by the step model for a planned policy in training with dense pushes, else 1MiB)"},
    {"order", "credit_bytes", T_BYTES, OFF(credit_bytes), 0, "auto", 0, 1LL << 32, "auto",
     "a worker hands its queued pushes (smallest priority first) to the egress link while "
     "less than this is on the link ahead of them, so that a later gradient of higher "
     "priority overtakes the rest of the queue (auto = chosen with order.segment_bytes by "
     "the step model, as for segment_bytes, else 1 ms of the planners' link rate, at least "
     "64KiB; 0 = one push at a time)"},
    {"order", "plan_bandwidth", T_RATE, OFF(plan_bandwidth_bps), 0, "0", 0, 1e13, NULL,
     "the link rate the ordering and merge planners assume, for real links that are not "
     "emulated (0 = [net] bandwidth, or 10gbit when that is 0 too)"},
    {"order", "search_budget_ms", T_INT, OFF(search_budget_ms), 0, "2000", 0, 3600000, NULL,
     "time budget of the search policy (in training, each of its two searches)"},
    {"order", "oracle", T_STR, OFF(oracle), SZ(oracle), "", 0, 0, NULL,
     "measured op times for the ordering and merge planners (ordo-oracle/1, e.g. from "
     "ordo-plan oracle; empty = the profile's times)"},
    {"intra", "backend", T_ENUM, OFF(intra_backend), 0, "none", 0, 0, "none|shm|nccl|auto",
     "how a host's workers ([cluster] local_size) sum gradients and share values before the "
     "servers see them: none (every worker talks to the servers), shm (shared memory), nccl "
     "(GPUs), auto (each worker: nccl for CUDA tensors where it can be loaded, else shm; "
     "intra.device; docs/intra.md)"},
    {"intra", "device", T_ENUM, OFF(intra_device), 0, "auto", 0, 0, "auto|cpu|cuda",
     "where this worker's tensors live, for intra.backend = auto: cuda picks nccl, cpu shm; "
     "auto: ordo-worker takes model.compute, ordo.torch the model's parameters, other "
     "libordo programs cpu"},
    {"intra", "overlap", T_BOOL, OFF(intra_overlap), 0, "true", 0, 0, NULL,
     "true: each forward op waits only for its own parameters' all-gather, which overlaps "
     "the forward pass (DeAR); false: the forward pass starts once every all-gather is done"},
    {"intra", "values", T_ENUM, OFF(intra_values), 0, "shared", 0, 0, "shared|copy",
     "backend = shm, a bound model (ordo_bind: ordo-worker, ordo.torch): shared = each "
     "tensor's value buffer is the group's shared value in the segment, read in place; copy = "
     "each member copies every value into its own buffer (docs/intra.md)"},
    {"push", "mode", T_ENUM, OFF(push_mode), 0, "dense", 0, 0, "dense|merged|sparse",
     "how gradients are pushed"},
    {"push", "compression", T_STR, OFF(compression), SZ(compression), "none", 0, 0, NULL,
     "the wire type of every tensor's pushes and pulls (a tensor declared with its own wins): "
     "none (float32), bf16, fp16 (scaled by 1 / workers before the cast), onebit (sign and "
     "scale), topk:K or randomk:K (K a count >= 1 or a fraction in (0, 1)); ',ef=none' or "
     "',ef=vanilla' turns error feedback off or on (default: on for onebit, topk, randomk), "
     "',pull=delta' sends a lossy codec's pulls as encoded changes (default: float32). "
     "Servers sum and update in float32 (docs/compression.md)"},
    {"push", "merge", T_STR, OFF(merge), SZ(merge), "optimal", 0, 0, NULL,
     "optimal | mgwfbp | wfbp | all | bytes:N | file:PATH (an ordo-merge/1 plan; merged mode)"},
    {"push", "merge_a_us", T_DOUBLE, OFF(merge_a_us), 0, "20", 0, 1e7, NULL,
     "merge planner: cost a of one more pipelined push beyond its bytes, in us (ordo-bench "
     "calibrate measures it)"},
    {"push", "merge_b_ns", T_DOUBLE, OFF(merge_b_ns), 0, "0", 0, 1e7, NULL,
     "merge planner: cost b per byte pushed, in ns (0 = 8 / the planners' link rate: "
     "order.plan_bandwidth, net.bandwidth or 10gbit)"},
    {"push", "merge_c_ns", T_DOUBLE, OFF(merge_c_ns), 0, "0", 0, 1e7, NULL,
     "merge planner: the receivers' work per byte after a message has arrived, in ns (a second "
     "stage that overlaps the next message's transfer; ordo-bench calibrate measures it)"},
    {"push", "merge_margin", T_DOUBLE, OFF(merge_margin), 0, "0.5", 0, 100, NULL,
     "merge planner (optimal): among the plans of least time, prefer those that lose least when "
     "communication costs 1 + merge_margin times the calibrated a, b, c (slack for a slower "
     "link); 0 = no such preference"},
    {"push", "calibrate", T_BOOL, OFF(calibrate), 0, "false", 0, 0, NULL,
     "merged mode: the workers time pipelined pushes against the run's servers at start-up and "
     "the scheduler plans with the fitted a, b, c instead of merge_a_us, merge_b_ns, merge_c_ns "
     "(and, with cpu or cuda compute and no order.oracle, with the op times worker 0 measures)"},
    {"push", "calibrate_reps", T_INT, OFF(calibrate_reps), 0, "7", 1, 1000, NULL,
     "repeats per message size of the start-up calibration (the median is fitted)"},
    {"push", "density", T_DOUBLE, OFF(density), 0, "0.01", 1e-9, 1.0, NULL,
     "fraction of entries pushed in sparse mode"},
    {"push", "threshold_period", T_INT, OFF(threshold_period), 0, "32", 1, 1000000, NULL,
     "iterations between exact top-k threshold selections"},
    {"push", "repartition_period", T_INT, OFF(repartition_period), 0, "64", 1, 1000000, NULL,
     "iterations between sparse region re-balancing"},
    {"optimizer", "lr", T_DOUBLE, OFF(lr), 0, "0.01", 0, 1e6, NULL, "learning rate"},
    {"optimizer", "momentum", T_DOUBLE, OFF(momentum), 0, "0", 0, 1, NULL, "SGD momentum"},
    {"optimizer", "weight_decay", T_DOUBLE, OFF(weight_decay), 0, "0", 0, 1, NULL,
     "L2 weight decay"},
    {"optimizer", "aggregate", T_ENUM, OFF(aggregate), 0, "mean", 0, 0, "mean|sum",
     "mean: the update uses the sum of pushes / workers; sum: the plain sum"},
    {"sync", "mode", T_ENUM, OFF(sync_mode), 0, "bsp", 0, 0, "bsp|ssp|asp",
     "consistency model: bsp (every pull of iteration t waits for all pushes of t - 1), ssp "
     "(it waits for those of t - 1 - sync.staleness) or asp (answered at once; every push is "
     "applied as it arrives); docs/stragglers.md"},
    {"sync", "staleness", T_INT, OFF(staleness), 0, "3", 0, 1000, NULL,
     "ssp: how many iterations a worker may run ahead of the slowest (0 = bsp)"},
    {"sync", "backup", T_INT, OFF(backup), 0, "0", 0, 4095, NULL,
     "bsp: backup workers; each iteration's update takes the first workers - backup pushes "
     "(their mean) and drops the later ones"},
    {"sync", "batches", T_ENUM, OFF(batches), 0, "auto", 0, 0, "auto|on|off",
     "the batch service (a shared epoch): the scheduler hands out batches of sample indices, "
     "fast workers take more, and the run's length is its samples; auto: on under ssp, asp "
     "and backup workers, off under bsp (each worker its own equal shard)"},
    {"straggle", "ranks", T_STR, OFF(straggle_ranks), SZ(straggle_ranks), "", 0, 0, NULL,
     "persistent stragglers: comma list of worker ranks whose compute is straggle.slowdown "
     "times slower"},
    {"straggle", "slowdown", T_DOUBLE, OFF(slowdown), 0, "1.0", 1, 1000, NULL,
     "compute time multiplier of straggle.ranks (emulated op times are scaled, real compute "
     "sleeps slowdown - 1 times each op's measured time)"},
    {"straggle", "probability", T_DOUBLE, OFF(straggle_probability), 0, "0", 0, 1, NULL,
     "transient stragglers: each worker's each iteration is delayed with this probability"},
    {"straggle", "delay_ms", T_DOUBLE, OFF(straggle_delay_ms), 0, "0", 0, 3600000, NULL,
     "the length of a transient delay (compute time)"},
    {"straggle", "seed", T_U64, OFF(straggle_seed), 0, "1", 0, BIG, NULL,
     "seed of the transient delays (the same seed delays the same iterations)"},
    {"net", "bandwidth", T_RATE, OFF(bandwidth_bps), 0, "0", 0, 1e13, NULL,
     "emulated egress rate per process, tc style (1gbit); 0 = no emulation"},
    {"net", "latency_us", T_DOUBLE, OFF(latency_us), 0, "0", 0, 1e7, NULL,
     "emulated one-way latency per message (with net.bandwidth > 0; the planners use it too)"},
    {"net", "msg_us", T_DOUBLE, OFF(msg_us), 0, "0", 0, 1e7, NULL,
     "emulated per-message cost: each data message holds the egress link this long on top of "
     "its bytes (RPC and packet overhead; with net.bandwidth > 0)"},
    {"net", "io_thread", T_BOOL, OFF(io_thread), 0, "false", 0, 0, NULL,
     "a dedicated I/O thread per process (false: the thread that owns the transport does the I/O)"},
    {"net", "max_message_mb", T_INT, OFF(max_message_mb), 0, "256", 1, 4096, NULL,
     "the largest message frame (MiB) any socket accepts; a peer that announces or sends a "
     "larger one is cut off before the memory is taken (must hold a chunk: "
     "order.partition_bytes or segment_bytes)"},
    {"net", "recv_hwm", T_INT, OFF(recv_hwm), 0, "1000", 1, 10000000, NULL,
     "messages ZeroMQ queues per peer and socket on the way in; beyond them it stops reading "
     "the peer (TCP pushes back)"},
    {"net", "send_hwm", T_INT, OFF(send_hwm), 0, "65536", 1, 10000000, NULL,
     "messages queued per peer and socket on the way out; a message to a peer whose queue "
     "is full is dropped with an error line (a peer that stops reading)"},
    {"output", "dir", T_STR, OFF(out_dir), SZ(out_dir), "runs", 0, 0, NULL,
     "parent folder of run folders"},
    {"output", "run", T_STR, OFF(run_name), SZ(run_name), "", 0, 0, NULL,
     "run folder name (empty = time stamp)"},
    {"output", "trace", T_BOOL, OFF(trace), 0, "false", 0, 0, NULL,
     "write Chrome trace-event JSON per process"},
    {"output", "save_params", T_BOOL, OFF(save_params), 0, "false", 0, 0, NULL,
     "model jobs: worker 0 writes the final parameters to params.bin in the run folder"},
    {"output", "log_level", T_STR, OFF(log_level), SZ(log_level), "info", 0, 0, NULL,
     "debug | info | warn | error"},
    {"output", "progress_every", T_INT, OFF(progress_every), 0, "50", 0, 1000000, NULL,
     "iterations between progress lines (0 = none)"},
    {"output", "stats_every", T_INT, OFF(stats_every), 0, "0", 0, 100000, NULL,
     "iterations whose records a worker sends the scheduler in one STATS message (0 = auto: 1 "
     "up to 500 workers, then workers / 500 rounded up, so the scheduler's STATS messages stay "
     "near 500 a step at any size)"},
    {"fault", "timeout_ms", T_INT, OFF(timeout_ms), 0, "5000", 50, 3600000, NULL,
     "a peer silent this long is probed, and declared dead when it does not answer within 2 x "
     "heartbeat_ms: the floor of the adaptive timeout"},
    {"fault", "timeout_max_ms", T_INT, OFF(timeout_max_ms), 0, "0", 0, 3600000, NULL,
     "the ceiling of the adaptive timeout, which grows with the jitter of a peer's heartbeats "
     "(mean + 6 standard deviations of their inter-arrival times); a death is found at most "
     "this + 2 x heartbeat_ms after the last sign of life (0 = 4 x timeout_ms; = timeout_ms: "
     "a fixed timeout)"},
    {"fault", "heartbeat_ms", T_INT, OFF(heartbeat_ms), 0, "500", 10, 600000, NULL,
     "interval between heartbeats; above 1,000 members (workers and servers) it widens to "
     "heartbeat_ms x members / 1,000 rounded up, at most timeout_ms / 2"},
    {"fault", "startup_ms", T_INT, OFF(startup_ms), 0, "60000", 100, 3600000, NULL,
     "how long the scheduler waits for every node to register (and nodes for WELCOME)"},
    {"fault", "replicas", T_INT, OFF(replicas), 0, "1", 1, 3, NULL,
     "servers holding each key slice: a primary and replicas - 1 backups on the next servers in "
     "rank order; an update is answered only once every live replica holds it, and when a "
     "server dies the scheduler promotes a backup and the run goes on (1 = no copies: a dead "
     "server stops the run; at most cluster.servers; not with push.mode = sparse or "
     "intra.backend = nccl)"},
    {"fault", "checkpoint_every", T_INT, OFF(checkpoint_every), 0, "0", 0, 100000000, NULL,
     "worker 0 writes RUN/checkpoint.bin (the params.bin format) with the parameters after "
     "every N updates, and the servers their momentum (checkpoint-server-R.bin); "
     "fault.resume goes on from them, model.init starts a new run from the values (0 = none)"},
    {"fault", "resume", T_STR, OFF(resume), SZ(resume), "", 0, 0, NULL,
     "a run folder to go on from: its checkpoint.bin's values and the servers' momentum "
     "(checkpoint-server-R.bin), then the iterations after that checkpoint (model.iterations "
     "or epochs stay the total; same cluster, model, batch and seed)"},
    {"fault", "worker", T_ENUM, OFF(fault_worker), 0, "abort", 0, 0, "abort|restart|shrink",
     "what a dead worker does to the run: abort (every process exits, status 3), restart "
     "(scripts/ordo-launch starts it again; it rejoins at the current iteration with the "
     "servers' values and its own data shard) or shrink (the run goes on with the workers left; "
     "the mean is over the workers that pushed); docs/fault.md"},
    {"fault", "scheduler", T_ENUM, OFF(fault_scheduler), 0, "stop", 0, 0, "stop|restart",
     "what a dead scheduler does to the run: stop (every process exits, status 3) or restart "
     "(the servers and workers keep their state and training, and register again with a new "
     "scheduler at the same address, which scripts/ordo-launch starts; the run goes on where it "
     "was); docs/fault.md"},
    {"fault", "scheduler_wait_ms", T_INT, OFF(scheduler_wait_ms), 0, "60000", 100, 3600000, NULL,
     "fault.scheduler = restart: how long the servers and workers wait for a new scheduler "
     "after the old one fell silent before they exit (status 3)"},
    {"fault", "disk_full", T_ENUM, OFF(disk_full), 0, "retry", 0, 0, "retry|stop",
     "what a checkpoint that cannot be written (a full disk, an I/O error) does to the run: "
     "retry (the error is logged naming the file and errno, the previous checkpoint stays "
     "whole, the run goes on and writes the next one) or stop (the run stops with that error); "
     "docs/fault.md"},
    {"fault", "restarts", T_INT, OFF(restarts), 0, "3", 0, 1000, NULL,
     "fault.worker = restart: how many times one worker rank may be restarted before its death "
     "aborts the run"},
    {"fault", "max_workers", T_INT, OFF(max_workers), 0, "0", 0, 65536, NULL,
     "the most workers the run may have: scripts/ordo-launch --add-worker RUN starts one more "
     "mid-run (ranks cluster.workers .. max_workers - 1; it joins at an iteration boundary with "
     "the servers' values); 0 = cluster.workers (no growth); at least cluster.workers; "
     "docs/fault.md"},
    {"worker", "command", T_STR, OFF(worker_command), SZ(worker_command), "", 0, 0, NULL,
     "a program scripts/ordo-launch starts as each worker (through bash -c, in the "
     "repository's root) instead of ordo-worker, e.g. a PyTorch script using ordo.torch; it finds "
     "the cluster in ORDO_CONF and the ORDO_* variables (docs/running.md); with it, "
     "model.trainer defaults to declared"},
    {"security", "curve", T_BOOL, OFF(curve), 0, "false", 0, 0, NULL,
     "encrypt and authenticate every connection with ZeroMQ CURVE: the scheduler and servers "
     "accept only keys listed in security.keys (docs/security.md)"},
    {"security", "keys", T_STR, OFF(keys_dir), SZ(keys_dir), "", 0, 0, NULL,
     "the cluster's key folder written by ordo-keygen: server.key/.pub (scheduler and "
     "servers), clients/NAME.key/.pub (one pair per client; the .pub files are the keys "
     "allowed in)"},
    {"security", "client", T_STR, OFF(client_key), SZ(client_key), "worker", 0, 0, NULL,
     "the key pair a worker (or an ordo.Client) presents: security.keys/clients/NAME.key"},
};
const size_t ordo__conf_nkeys = sizeof ordo__conf_keys / sizeof ordo__conf_keys[0];

/* ---- value parsing ------------------------------------------------------------------ */

int ordo__conf_parse_bytes(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return ORDO_ERR_INVAL;
    while (isspace((unsigned char)*end)) end++;
    double mul = 1;
    if (*end) {
        static const struct { const char *suf; double mul; } sufs[] = {
            {"b", 1}, {"B", 1}, {"k", 1024}, {"K", 1024}, {"KiB", 1024}, {"KB", 1000},
            {"m", 1048576}, {"M", 1048576}, {"MiB", 1048576}, {"MB", 1e6},
            {"g", 1073741824.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9}};
        size_t i;
        for (i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
            if (strcmp(end, sufs[i].suf) == 0) break;
        if (i == sizeof sufs / sizeof sufs[0]) return ORDO_ERR_INVAL;
        mul = sufs[i].mul;
    }
    double b = v * mul;
    if (b > 9.0e18 || b != floor(b)) return ORDO_ERR_INVAL;
    *out = (int64_t)b;
    return 0;
}

int ordo__conf_parse_rate(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v)) return ORDO_ERR_INVAL;
    double mul;
    if (*end == '\0' || strcmp(end, "bit") == 0 || strcmp(end, "bps") == 0)
        mul = (*end == '\0' && v != 0) ? -1 : 1;
    else if (strcmp(end, "kbit") == 0) mul = 1e3;
    else if (strcmp(end, "mbit") == 0) mul = 1e6;
    else if (strcmp(end, "gbit") == 0) mul = 1e9;
    else if (strcmp(end, "tbit") == 0) mul = 1e12;
    else return ORDO_ERR_INVAL;
    if (mul < 0) return ORDO_ERR_INVAL; /* a bare non-zero number has no unit: ambiguous */
    *out = v * mul;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "1")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off") || !strcmp(s, "0")) {
        *out = false;
        return 0;
    }
    return ORDO_ERR_INVAL;
}

static int enum_index(const char *choices, const char *s)
{
    size_t len = strlen(s);
    int idx = 0;
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, s, n) == 0) return idx;
        idx++;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

/* set_value parses s for key k into conf; on failure writes the reason into why. */
static int set_value(ordo__conf_t *conf, const key_t_ *k, const char *s, char *why,
                     size_t wsz)
{
    char *field = (char *)conf + k->off;
    char *end;
    switch (k->type) {
    case T_INT: {
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || *end || errno) {
            snprintf(why, wsz, "'%s' is not an integer", s);
            return ORDO_ERR_INVAL;
        }
        if (v < k->min || v > k->max) {
            snprintf(why, wsz, "%ld is out of range [%.0f, %.0f]", v, k->min, k->max);
            return ORDO_ERR_RANGE;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case T_U64: {
        errno = 0;
        if (*s == '-') {
            snprintf(why, wsz, "'%s' must not be negative", s);
            return ORDO_ERR_INVAL;
        }
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || *end || errno) {
            snprintf(why, wsz, "'%s' is not a non-negative integer", s);
            return ORDO_ERR_INVAL;
        }
        *(uint64_t *)field = v;
        return 0;
    }
    case T_DOUBLE: {
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || *end || errno || !isfinite(v)) {
            snprintf(why, wsz, "'%s' is not a number", s);
            return ORDO_ERR_INVAL;
        }
        if (v < k->min || v > k->max) {
            snprintf(why, wsz, "%g is out of range [%g, %g]", v, k->min, k->max);
            return ORDO_ERR_RANGE;
        }
        *(double *)field = v;
        return 0;
    }
    case T_BOOL:
        if (parse_bool(s, (bool *)field) != 0) {
            snprintf(why, wsz, "'%s' is not a boolean (true/false)", s);
            return ORDO_ERR_INVAL;
        }
        return 0;
    case T_STR:
        if (strlen(s) >= k->size) {
            snprintf(why, wsz, "value is longer than %zu characters", k->size - 1);
            return ORDO_ERR_RANGE;
        }
        strcpy(field, s);
        return 0;
    case T_ENUM: {
        int idx = enum_index(k->choices, s);
        if (idx < 0) {
            snprintf(why, wsz, "'%s' is not one of %s", s, k->choices);
            return ORDO_ERR_INVAL;
        }
        *(int *)field = idx;
        return 0;
    }
    case T_BYTES: {
        int64_t v;
        if (k->choices && !strcmp(s, "auto")) { /* a size chosen by ordo__conf_resolve */
            *(int64_t *)field = ORDO_CONF_AUTO_BYTES;
            return 0;
        }
        if (ordo__conf_parse_bytes(s, &v) != 0) {
            snprintf(why, wsz, "'%s' is not a size in bytes (e.g. 4MiB)", s);
            return ORDO_ERR_INVAL;
        }
        if (v < k->min || v > k->max) {
            snprintf(why, wsz, "%lld bytes is out of range [%.0f, %.0f]", (long long)v, k->min,
                     k->max);
            return ORDO_ERR_RANGE;
        }
        *(int64_t *)field = v;
        return 0;
    }
    case T_RATE: {
        double v;
        if (ordo__conf_parse_rate(s, &v) != 0) {
            snprintf(why, wsz, "'%s' is not a rate (e.g. 100mbit, 1gbit, 0)", s);
            return ORDO_ERR_INVAL;
        }
        if (v > k->max) {
            snprintf(why, wsz, "rate %g bit/s is out of range", v);
            return ORDO_ERR_RANGE;
        }
        *(double *)field = v;
        return 0;
    }
    }
    return ORDO_ERR_INVAL;
}

/* derived fields and per-key checks that need more than a range */
static int check_key(ordo__conf_t *conf, const key_t_ *k, char *why, size_t wsz)
{
    if (k->off == OFF(policy)) {
        static const char *names[] = {"none", "fifo", "tio", "tao", "search"};
        for (int i = 0; i < 5; i++)
            if (strcmp(conf->policy, names[i]) == 0) {
                conf->policy_kind = i;
                return 0;
            }
        if (strcmp(conf->policy, "layer") == 0) {
            conf->policy_kind = ORDO_POLICY_LAYER;
            return 0;
        }
        if (strncmp(conf->policy, "file:", 5) == 0 && conf->policy[5]) {
            conf->policy_kind = ORDO_POLICY_FILE;
            return 0;
        }
        snprintf(why, wsz, "'%s' is not one of none|fifo|tio|tao|search|layer|file:PATH", conf->policy);
        return ORDO_ERR_INVAL;
    }
    if (k->off == OFF(trainer)) {
        const char *t = conf->trainer;
        if (strcmp(t, "synthetic") && strcmp(t, "profile") && strcmp(t, "mlp") && strcmp(t, "cnn") &&
            strcmp(t, "declared")) {
            snprintf(why, wsz, "'%s' is not one of synthetic|profile|mlp|cnn|declared", t);
            return ORDO_ERR_INVAL;
        }
    }
    if (k->off == OFF(merge)) {
        const char *m = conf->merge;
        int64_t n;
        if (strcmp(m, "optimal") && strcmp(m, "mgwfbp") && strcmp(m, "wfbp") && strcmp(m, "all") &&
            !(strncmp(m, "bytes:", 6) == 0 && ordo__conf_parse_bytes(m + 6, &n) == 0 && n > 0) &&
            !(strncmp(m, "file:", 5) == 0 && m[5])) {
            snprintf(why, wsz, "'%s' is not one of optimal|mgwfbp|wfbp|all|bytes:N|file:PATH", m);
            return ORDO_ERR_INVAL;
        }
    }
    if (k->off == OFF(log_level)) {
        const char *l = conf->log_level;
        if (strcmp(l, "debug") && strcmp(l, "info") && strcmp(l, "warn") && strcmp(l, "error")) {
            snprintf(why, wsz, "'%s' is not one of debug|info|warn|error", l);
            return ORDO_ERR_INVAL;
        }
    }
    if (k->off == OFF(scheduler) && strncmp(conf->scheduler, "tcp://", 6) != 0) {
        snprintf(why, wsz, "'%s' is not a tcp://host:port endpoint", conf->scheduler);
        return ORDO_ERR_INVAL;
    }
    return 0;
}

static const key_t_ *find_key(const char *section, const char *name)
{
    for (size_t i = 0; i < ordo__conf_nkeys; i++)
        if (strcmp(ordo__conf_keys[i].section, section) == 0 &&
            strcmp(ordo__conf_keys[i].name, name) == 0)
            return &ordo__conf_keys[i];
    return NULL;
}

static bool known_section(const char *section)
{
    for (size_t i = 0; i < ordo__conf_nkeys; i++)
        if (strcmp(ordo__conf_keys[i].section, section) == 0) return true;
    return false;
}

void ordo__conf_defaults(ordo__conf_t *conf)
{
    char why[ORDO_CONF_PATH + 256];
    memset(conf, 0, sizeof *conf);
    for (size_t i = 0; i < ordo__conf_nkeys; i++) {
        int rc = set_value(conf, &ordo__conf_keys[i], ordo__conf_keys[i].def, why, sizeof why);
        ORDO_ASSERT(rc == 0);
        rc = check_key(conf, &ordo__conf_keys[i], why, sizeof why);
        ORDO_ASSERT(rc == 0);
    }
}

/* ---- INI files ---------------------------------------------------------------------- */

typedef struct {
    ordo__conf_t *conf;
    const char *name;
    int line;
    int section_line; /* line of the latest [section] header */
    int rc;
    /* stream source: a FILE or a string cursor */
    FILE *fp;
    const char *cursor;
} parse_ctx_t;

/* inih's handler gets no line number; our reader counts the lines it hands out. */
static void note_line(parse_ctx_t *ctx, const char *str)
{
    ctx->line++;
    while (isspace((unsigned char)*str)) str++;
    if (*str == '[') ctx->section_line = ctx->line;
}

static char *reader(char *str, int num, void *stream)
{
    parse_ctx_t *ctx = stream;
    if (ctx->fp) {
        char *r = fgets(str, num, ctx->fp);
        if (r) note_line(ctx, r);
        return r;
    }
    if (!*ctx->cursor) return NULL;
    const char *nl = strchr(ctx->cursor, '\n');
    size_t n = nl ? (size_t)(nl - ctx->cursor + 1) : strlen(ctx->cursor);
    if (n > (size_t)num - 1) n = (size_t)num - 1;
    memcpy(str, ctx->cursor, n);
    str[n] = '\0';
    ctx->cursor += n;
    note_line(ctx, str);
    return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx_t *ctx = user;
    char why[ORDO_CONF_PATH + 256];
    if (ctx->rc) return 0;
    if (!name) return 1; /* a section header alone (inih >= 50 calls with NULL name) */
    if (!known_section(section)) {
        ctx->rc = ordo__error_set(ORDO_ERR_FORMAT, "%s:%d: unknown section [%s]", ctx->name,
                                 ctx->section_line, section);
        return 0;
    }
    const key_t_ *k = find_key(section, name);
    if (!k) {
        ctx->rc = ordo__error_set(ORDO_ERR_FORMAT, "%s:%d: unknown key '%s' in [%s]", ctx->name,
                                 ctx->line, name, section);
        return 0;
    }
    if (set_value(ctx->conf, k, value, why, sizeof why) != 0 ||
        check_key(ctx->conf, k, why, sizeof why) != 0) {
        ctx->rc = ordo__error_set(ORDO_ERR_FORMAT, "%s:%d: %s.%s: %s", ctx->name, ctx->line, section,
                                 name, why);
        return 0;
    }
    return 1;
}

static int parse(parse_ctx_t *ctx)
{
    int r = ini_parse_stream(reader, ctx, handler, ctx);
    if (ctx->rc) return ctx->rc;
    if (r > 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s:%d: syntax error (expected [section] or key = value)",
                              ctx->name, r);
    if (r < 0) return ordo__error_set(ORDO_ERR_IO, "%s: cannot read", ctx->name);
    return 0;
}

int ordo__conf_load_file(ordo__conf_t *conf, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return ordo__error_set(ORDO_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    parse_ctx_t ctx = {.conf = conf, .name = path, .fp = fp};
    int rc = parse(&ctx);
    fclose(fp);
    return rc;
}

int ordo__conf_load_string(ordo__conf_t *conf, const char *text, const char *name)
{
    parse_ctx_t ctx = {.conf = conf, .name = name, .cursor = text};
    return parse(&ctx);
}

/* ---- overrides ---------------------------------------------------------------------- */

int ordo__conf_set(ordo__conf_t *conf, const char *key, const char *value, const char *origin)
{
    const key_t_ *k = NULL;
    const char *dot = strchr(key, '.');
    if (dot) {
        char section[64];
        size_t n = (size_t)(dot - key);
        if (n >= sizeof section) n = sizeof section - 1;
        memcpy(section, key, n);
        section[n] = '\0';
        k = find_key(section, dot + 1);
    } else {
        int found = 0;
        for (size_t i = 0; i < ordo__conf_nkeys; i++)
            if (strcmp(ordo__conf_keys[i].name, key) == 0) {
                k = &ordo__conf_keys[i];
                found++;
            }
        if (found > 1)
            return ordo__error_set(ORDO_ERR_INVAL, "%s: key '%s' is ambiguous; write section.%s",
                                  origin, key, key);
    }
    if (!k) return ordo__error_set(ORDO_ERR_INVAL, "%s: unknown key '%s'", origin, key);
    char why[ORDO_CONF_PATH + 256];
    if (set_value(conf, k, value, why, sizeof why) != 0 || check_key(conf, k, why, sizeof why) != 0)
        return ordo__error_set(ORDO_ERR_INVAL, "%s: %s.%s: %s", origin, k->section, k->name, why);
    return 0;
}

int ordo__conf_apply_env(ordo__conf_t *conf)
{
    for (size_t i = 0; i < ordo__conf_nkeys; i++) {
        const key_t_ *k = &ordo__conf_keys[i];
        char var[128];
        int n = snprintf(var, sizeof var, "ORDO_%s_%s", k->section, k->name);
        for (int j = 0; j < n; j++) var[j] = (char)toupper((unsigned char)var[j]);
        const char *v = getenv(var);
        if (!v) continue;
        char key[128];
        snprintf(key, sizeof key, "%s.%s", k->section, k->name);
        int rc = ordo__conf_set(conf, key, v, var);
        if (rc) return rc;
    }
    return 0;
}

/* ---- command line ------------------------------------------------------------------- */

int ordo__conf_cli(ordo__conf_t *conf, int argc, char **argv, const char *prog, const char *usage)
{
    const char *file = NULL;
    bool print = false;
    ordo__conf_defaults(conf);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: %s %s\n\n"
                   "  -c FILE              conf file (INI); see docs/conf.md\n"
                   "  --section.key=VALUE  override one conf key (also ORDO_SECTION_KEY=VALUE)\n"
                   "  --print-conf         print the effective conf and exit\n"
                   "  --help, --version\n",
                   prog, usage);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("%s %s\n", prog, ORDO_VERSION);
            return 1;
        }
        if (!strcmp(a, "--conf-reference")) {
            ordo__conf_reference(stdout);
            return 1;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: -c needs a file\n", prog);
                return ORDO_ERR_INVAL;
            }
            file = argv[++i];
        } else if (!strcmp(argv[i], "--print-conf")) {
            print = true;
        } else if (strncmp(argv[i], "--", 2) != 0 || !strchr(argv[i], '=')) {
            fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[i]);
            return ORDO_ERR_INVAL;
        }
    }
    int rc;
    if (file && (rc = ordo__conf_load_file(conf, file)) != 0) goto fail;
    if ((rc = ordo__conf_apply_env(conf)) != 0) goto fail;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c")) {
            i++;
            continue;
        }
        if (!strcmp(argv[i], "--print-conf")) continue;
        char key[256];
        const char *eq = strchr(argv[i], '=');
        size_t n = (size_t)(eq - argv[i] - 2);
        if (n >= sizeof key) n = sizeof key - 1;
        memcpy(key, argv[i] + 2, n);
        key[n] = '\0';
        if ((rc = ordo__conf_set(conf, key, eq + 1, argv[i])) != 0) goto fail;
    }
    ordo__conf_resolve(conf);
    if ((rc = ordo__conf_validate(conf)) != 0) goto fail;
    if (print) {
        ordo__conf_print(conf, stdout, true);
        return 1;
    }
    return 0;
fail:
    fprintf(stderr, "%s: %s\n", prog, ordo__error_text(rc));
    return rc;
}
