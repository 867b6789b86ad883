/* conf: the run configuration. One table declares every key (section, name, type, default,
 * bounds, help); it drives the INI file parser, --section.key=value command-line overrides,
 * ORDO_SECTION_KEY environment overrides and --print-conf. Errors name file:line and why. */
#ifndef ORDO_CONF_H
#define ORDO_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define ORDO_CONF_STR 256
#define ORDO_CONF_PATH 1024

/* LAYER: ByteScheduler's rule, priority = the parameter's listed (forward) place, no plan */
typedef enum { ORDO_POLICY_NONE, ORDO_POLICY_FIFO, ORDO_POLICY_TIO, ORDO_POLICY_TAO,
               ORDO_POLICY_SEARCH, ORDO_POLICY_FILE, ORDO_POLICY_LAYER } ordo__policy_t;
/* AUTO is resolved by ordo__conf_resolve: greedy for a planned policy in training, else strict */
typedef enum { ORDO_ENFORCE_STRICT, ORDO_ENFORCE_GREEDY, ORDO_ENFORCE_AUTO } ordo__enforce_kind_t;
typedef enum { ORDO_SHARE_FAIR, ORDO_SHARE_SERIAL } ordo__share_t;
/* AUTO is resolved by ordo__conf_resolve: early for a planned policy in training, else start */
typedef enum { ORDO_PULL_START, ORDO_PULL_EARLY, ORDO_PULL_AUTO } ordo__pull_t;
/* a bytes key written "auto" holds this until ordo__conf_resolve */
#define ORDO_CONF_AUTO_BYTES (-1)
/* [output] stats_every = 0 (auto): one STATS message a worker covers ceil(workers / this)
 * iterations (ordo__conf_stats_every) */
#define ORDO_STATS_AUTO_WORKERS 500
/* above this many members (workers and servers) a member's heartbeats widen with the count
 * (ordo__conf_heartbeat_ms) */
#define ORDO_HEARTBEAT_AUTO_MEMBERS 1000
typedef enum { ORDO_PUSH_DENSE, ORDO_PUSH_MERGED, ORDO_PUSH_SPARSE } ordo__push_mode_t;
typedef enum { ORDO_COMPUTE_EMULATE, ORDO_COMPUTE_CPU, ORDO_COMPUTE_CUDA } ordo__compute_t;
typedef enum { ORDO_AGG_MEAN, ORDO_AGG_SUM } ordo__aggregate_t;
typedef enum {
    ORDO_INTRA_NONE,
    ORDO_INTRA_SHM,
    ORDO_INTRA_NCCL,
    ORDO_INTRA_AUTO /* each worker: nccl for CUDA tensors where it loads, else shm */
} ordo__intra_backend_t;
/* [intra] device: where a worker's tensors live (AUTO: the program says; libordo: cpu) */
typedef enum { ORDO_DEVICE_AUTO, ORDO_DEVICE_CPU, ORDO_DEVICE_CUDA } ordo__intra_device_t;
/* [intra] values: where a bound model's value buffers are under the shm backend */
typedef enum { ORDO_INTRA_VALUES_SHARED, ORDO_INTRA_VALUES_COPY } ordo__intra_values_t;
typedef enum { ORDO_SYNC_BSP, ORDO_SYNC_SSP, ORDO_SYNC_ASP } ordo__sync_t;
typedef enum { ORDO_BATCHES_AUTO, ORDO_BATCHES_ON, ORDO_BATCHES_OFF } ordo__batches_mode_t;
/* [fault] worker: what a worker's death does to the run */
typedef enum { ORDO_FAULT_ABORT, ORDO_FAULT_RESTART, ORDO_FAULT_SHRINK } ordo__fault_worker_t;
/* [fault] scheduler: what a dead scheduler does to the run */
typedef enum { ORDO_SCHED_STOP, ORDO_SCHED_RESTART } ordo__fault_sched_t;
/* [fault] disk_full: what a checkpoint that cannot be written does to the run */
typedef enum { ORDO_DISK_FULL_RETRY, ORDO_DISK_FULL_STOP } ordo__disk_full_t;
#define ORDO_STRAGGLE_MAX_RANKS 64

