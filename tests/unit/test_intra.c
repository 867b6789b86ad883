/* Unit tests of client/intra.h's shared-memory backend (intra_shm.c), with real processes: the
 * test forks the other members. Sums over members are exact and stay inside their slots (odd
 * slot sizes, neighbours untouched), published values reach every member, the segment's name
 * is gone from /dev/shm once everyone attached, and a member that dies is named within the
 * timeout. */
#include "client/intra.h"
#include "core/vec.h"
#include "common/error.h"
#include "tests/unit/ordo_check.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* slots of awkward sizes: one float, an odd count, one past a vector width, a big one */
static const int64_t slot_off[] = {0, 1, 8, 25, 25 + 4099, 25 + 4099 + 3};
#define N_SLOTS 5
#define TOTAL   (25 + 4099 + 3)

static float value(int member, int64_t i, int64_t iter)
{
    return (float)(member + 1) * 0.5f + (float)(i % 97) + (float)iter * 1000.0f;
}

static char run_id[64];

/* a fresh segment name per test, set before the members fork */
static void new_run(void)
{
    snprintf(run_id, sizeof run_id, "unit%ld", (long)getpid());
}

static ordo__intra_opts_t opts(int lr, int L)
{
    return (ordo__intra_opts_t){.run = run_id,
                               .group = 3,
                               .local_rank = lr,
                               .local_size = L,
                               .n_slots = N_SLOTS,
                               .slot_off = slot_off,
                               .timeout_ms = 3000};
}

/* wait (bounded) until every slot was reduced / published for iter */
static int wait_all(ordo__intra_t *it, int64_t iter, bool reduce)
{
    for (int tries = 0; tries < 200; tries++) {
        uint64_t g = it->ops->generation(it);
        bool all = true;
        for (int s = 0; s < N_SLOTS; s++)
            all = all && (reduce ? it->ops->reduced(it, s, iter) : it->ops->published(it, s, iter));
        if (all) return 0;
        int rc = it->ops->wait(it, g, 50);
        if (rc) return rc;
    }
    return ORDO_ERR_TIMEDOUT;
}

/* in place: each member writes its contribution in its area of the segment and waits until
 * the root summed it before writing the next; the root sums into the shared value */
static bool in_place;

/* wait (bounded) until the root summed every slot of iter */
static int wait_summed(ordo__intra_t *it, int64_t iter)
{
    for (int tries = 0; tries < 200; tries++) {
        uint64_t g = it->ops->generation(it);
        bool all = true;
        for (int s = 0; s < N_SLOTS; s++) all = all && it->ops->summed(it, s, iter);
        if (all) return 0;
        int rc = it->ops->wait(it, g, 50);
        if (rc) return rc;
    }
    return ORDO_ERR_TIMEDOUT;
}

/* one member's part of two iterations: put, (root) sum and check, publish, fetch and check;
 * 0 when everything agreed */
