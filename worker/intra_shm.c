/* intra_shm: the shared-memory backend of worker/intra.h. One POSIX shared-memory segment per
 * group, named after the run and the group: a header (a process-shared robust mutex and
 * condition variable, a change counter, every member's pid and heartbeat), per slot and member
 * the iteration last put, per slot the iteration last published, then one area of the model's
 * floats per member (its contributions) and one for the published values. Local rank 0 creates
 * it and unlinks its name as soon as every member has mapped it, so nothing is left in
 * /dev/shm whichever process dies later. Data is written before the iteration that announces
 * it (release/acquire atomics), so readers need no lock; the lock only guards the condition
 * variable, the join count and the barrier. A member is dead when its pid is gone or its
 * heartbeat (renewed on every wait) is older than the timeout. */
#include "worker/intra.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x4f52444f494e5452ull /* "ORDOINTR" */
#define ALIGN 64
#define TICK_MS 50 /* longest sleep between two heartbeats */

typedef struct {
    uint64_t magic; /* written last by the creator */
    int32_t local_size, n_slots;
    int64_t numel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;       /* changes so far (atomic) */
    int32_t attached;   /* members that mapped the segment (under mu) */
    int32_t bar_count;  /* members inside the current barrier (under mu) */
    int64_t bar_gen;    /* barriers completed (under mu) */
    int64_t beat_ns[ORDO_INTRA_MAX_LOCAL]; /* atomic */
    int32_t pid[ORDO_INTRA_MAX_LOCAL];
    int32_t gone[ORDO_INTRA_MAX_LOCAL]; /* left cleanly (atomic) */
} hdr_t;

typedef struct {
    ordo_intra_t base;
    char name[128];
    int lr, L, n_slots, timeout_ms, group;
    int wrank[ORDO_INTRA_MAX_LOCAL];
    int64_t *slot_off;
    size_t size;
    void *map;
    hdr_t *h;
    int64_t *put_iter; /* [n_slots][L] */
    int64_t *pub_iter; /* [n_slots] */
    float *area;       /* [L][numel] */
    float *vals;       /* [numel] */
    int64_t numel;
    bool named;        /* this process still has to unlink the name */
} shm_t;

static size_t up(size_t x)
{
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

static size_t layout(shm_t *s, size_t *o_put, size_t *o_pub, size_t *o_area, size_t *o_vals)
{
    size_t o = up(sizeof(hdr_t));
    *o_put = o;
    o = up(o + sizeof(int64_t) * (size_t)s->n_slots * (size_t)s->L);
    *o_pub = o;
    o = up(o + sizeof(int64_t) * (size_t)s->n_slots);
    *o_area = o;
    o = up(o + sizeof(float) * (size_t)s->numel * (size_t)s->L);
    *o_vals = o;
    return up(o + sizeof(float) * (size_t)s->numel);
}

/* lock mu; a member that died holding it leaves it inconsistent, which we repair (the group
 * is failing anyway: the next check names the dead member) */
static void lock(hdr_t *h)
{
    if (pthread_mutex_lock(&h->mu) == EOWNERDEAD) pthread_mutex_consistent(&h->mu);
}

static void timed_wait(hdr_t *h, int64_t until_ns)
{
    struct timespec ts = {.tv_sec = until_ns / 1000000000, .tv_nsec = until_ns % 1000000000};
    if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == EOWNERDEAD)
        pthread_mutex_consistent(&h->mu);
}

static void beat(shm_t *s)
{
    __atomic_store_n(&s->h->beat_ns[s->lr], ordo_clock_ns(), __ATOMIC_RELEASE);
}

/* ORDO_EPEERDEAD naming the first member that died or went silent, else 0 */
static int check_members(shm_t *s)
{
    int64_t now = ordo_clock_ns();
    for (int m = 0; m < s->L; m++) {
        if (m == s->lr || __atomic_load_n(&s->h->gone[m], __ATOMIC_ACQUIRE)) continue;
        int pid = s->h->pid[m];
        int64_t b = __atomic_load_n(&s->h->beat_ns[m], __ATOMIC_ACQUIRE);
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
            return ordo_error_set(ORDO_EPEERDEAD,
                                  "intra group %d: member %d (worker %d, pid %d) died", s->group,
                                  m, s->wrank[m], pid);
        if (b > 0 && now - b > (int64_t)s->timeout_ms * 1000000)
            return ordo_error_set(ORDO_EPEERDEAD,
                                  "intra group %d: member %d (worker %d, pid %d) has been silent "
                                  "for %lld ms",
                                  s->group, m, s->wrank[m], pid, (long long)((now - b) / 1000000));
    }
    return 0;
}

static void bump(shm_t *s)
{
    __atomic_add_fetch(&s->h->gen, 1, __ATOMIC_ACQ_REL);
    lock(s->h);
    pthread_cond_broadcast(&s->h->cv);
    pthread_mutex_unlock(&s->h->mu);
}