typedef struct ordo__conf {
    /* [cluster] */
    char scheduler[ORDO_CONF_STR]; /* tcp://host:port of the scheduler */
    int servers;
    int workers;
    char token[ORDO_CONF_STR];
    char host[ORDO_CONF_STR]; /* address this node binds and advertises */
    int port;                 /* server/scheduler bind port; 0 = any free port */
    int rank;                 /* requested rank, -1 = assigned by the scheduler */
    int local_size;           /* workers per host group (0 = launcher's / 1) */
    /* [model] */
    char model_file[ORDO_CONF_PATH]; /* ordo-model/1 profile */
    char trainer[ORDO_CONF_STR];     /* synthetic | profile | mlp | cnn | declared */
    char tensors[ORDO_CONF_PATH];    /* synthetic job: comma list of tensor sizes */
    int compute;                     /* ordo__compute_t */
    double compute_scale;
    int iterations;
    int epochs;
    int batch;
    int warmup;
    uint64_t seed;
    bool forward_only;
    char data_dir[ORDO_CONF_PATH];
    char init_params[ORDO_CONF_PATH]; /* params.bin to start from ("" = the trainer's init) */
    double target_accuracy; /* summary.json: time until worker 0's test accuracy reaches it */
    int eval_every;         /* worker 0 evaluates the test set every N iterations (0 = never) */
    int eval_samples;       /* those evaluations use the first N test samples (0 = all) */
    /* [order] */
    char policy[ORDO_CONF_PATH]; /* none|fifo|tio|tao|search|file:PATH */
    int policy_kind;             /* ordo__policy_t, derived from policy */
    int enforce;                 /* ordo__enforce_kind_t */
    int share;                   /* ordo__share_t: a server's link among the workers */
    int pull;                    /* ordo__pull_t: when workers ask for the next values */
    int64_t partition_bytes;
    int64_t segment_bytes; /* wire pieces of a chunk (0 = whole chunks) */
    int64_t credit_bytes;  /* a worker's pushes on the egress link ahead of the queue */
    int search_budget_ms;
    double plan_bandwidth_bps; /* the link rate the planners assume (0: [net] bandwidth) */
    char oracle[ORDO_CONF_PATH];
    /* [intra] */
    int intra_backend; /* ordo__intra_backend_t */
    int intra_device;  /* ordo__intra_device_t: for intra_backend AUTO */
    bool intra_overlap; /* all-gathers overlap the next forward (DeAR) */
    int intra_values;   /* ordo__intra_values_t */
    /* [push] */
    int push_mode; /* ordo__push_mode_t */
    char merge[ORDO_CONF_STR];
    char compression[ORDO_CONF_STR]; /* the wire codec of pushes and pulls (common/codec.h) */
    double merge_a_us; /* merge planner's cost model a + b * bytes */
    double merge_b_ns; /* 0 = from [net] bandwidth */
    double merge_c_ns; /* receivers' per-byte work, a second stage after each message */
    double merge_margin; /* optimal's tie rule: least time at (1 + margin) x the costs */
    bool calibrate;      /* the workers measure a, b, c at start-up (merged mode) */
    int calibrate_reps;  /* repeats per size of that measurement */
    double density;
    int threshold_period;
    int repartition_period;
    /* [optimizer] */
    double lr;
    double momentum;
    double weight_decay;
    int aggregate; /* ordo__aggregate_t */
    /* [sync] */
    int sync_mode; /* ordo__sync_t */
    int staleness; /* ssp: how many iterations a worker may run ahead of the slowest */
    int backup;    /* bsp: the last `backup` pushes of each iteration are dropped */
    int batches;   /* ordo__batches_mode_t: [sync] batches, the batch service */
    /* [straggle] */
    char straggle_ranks[ORDO_CONF_STR]; /* comma list of persistent stragglers */
    double slowdown;                    /* their compute time multiplier */
    double straggle_probability;        /* per worker and iteration: a transient delay */
    double straggle_delay_ms;
    uint64_t straggle_seed;
    /* [net] */
    double bandwidth_bps; /* 0 = no link emulation */
    double latency_us;
    double msg_us; /* emulated per-message link occupancy */
    bool io_thread;
    /* [output] */
    char out_dir[ORDO_CONF_PATH];
    char run_name[ORDO_CONF_STR];
    bool trace;
    bool save_params; /* worker 0 writes the final parameters to RUN/params.bin */
    char log_level[16];
    int progress_every;
    int stats_every; /* 0: auto; ordo__conf_stats_every */
    /* [fault] */
    int timeout_ms;     /* the adaptive timeout's floor */
    int timeout_max_ms; /* its ceiling (0: 4 x timeout_ms); ordo__conf_timeout_max_ms */
    int heartbeat_ms;
    int startup_ms;
    int replicas; /* servers holding each key slice: a primary and replicas - 1 backups */
    int checkpoint_every; /* iterations between checkpoints of worker 0 (0 = none) */
    char resume[ORDO_CONF_PATH]; /* a run folder whose checkpoint the run goes on from */
    int fault_worker;            /* ordo__fault_worker_t */
    int restarts;                /* restart: how many times a worker rank may be restarted */
    int max_workers;             /* growth: the most workers (0: cluster.workers) */
    int fault_scheduler;         /* ordo__fault_sched_t */
    int scheduler_wait_ms;       /* restart: how long members wait for a new scheduler */
    int disk_full;               /* ordo__disk_full_t */
    /* [worker] */
    char worker_command[ORDO_CONF_PATH]; /* what ordo-launch starts as each worker ("": none) */
    /* [net] limits on what a peer may send */
    int max_message_mb; /* the largest frame a socket accepts; a larger one cuts the peer off */
    int recv_hwm;       /* messages queued per peer and socket, inbound */
    int send_hwm;       /* and outbound */
    /* [security] */
    bool curve;                   /* every socket encrypts and authenticates (ZeroMQ CURVE) */
    char keys_dir[ORDO_CONF_PATH]; /* the cluster's key folder (ordo-keygen) */
    char client_key[ORDO_CONF_STR]; /* a worker's key pair: keys_dir/clients/NAME.key */
} ordo__conf_t;