static int member(int lr, int L)
{
    ordo__intra_opts_t o = opts(lr, L);
    ordo__intra_t *it = NULL;
    if (ordo__intra_new("shm", &o, &it)) return 1;
    static float src[TOTAL], dst[TOTAL + 1];
    int bad = 0;
    for (int64_t iter = 0; iter < 2; iter++) {
        for (int64_t i = 0; i < TOTAL; i++) src[i] = value(lr, i, iter);
        for (int s = 0; s < N_SLOTS; s++) {
            float *a = in_place ? it->ops->area(it, s) : src + slot_off[s];
            if (in_place)
                memcpy(a, src + slot_off[s],
                       sizeof(float) * (size_t)(slot_off[s + 1] - slot_off[s]));
            it->ops->put(it, s, a, iter);
        }
        if (lr == 0) {
            if (wait_all(it, iter, true)) return 2;
            dst[TOTAL] = -1; /* a sentinel past the last slot */
            for (int s = 0; s < N_SLOTS; s++) it->ops->sum(it, s, dst + slot_off[s]);
            if (in_place) /* the same sums again, straight into the shared value */
                for (int s = 0; s < N_SLOTS; s++) it->ops->sum(it, s, it->ops->value_area(it, s));
            for (int64_t i = 0; i < TOTAL; i++) {
                float want = 0;
                for (int m = 0; m < L; m++) want += value(m, i, iter);
                bad += dst[i] != want;
            }
            bad += dst[TOTAL] != -1;
            for (int s = 0; s < N_SLOTS; s++)
                it->ops->publish(it, s, in_place ? it->ops->value_area(it, s) : dst + slot_off[s],
                                 iter);
        }
        if (in_place && wait_summed(it, iter)) return 6;
        if (wait_all(it, iter, false)) return 3;
        memset(dst, 0, sizeof dst);
        for (int s = 0; s < N_SLOTS; s++) it->ops->fetch(it, s, dst + slot_off[s]);
        for (int64_t i = 0; i < TOTAL; i++) {
            float want = 0;
            for (int m = 0; m < L; m++) want += value(m, i, iter);
            bad += dst[i] != want;
        }
        for (int s = 0; in_place && s < N_SLOTS; s++) { /* read where shared: nothing copied */
            float *v = it->ops->value_area(it, s);
            it->ops->fetch(it, s, v);
            for (int64_t i = slot_off[s]; i < slot_off[s + 1]; i++) {
                float want = 0;
                for (int m = 0; m < L; m++) want += value(m, i, iter);
                bad += v[i - slot_off[s]] != want;
            }
        }
        if (it->ops->barrier(it)) return 4;
    }
    ordo__intra_destroy(&it);
    return bad ? 5 : 0;
}

static bool name_exists(void)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/ordo-%s-g3", run_id);
    return access(path, F_OK) == 0;
}

static void run_group(int L)
{
    pid_t kids[8];
    new_run();
    for (int m = 1; m < L; m++) {
        kids[m] = fork();
        if (kids[m] == 0) _exit(member(m, L));
    }
    ck_assert_int_eq(member(0, L), 0);
    for (int m = 1; m < L; m++) {
        int st = 0;
        ck_assert_int_eq(waitpid(kids[m], &st, 0), kids[m]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member %d failed (%d)", m,
                      WEXITSTATUS(st));
    }
    ck_assert_msg(!name_exists(), "the segment's name stayed in /dev/shm");
}

START_TEST(two_members_sum_and_share_every_slot)
{
    run_group(2);
}
END_TEST

START_TEST(four_members_sum_and_share_every_slot)
{
    run_group(4);
}
END_TEST

/* contributions written in the segment, sums made in the shared value: the same results */
START_TEST(members_sum_and_share_in_place)
{
    in_place = true;
    run_group(_i);
    in_place = false;
}
END_TEST

START_TEST(a_dead_member_is_named_within_the_timeout)
{
    new_run();
    pid_t kid = fork();
    if (kid == 0) {
        ordo__intra_opts_t o = opts(1, 2);
        ordo__intra_t *it = NULL;
        if (ordo__intra_new("shm", &o, &it)) _exit(1);
        pause(); /* until killed: never destroys */
        _exit(0);
    }
    ordo__intra_opts_t o = opts(0, 2);
    ordo__intra_t *it = NULL;
    ORDO_CK_OK(ordo__intra_new("shm", &o, &it));
    /* wait for the member to attach: the name goes when both did (up to 30 s: a loaded
     * machine, a sanitizer build) */
    for (int i = 0; i < 3000 && name_exists(); i++) usleep(10000);
    ck_assert(!name_exists());
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    int rc = 0;
    for (int i = 0; i < 100 && !rc; i++) rc = it->ops->wait(it, it->ops->generation(it), 50);
    ck_assert_int_eq(rc, ORDO_ERR_PEERDEAD);
    char want[64];
    snprintf(want, sizeof want, "worker 1 (pid %d) died", (int)kid);
    ck_assert_msg(strstr(ordo__error_text(rc), want), "%s", ordo__error_text(rc));
    ordo__intra_destroy(&it);
}
END_TEST

