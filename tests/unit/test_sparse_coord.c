/* Tests of scheduler/sparse_coord: a round of magnitude histograms gives every server one
 * global threshold; a round of position histograms gives servers and workers balanced
 * regions in force from the next iteration; misplaced, duplicate or malformed histograms
 * are refused with the reason and change nothing. */
#include "scheduler/sparse_coord.h"
#include "core/sparse_wire.h"
#include "core/regions.h"
#include "ordo_check.h"

#include <string.h>

#define NBINS 16
#define N     1600

/* what the coordinator sent */
typedef struct {
    int role, sub;
    int64_t iter;
    uint8_t payload[64];
    size_t len;
} sent_t;

static sent_t sent[16];
static int n_sent;

static void capture(void *ctx, int role, int sub, int64_t iter, const void *payload, size_t len)
{
    (void)ctx;
    ck_assert_int_lt(n_sent, 16);
    ck_assert_uint_le(len, sizeof sent[0].payload);
    sent[n_sent] = (sent_t){.role = role, .sub = sub, .iter = iter, .len = len};
    memcpy(sent[n_sent].payload, payload, len);
    n_sent++;
}

static ordo__sparse_coord_t *make(void)
{
    json_t *plan = json_pack("{s:s,s:{s:i,s:i,s:f,s:i,s:i,s:i,s:[i,i,i]}}", "policy", "fifo",
                             "sparse", "n", N, "k", 100, "density", 0.0625, "nbins", NBINS,
                             "threshold_period", 4, "repartition_period", 8, "bounds", 0, 800, N);
    ordo__sparse_coord_t *c = NULL;
    n_sent = 0;
    ORDO_CK_OK(ordo__sparse_coord_new(plan, 2, 3, capture, NULL, &c));
    json_decref(plan);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* a PLAN message carrying n uint64 counts */
static void hist_msg(ordo__msg_t *m, int sub, int64_t iter, const uint64_t *counts, size_t n)
{
    static uint8_t buf[8 * ORDO_REGIONS_MAGHIST_BINS];
    ordo__sparse_wire_put_counts(counts, n, buf);
    ordo__msg_init(m, ORDO_MSG_PLAN);
    m->hdr.key = ORDO_SPARSE_KEY;
    m->hdr.chunk = (uint32_t)sub;
    m->hdr.iter = iter;
    ck_assert_int_eq(ordo__msg_add_copy(m, buf, 8 * n), 0);
}

static int send_hist(ordo__sparse_coord_t *c, int role, int rank, int sub, int64_t iter,
                     const uint64_t *counts, size_t n)
{
    ordo__msg_t m;
    hist_msg(&m, sub, iter, counts, n);
    int rc = ordo__sparse_coord_on_msg(c, role, rank, &m);
    ordo__msg_close(&m);
    return rc;
}

START_TEST(no_sparse_member_no_coordinator)
{
    json_t *plan = json_pack("{s:s}", "policy", "tao");
    ordo__sparse_coord_t *c = (ordo__sparse_coord_t *)1;
    ORDO_CK_OK(ordo__sparse_coord_new(plan, 2, 3, capture, NULL, &c));
    ck_assert_ptr_null(c);
    json_decref(plan);
    ordo__sparse_coord_destroy(&c);
}
END_TEST

START_TEST(servers_get_one_global_threshold)
{
    static uint64_t a[ORDO_REGIONS_MAGHIST_BINS], b[ORDO_REGIONS_MAGHIST_BINS],
        sum[ORDO_REGIONS_MAGHIST_BINS];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    float xa[300], xb[200];
    for (int i = 0; i < 300; i++)
        xa[i] = 0.001f * (float)(i + 1);
    for (int i = 0; i < 200; i++)
        xb[i] = 0.01f * (float)(i + 1);
    ordo__regions_maghist_add(a, xa, 300);
    ordo__regions_maghist_add(b, xb, 200);
    for (size_t i = 0; i < ORDO_REGIONS_MAGHIST_BINS; i++)
        sum[i] = a[i] + b[i];
    ordo__sparse_coord_t *c = make();
    ORDO_CK_OK(
        send_hist(c, ORDO_ROLE_SERVER, 1, ORDO_SPARSE_MAGHIST, 8, b, ORDO_REGIONS_MAGHIST_BINS));
    ck_assert_int_eq(n_sent, 0);
    /* refused: a duplicate, another iteration, a worker, a wrong size */
    ORDO_CK_ERR(
        send_hist(c, ORDO_ROLE_SERVER, 1, ORDO_SPARSE_MAGHIST, 8, b, ORDO_REGIONS_MAGHIST_BINS),
        ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "MAGHIST: a second histogram for iteration 8");
    ORDO_CK_ERR(
        send_hist(c, ORDO_ROLE_SERVER, 0, ORDO_SPARSE_MAGHIST, 9, a, ORDO_REGIONS_MAGHIST_BINS),
        ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "MAGHIST of iteration 9 while gathering iteration 8");
    ORDO_CK_ERR(
        send_hist(c, ORDO_ROLE_WORKER, 0, ORDO_SPARSE_MAGHIST, 8, a, ORDO_REGIONS_MAGHIST_BINS),
        ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "MAGHIST from a node that is not a server");
    ORDO_CK_ERR(send_hist(c, ORDO_ROLE_SERVER, 0, ORDO_SPARSE_MAGHIST, 8, a, 100), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "MAGHIST: 800 bytes, expected 65536");
    ck_assert_int_eq(n_sent, 0);
    ORDO_CK_OK(
        send_hist(c, ORDO_ROLE_SERVER, 0, ORDO_SPARSE_MAGHIST, 8, a, ORDO_REGIONS_MAGHIST_BINS));
    ck_assert_int_eq(n_sent, 1);
    ck_assert_int_eq(sent[0].role, ORDO_ROLE_SERVER);
    ck_assert_int_eq(sent[0].sub, ORDO_SPARSE_THRESHOLD);
    ck_assert_int_eq(sent[0].iter, 8);
    float thr;
    ORDO_CK_OK(ordo__sparse_wire_get_float(sent[0].payload, sent[0].len, &thr));
    ck_assert_float_eq(thr, ordo__regions_maghist_threshold(sum, 100));
    ck_assert(thr > 0.95f && thr < 1.1f); /* about 100 of the 500 values lie above it */
    /* the next round starts clean */
    ORDO_CK_OK(
        send_hist(c, ORDO_ROLE_SERVER, 0, ORDO_SPARSE_MAGHIST, 12, a, ORDO_REGIONS_MAGHIST_BINS));
    ck_assert_int_eq(n_sent, 1);
    ordo__sparse_coord_destroy(&c);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(workers_positions_give_balanced_regions)
{
    uint64_t h[3][NBINS] = {{0}}, sum[NBINS] = {0};
    for (int w = 0; w < 3; w++)
        for (int b = 0; b < NBINS; b++) {
            h[w][b] = b < 4 ? 30 + (uint64_t)w : 2; /* most entries in the first quarter */
            sum[b] += h[w][b];
        }
    ordo__sparse_coord_t *c = make();
    ck_assert_uint_eq(ordo__sparse_coord_epoch(c), 0);
    ck_assert_uint_eq(ordo__sparse_coord_bounds(c)[1], 800);
    ORDO_CK_OK(send_hist(c, ORDO_ROLE_WORKER, 2, ORDO_SPARSE_POSHIST, 7, h[2], NBINS));
    ORDO_CK_ERR(send_hist(c, ORDO_ROLE_SERVER, 0, ORDO_SPARSE_POSHIST, 7, h[0], NBINS),
                ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "POSHIST from a node that is not a worker");
    ORDO_CK_ERR(send_hist(c, ORDO_ROLE_WORKER, 3, ORDO_SPARSE_POSHIST, 7, h[0], NBINS),
                ORDO_ERR_PROTO);
    ORDO_CK_ERR(send_hist(c, ORDO_ROLE_WORKER, 0, ORDO_SPARSE_POSHIST, 7, h[0], NBINS - 1),
                ORDO_ERR_PROTO);
    ORDO_CK_OK(send_hist(c, ORDO_ROLE_WORKER, 0, ORDO_SPARSE_POSHIST, 7, h[0], NBINS));
    ck_assert_int_eq(n_sent, 0);
    ORDO_CK_OK(send_hist(c, ORDO_ROLE_WORKER, 1, ORDO_SPARSE_POSHIST, 7, h[1], NBINS));
    /* REGIONS to the servers and to the workers, in force from iteration 8 */
    ck_assert_int_eq(n_sent, 2);
    ck_assert_int_eq(sent[0].role, ORDO_ROLE_SERVER);
    ck_assert_int_eq(sent[1].role, ORDO_ROLE_WORKER);
    uint32_t want[3], got[3], epoch;
    ORDO_CK_OK(ordo__regions_balance(sum, NBINS, N, 2, want));
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sent[i].sub, ORDO_SPARSE_REGIONS);
        ck_assert_int_eq(sent[i].iter, 8);
        ORDO_CK_OK(ordo__sparse_wire_get_regions(sent[i].payload, sent[i].len, 2, N, &epoch, got));
        ck_assert_uint_eq(epoch, 1);
        ck_assert_uint_eq(got[1], want[1]);
    }
    ck_assert_uint_lt(want[1], 400); /* the dense first quarter is split off */
    ck_assert_uint_eq(ordo__sparse_coord_epoch(c), 1);
    ck_assert_uint_eq(ordo__sparse_coord_bounds(c)[1], want[1]);
    /* the next period: epoch 2 */
    for (int w = 0; w < 3; w++)
        ORDO_CK_OK(send_hist(c, ORDO_ROLE_WORKER, w, ORDO_SPARSE_POSHIST, 15, h[w], NBINS));
    ck_assert_int_eq(n_sent, 4);
    ORDO_CK_OK(ordo__sparse_wire_get_regions(sent[3].payload, sent[3].len, 2, N, &epoch, got));
    ck_assert_uint_eq(epoch, 2);
    ck_assert_int_eq(sent[3].iter, 16);
    /* unknown kinds are refused */
    ORDO_CK_ERR(send_hist(c, ORDO_ROLE_WORKER, 0, 9, 15, h[0], NBINS), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "sparse message of unknown kind 9");
    ordo__sparse_coord_destroy(&c);
}
END_TEST

static Suite *sparse_coord_suite(void)
{
    Suite *s = suite_create("sparse_coord");
    TCase *t = tcase_create("rounds");
    tcase_add_test(t, no_sparse_member_no_coordinator);
    tcase_add_test(t, servers_get_one_global_threshold);
    tcase_add_test(t, workers_positions_give_balanced_regions);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(sparse_coord_suite)