/* ordo__conf_defaults fills conf with every key's documented default. */
void ordo__conf_defaults(ordo__conf_t *conf);

/* ordo__conf_load_file reads an INI file over conf's current values; on a bad section, key
 * or value it returns ORDO_ERR_FORMAT with "file:line: reason" in ordo__error_detail(). */
int ordo__conf_load_file(ordo__conf_t *conf, const char *path);

/* ordo__conf_load_string parses INI text (name is used in messages, e.g. "<string>"). */
int ordo__conf_load_string(ordo__conf_t *conf, const char *text, const char *name);

/* ordo__conf_set sets one key "section.key" (or a key name unique across sections) from a
 * string; origin names where it came from in error messages ("--flag", "ORDO_X"). */
int ordo__conf_set(ordo__conf_t *conf, const char *key, const char *value, const char *origin);

/* ordo__conf_apply_env applies every ORDO_SECTION_KEY variable that names a known key. */
int ordo__conf_apply_env(ordo__conf_t *conf);

/* ordo__conf_resolve replaces the "auto" values of order.enforce and order.pull by what they
 * stand for (ordo__conf_enforce_mode, ordo__conf_pull_mode). order.segment_bytes and
 * credit_bytes stay auto: the scheduler tunes them (ordo__conf_step_tuned). Idempotent;
 * ordo__conf_cli calls it. */
void ordo__conf_resolve(ordo__conf_t *conf);

/* ordo__conf_planned tells whether order.policy computes or reads a priority order (tio,
 * tao, search, file:PATH), as opposed to none and fifo. */
bool ordo__conf_planned(const ordo__conf_t *conf);

/* ordo__conf_enforce_mode returns order.enforce with auto resolved: greedy for a planned
 * policy in training (the order that pays while gradients arrive in backward order),
 * strict otherwise (forward-only runs: TicTac's set-up). */
int ordo__conf_enforce_mode(const ordo__conf_t *conf);

/* ordo__conf_pull_mode returns order.pull with auto resolved: early for a planned policy in
 * training without intra groups (which need start), start otherwise. */
int ordo__conf_pull_mode(const ordo__conf_t *conf);

/* ordo__conf_credit_bytes returns order.credit_bytes with auto resolved when nothing was tuned:
 * 1 ms of the planners' link rate (order.plan_bandwidth, net.bandwidth, else 10gbit), at least
 * 64 KiB. */