START_TEST(unknown_backend_is_refused)
{
    new_run();
    ordo__intra_opts_t o = opts(0, 1);
    ordo__intra_t *it = NULL;
    ORDO_CK_ERR(ordo__intra_new("carrier-pigeon", &o, &it), ORDO_ERR_INVAL);
    o.local_rank = 2;
    ORDO_CK_ERR(ordo__intra_new("shm", &o, &it), ORDO_ERR_INVAL);
}
END_TEST

START_TEST(sum_matches_a_plain_loop)
{
    float a[1031], b[1031], c[1031];
    for (int i = 0; i < 1031; i++) {
        a[i] = c[i] = (float)i * 0.25f;
        b[i] = (float)(1031 - i) * 0.5f;
        c[i] += b[i];
    }
    ordo__vec_add(a, b, 1031);
    ck_assert_mem_eq(a, c, sizeof a);
}
END_TEST

/* the streamed sums and copies (slots of 1 MiB or more) give the bits of the plain loops,
 * whatever the destination's alignment and the length's remainder */
START_TEST(streamed_sums_and_copies_match_plain_loops)
{
    enum { N = (1 << 18) + 13 };
    float *rows_buf = malloc(sizeof(float) * 4 * N), *want = malloc(sizeof(float) * (N + 4)),
          *got = malloc(sizeof(float) * (N + 4));
    ck_assert(rows_buf && want && got);
    const float *rows[4];
    for (int r = 0; r < 4; r++) {
        float *row = rows_buf + (size_t)r * N;
        for (int64_t i = 0; i < N; i++) row[i] = (float)((i * (r + 3)) % 1009) * 0.37f - 91.0f;
        rows[r] = row;
    }
    for (int m = 1; m <= 4; m++) {
        for (int shift = 0; shift < 4; shift++) { /* dst 4-byte aligned only, up to 16 */
            int64_t n = N - shift;
            memcpy(want, rows[0], sizeof(float) * (size_t)n);
            if (m > 1) ordo__vec_sum(want, rows[0], rows[1], n);
            for (int r = 2; r < m; r++) ordo__vec_add(want, rows[r], n);
            got[shift + n] = -7.0f; /* a sentinel past the end */
            ordo__vec_sum_rows(got + shift, rows, m, n);
            ck_assert_mem_eq(got + shift, want, sizeof(float) * (size_t)n);
            ck_assert(got[shift + n] == -7.0f);
            ordo__vec_copy_stream(got + shift, rows[m - 1], n);
            ck_assert_mem_eq(got + shift, rows[m - 1], sizeof(float) * (size_t)n);
            ck_assert(got[shift + n] == -7.0f);
        }
    }
    free(rows_buf);
    free(want);
    free(got);
}
END_TEST

/* a group of one has nobody to relay the ids to: the bytes are already where they go */
static int relay_none(void *ctx, void *buf, size_t bytes)
{
    (void)ctx, (void)buf, (void)bytes;
    return 0;
}

/* NULL when a group of one can use NCCL here (a CUDA device and a build with NCCL) */
static const char *nccl_missing(void)
{
    static char why[300];
    new_run();
    ordo__intra_opts_t o = opts(0, 1);
    int root[N_SLOTS] = {0};
    o.slot_root = root;
    o.relay = relay_none;
    ordo__intra_t *it = NULL;
    int rc = ordo__intra_new("nccl", &o, &it);
    if (!rc) {
        ordo__intra_destroy(&it);
        return NULL;
    }
    snprintf(why, sizeof why, "%s", ordo__error_text(rc));
    return why;
}