static void shm_destroy(ordo_intra_t *it)
{
    shm_t *s = (shm_t *)it;
    if (s->map) {
        __atomic_store_n(&s->h->gone[s->lr], 1, __ATOMIC_RELEASE);
        bump(s);
        munmap(s->map, s->size);
    }
    if (s->named) shm_unlink(s->name);
    free(s->slot_off);
    free(s);
}

static int init_header(shm_t *s)
{
    hdr_t *h = s->h;
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&h->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!rc) rc = pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc) return ordo_error_set(ORDO_EIO, "intra segment %s: process-shared lock: %s", s->name,
                                  strerror(rc));
    h->local_size = s->L;
    h->n_slots = s->n_slots;
    h->numel = s->numel;
    for (int64_t i = 0; i < (int64_t)s->n_slots * s->L; i++) s->put_iter[i] = -1;
    for (int i = 0; i < s->n_slots; i++) s->pub_iter[i] = -1;
    __atomic_store_n(&h->magic, MAGIC, __ATOMIC_RELEASE);
    return 0;
}

/* open (rank 0: create) and map the segment; members wait for rank 0 up to the timeout */
static int open_segment(shm_t *s, int64_t deadline)
{
    size_t o_put, o_pub, o_area, o_vals;
    s->size = layout(s, &o_put, &o_pub, &o_area, &o_vals);
    int fd = -1;
    for (;;) {
        if (s->lr == 0)
            fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        else
            fd = shm_open(s->name, O_RDWR, 0600);
        if (fd >= 0) {
            if (s->lr == 0) {
                s->named = true;
                if (ftruncate(fd, (off_t)s->size) != 0) {
                    close(fd);
                    return ordo_error_set(ORDO_EIO, "intra segment %s: %zu bytes: %s", s->name,
                                          s->size, strerror(errno));
                }
                break;
            }
            struct stat st;
            if (fstat(fd, &st) == 0 && (size_t)st.st_size == s->size) break;
            close(fd);
        } else if (s->lr == 0 || errno != ENOENT) {
            return ordo_error_set(ORDO_EIO, "intra segment %s: %s", s->name, strerror(errno));
        }
        if (ordo_clock_ns() > deadline)
            return ordo_error_set(ORDO_ETIMEDOUT, "intra group %d: member 0 (worker %d) made no "
                                  "segment %s within %d ms", s->group, s->wrank[0], s->name,
                                  s->timeout_ms);
        usleep(1000);
    }
    s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return ordo_error_set(ORDO_EIO, "intra segment %s: mmap %zu bytes: %s", s->name, s->size,
                              strerror(errno));
    }
    char *b = s->map;
    s->h = (hdr_t *)b;
    s->put_iter = (int64_t *)(b + o_put);
    s->pub_iter = (int64_t *)(b + o_pub);
    s->area = (float *)(b + o_area);
    s->vals = (float *)(b + o_vals);
    if (s->lr == 0) return init_header(s);
    while (__atomic_load_n(&s->h->magic, __ATOMIC_ACQUIRE) != MAGIC) {
        if (ordo_clock_ns() > deadline)
            return ordo_error_set(ORDO_ETIMEDOUT, "intra segment %s never got ready", s->name);
        usleep(1000);
    }
    if (s->h->local_size != s->L || s->h->n_slots != s->n_slots || s->h->numel != s->numel)
        return ordo_error_set(ORDO_EPROTO, "intra segment %s holds %d members x %lld floats, "
                              "this member expects %d x %lld", s->name, s->h->local_size,
                              (long long)s->h->numel, s->L, (long long)s->numel);
    return 0;
}

static int shm_create(const ordo_intra_opts_t *o, ordo_intra_t **out)
{
    if (o->local_size < 1 || o->local_size > ORDO_INTRA_MAX_LOCAL || o->local_rank < 0 ||
        o->local_rank >= o->local_size || o->n_slots < 1 || !o->run)
        return ordo_error_set(ORDO_EINVAL, "intra: member %d of %d (at most %d), %d slots",
                              o->local_rank, o->local_size, ORDO_INTRA_MAX_LOCAL, o->n_slots);
    shm_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ENOMEM;
    s->lr = o->local_rank;
    s->L = o->local_size;
    s->n_slots = o->n_slots;
    s->group = o->group;
    s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
    for (int m = 0; m < s->L; m++) s->wrank[m] = o->worker_rank ? o->worker_rank[m] : m;
    s->numel = o->slot_off[o->n_slots];
    snprintf(s->name, sizeof s->name, "/ordo-%s-g%d", o->run, o->group);
    int rc = ORDO_ENOMEM;
    s->slot_off = malloc(sizeof *s->slot_off * (size_t)(o->n_slots + 1));
    if (!s->slot_off) goto fail;
    memcpy(s->slot_off, o->slot_off, sizeof *s->slot_off * (size_t)(o->n_slots + 1));
    int64_t deadline = ordo_clock_ns() + (int64_t)s->timeout_ms * 1000000;
    if ((rc = open_segment(s, deadline)) != 0) goto fail;
    hdr_t *h = s->h;
    lock(h);
    h->pid[s->lr] = (int32_t)getpid();
    beat(s);
    h->attached++;
    pthread_cond_broadcast(&h->cv);
    /* every member mapped it: the name can go (rank 0), nothing stays in /dev/shm */
    while (h->attached < s->L && ordo_clock_ns() < deadline)
        timed_wait(h, ordo_clock_ns() + TICK_MS * 1000000ll);
    int attached = h->attached;
    pthread_mutex_unlock(&h->mu);
    if (s->named) {
        shm_unlink(s->name);
        s->named = false;
    }
    if (attached < s->L) {
        rc = ordo_error_set(ORDO_ETIMEDOUT, "intra group %d: %d of %d members joined segment %s "
                            "within %d ms", s->group, attached, s->L, s->name, s->timeout_ms);
        goto fail;
    }
    s->base.ops = &ordo__intra_shm_ops;
    *out = &s->base;
    return 0;
fail:
    shm_destroy(&s->base);
    return rc;
}