int64_t ordo__conf_credit_bytes(const ordo__conf_t *conf);

/* ordo__conf_segment_bytes returns order.segment_bytes with auto resolved when nothing was
 * tuned: 1 MiB. */
int64_t ordo__conf_segment_bytes(const ordo__conf_t *conf);

/* ordo__conf_step_tuned tells whether the scheduler chooses the slice size and the credit from
 * the step model: either is auto, the policy is planned, the run trains with dense pushes. */
bool ordo__conf_step_tuned(const ordo__conf_t *conf);

/* ordo__conf_validate checks cross-key rules (e.g. workers >= 1, density in (0,1]). */
int ordo__conf_validate(const ordo__conf_t *conf);

/* ordo__conf_batch_service reports whether the run hands out batches from the scheduler
 * ([sync] batches; auto: under ssp, asp and backup workers). */
bool ordo__conf_batch_service(const ordo__conf_t *conf);

/* ordo__conf_is_straggler tells whether rank is listed in [straggle] ranks (a persistent
 * straggler, whose compute runs [straggle] slowdown times slower). */
bool ordo__conf_is_straggler(const ordo__conf_t *conf, int rank);

/* ordo__conf_max_workers is the most workers the run may have: [fault] max_workers, or
 * cluster.workers when it is 0 (a run that cannot grow). */
int ordo__conf_max_workers(const ordo__conf_t *conf);

/* ordo__conf_heartbeat_ms is the interval at which a member heartbeats the scheduler:
 * [fault] heartbeat_ms up to 1,000 members (the workers the run may have and the servers),
 * above that heartbeat_ms x ceil(members / 1,000), at most timeout_ms / 2 (docs/planning.md,
 * "The scheduler at scale"). */
int ordo__conf_heartbeat_ms(const ordo__conf_t *conf);

/* ordo__conf_timeout_max_ms is the ceiling of the adaptive heartbeat timeout: [fault]
 * timeout_max_ms, or 4 x timeout_ms when it is 0, never below timeout_ms. */
int ordo__conf_timeout_max_ms(const ordo__conf_t *conf);

/* ordo__conf_stats_every is how many iterations' records a worker sends in one STATS
 * message: [output] stats_every, or when it is 0, 1 up to 500 workers (cluster.workers) and
 * workers / 500 rounded up above (docs/planning.md, "The scheduler at scale"). */
int ordo__conf_stats_every(const ordo__conf_t *conf);

/* ordo__conf_straggle_delay_ms is the transient delay of rank in iteration iter: [straggle]
 * delay_ms with [straggle] probability, drawn from a hash of (seed, rank, iter) so every run
 * with the same seed delays the same iterations; 0 otherwise. */
double ordo__conf_straggle_delay_ms(const ordo__conf_t *conf, int rank, int64_t iter);

/* ordo__conf_print writes the effective conf as INI (with each key's help as a comment when
 * with_help is set). */
void ordo__conf_print(const ordo__conf_t *conf, FILE *out, bool with_help);

/* ordo__conf_reference writes the key table as Markdown (docs/conf.md is made from it). */
void ordo__conf_reference(FILE *out);

/* ordo__conf_to_json returns the effective conf as a JSON object text; caller frees. */
char *ordo__conf_to_json(const ordo__conf_t *conf);

/* ordo__conf_parse_bytes parses "4MiB", "64k", "1000" into bytes. */
int ordo__conf_parse_bytes(const char *s, int64_t *out);

/* ordo__conf_parse_rate parses a tc-style rate ("100mbit", "1gbit", "10gbit", "0") into
 * bits per second. */
int ordo__conf_parse_rate(const char *s, double *out);

/* ordo__conf_cli parses argv for a daemon: -c FILE, --section.key=value, --print-conf,
 * --help, --version. Order: defaults, file, environment, flags. Returns 0 to run, 1 when
 * it printed help/version/conf and the program should exit 0, or a negative code after
 * printing one clear line to stderr (exit 2). */
int ordo__conf_cli(ordo__conf_t *conf, int argc, char **argv, const char *prog,
                  const char *usage);

#endif