/* "cuda": NCCL can run here; "no_nccl": it cannot (a build without NCCL, or no device) */
static const char *probe(const char *need)
{
    if (strcmp(need, "cuda") == 0) return nccl_missing();
    if (strcmp(need, "no_nccl") == 0)
        return nccl_missing() ? NULL : "NCCL runs here: unit.intra.nccl checks the backend";
    fprintf(stderr, "ORDO_CK_NEEDS names '%s', which this suite cannot check\n", need);
    exit(2);
}

START_TEST(nccl_is_refused_clearly_where_it_cannot_run)
{
    const char *why = nccl_missing();
    ck_assert_msg(why, "the nccl backend started: this case runs only where it cannot");
    ck_assert_msg(strstr(why, "intra.backend nccl: this libordo was built without NCCL") ||
                      strstr(why, "intra.backend nccl: no CUDA device ("),
                  "%s", why);
}
END_TEST

/* a group of one on the device: the reduce and the broadcast go through NCCL and come back */
START_TEST(nccl_group_of_one_sums_and_shares_every_slot)
{
    new_run();
    ordo__intra_opts_t o = opts(0, 1);
    int root[N_SLOTS] = {0};
    o.slot_root = root;
    o.relay = relay_none;
    ordo__intra_t *it = NULL;
    ORDO_CK_OK(ordo__intra_new("nccl", &o, &it));
    static float src[TOTAL], dst[TOTAL];
    for (int64_t iter = 0; iter < 2; iter++) {
        for (int64_t i = 0; i < TOTAL; i++) src[i] = value(0, i, iter);
        for (int s = 0; s < N_SLOTS; s++) ORDO_CK_OK(it->ops->put(it, s, src + slot_off[s], iter));
        ORDO_CK_OK(wait_all(it, iter, true));
        for (int s = 0; s < N_SLOTS; s++) it->ops->sum(it, s, dst + slot_off[s]);
        ck_assert_mem_eq(dst, src, sizeof src);
        for (int s = 0; s < N_SLOTS; s++)
            ORDO_CK_OK(it->ops->publish(it, s, dst + slot_off[s], iter));
        ORDO_CK_OK(wait_all(it, iter, false));
        memset(dst, 0, sizeof dst);
        for (int s = 0; s < N_SLOTS; s++) it->ops->fetch(it, s, dst + slot_off[s]);
        ck_assert_mem_eq(dst, src, sizeof src);
        ORDO_CK_OK(it->ops->barrier(it));
    }
    ordo__intra_destroy(&it);
}
END_TEST

static Suite *intra_suite(void)
{
    Suite *s = suite_create("intra");
    TCase *tc = tcase_create("shm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, two_members_sum_and_share_every_slot);
    tcase_add_test(tc, four_members_sum_and_share_every_slot);
    tcase_add_loop_test(tc, members_sum_and_share_in_place, 2, 5);
    tcase_add_test(tc, a_dead_member_is_named_within_the_timeout);
    tcase_add_test(tc, unknown_backend_is_refused);
    tcase_add_test(tc, sum_matches_a_plain_loop);
    tcase_add_test(tc, streamed_sums_and_copies_match_plain_loops);
    suite_add_tcase(s, tc);
    /* Tagged "no_nccl": ctest's unit.intra.nccl_refused runs it alone and skips where NCCL
     * can run (unit.intra.nccl runs there instead). */
    tc = tcase_create("nccl_refused");
    tcase_set_tags(tc, "no_nccl");
    tcase_add_test(tc, nccl_is_refused_clearly_where_it_cannot_run);
    suite_add_tcase(s, tc);
    /* Tagged "cuda": ctest's unit.intra.nccl runs it alone and skips without a device. */
    tc = tcase_create("nccl");
    tcase_set_tags(tc, "cuda");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nccl_group_of_one_sums_and_shares_every_slot);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN_PROBE(intra_suite, probe)