static int shm_put(ordo_intra_t *it, int slot, const float *src, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    memcpy(s->area + (size_t)s->lr * (size_t)s->numel + off, src, sizeof(float) * (size_t)n);
    __atomic_store_n(&s->put_iter[(size_t)slot * (size_t)s->L + (size_t)s->lr], iter,
                     __ATOMIC_RELEASE);
    bump(s);
    return 0;
}

static bool shm_reduced(ordo_intra_t *it, int slot, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    for (int m = 0; m < s->L; m++)
        if (__atomic_load_n(&s->put_iter[(size_t)slot * (size_t)s->L + (size_t)m],
                            __ATOMIC_ACQUIRE) != iter)
            return false;
    return true;
}

/* members in rank order, so every run sums the same way */
static void shm_sum(ordo_intra_t *it, int slot, float *dst)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    memcpy(dst, s->area + off, sizeof(float) * (size_t)n);
    for (int m = 1; m < s->L; m++)
        ordo_intra_sum(dst, s->area + (size_t)m * (size_t)s->numel + off, n);
}

static int shm_publish(ordo_intra_t *it, int slot, const float *src, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    memcpy(s->vals + off, src, sizeof(float) * (size_t)n);
    __atomic_store_n(&s->pub_iter[slot], iter, __ATOMIC_RELEASE);
    bump(s);
    return 0;
}

static bool shm_published(ordo_intra_t *it, int slot, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    return __atomic_load_n(&s->pub_iter[slot], __ATOMIC_ACQUIRE) == iter;
}

static void shm_fetch(ordo_intra_t *it, int slot, float *dst)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    memcpy(dst, s->vals + off, sizeof(float) * (size_t)n);
}

static uint64_t shm_generation(ordo_intra_t *it)
{
    return __atomic_load_n(&((shm_t *)it)->h->gen, __ATOMIC_ACQUIRE);
}

static int shm_wait(ordo_intra_t *it, uint64_t seen, int timeout_ms)
{
    shm_t *s = (shm_t *)it;
    hdr_t *h = s->h;
    int64_t until = ordo_clock_ns() + (int64_t)timeout_ms * 1000000;
    beat(s);
    lock(h);
    while (__atomic_load_n(&h->gen, __ATOMIC_ACQUIRE) == seen) {
        int64_t now = ordo_clock_ns(), next = now + TICK_MS * 1000000ll;
        if (now >= until) break;
        timed_wait(h, next < until ? next : until);
        beat(s);
        int rc = check_members(s);
        if (rc) {
            pthread_mutex_unlock(&h->mu);
            return rc;
        }
    }
    pthread_mutex_unlock(&h->mu);
    beat(s);
    return check_members(s);
}

static void shm_kick(ordo_intra_t *it)
{
    bump((shm_t *)it);
}

static int shm_barrier(ordo_intra_t *it)
{
    shm_t *s = (shm_t *)it;
    hdr_t *h = s->h;
    int64_t until = ordo_clock_ns() + (int64_t)s->timeout_ms * 1000000;
    int rc = 0;
    lock(h);
    int64_t g = h->bar_gen;
    if (++h->bar_count == s->L) {
        h->bar_count = 0;
        h->bar_gen++;
        pthread_cond_broadcast(&h->cv);
    }
    while (h->bar_gen == g && !rc) {
        if (ordo_clock_ns() >= until) {
            rc = ordo_error_set(ORDO_ETIMEDOUT, "intra group %d: barrier not reached by every "
                                "member within %d ms", s->group, s->timeout_ms);
            break;
        }
        timed_wait(h, ordo_clock_ns() + TICK_MS * 1000000ll);
        beat(s);
        rc = check_members(s);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

const ordo_intra_ops_t ordo__intra_shm_ops = {
    .name = "shm",
    .create = shm_create,
    .destroy = shm_destroy,
    .put = shm_put,
    .reduced = shm_reduced,
    .sum = shm_sum,
    .publish = shm_publish,
    .published = shm_published,
    .fetch = shm_fetch,
    .generation = shm_generation,
    .wait = shm_wait,
    .kick = shm_kick,
    .barrier = shm_barrier,
};
