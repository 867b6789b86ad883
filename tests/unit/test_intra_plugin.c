/* Unit tests of how a program without the linked-in NCCL backend (libordo.so; here ordo_ps
 * linked alone) finds it: the plugin libordo_nccl.so (client/intra.h). Without the plugin
 * the error says the build has no NCCL or names the file that would not load; with it,
 * nccl is the plugin's backend, whose errors arrive in the caller's error state (no CUDA
 * device here: "intra.backend nccl: no CUDA device (...)"; on a GPU a group of one sums and
 * shares a slot). intra.backend = auto takes shm for CPU tensors, nccl for CUDA tensors where
 * the plugin loads. ctest passes the plugin's path in ORDO_TEST_NCCL_PLUGIN (empty: the build
 * has none). */
#include "client/intra.h"
#include "common/conf.h"
#include "common/error.h"
#include "tests/unit/ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int64_t slot_off[] = {0, 1000};
static int slot_root[] = {0};

static int relay_none(void *ctx, void *buf, size_t bytes)
{
    (void)ctx, (void)buf, (void)bytes;
    return 0;
}

static ordo__intra_opts_t opts(void)
{
    static char run[64];
    snprintf(run, sizeof run, "unitplugin%ld", (long)getpid());
    return (ordo__intra_opts_t){.run = run,
                                .local_size = 1,
                                .n_slots = 1,
                                .slot_off = slot_off,
                                .timeout_ms = 3000,
                                .slot_root = slot_root,
                                .relay = relay_none};
}

static const char *plugin(void)
{
    const char *p = getenv("ORDO_TEST_NCCL_PLUGIN");
    return p && p[0] ? p : NULL;
}

/* the "loaded" cases' plugin (ctest runs them only where there is one) */
static const char *the_plugin(void)
{
    const char *p = plugin();
    ck_assert_msg(p, "ORDO_TEST_NCCL_PLUGIN is not set (run through ctest)");
    return p;
}

/* Check forks every case: each one loads (or fails to load) the plugin afresh */

START_TEST(no_plugin_beside_the_program_says_the_build_has_no_nccl)
{
    unsetenv("ORDO_NCCL_PLUGIN");
    ordo__intra_opts_t o = opts();
    ordo__intra_t *it = NULL;
    int rc = ordo__intra_new("nccl", &o, &it);
    ck_assert_int_eq(rc, ORDO_ERR_NOTSUP);
    const char *why = ordo__error_text(rc);
    /* this test program's folder (build/bin) holds no libordo_nccl.so */
    ck_assert_msg(strstr(why, "intra.backend nccl: this libordo was built without NCCL (no ") &&
                      strstr(why, "/libordo_nccl.so;"),
                  "%s", why);
    ck_assert_ptr_null(it);
    ck_assert_str_eq(ordo__intra_auto(ORDO_DEVICE_CUDA), "shm");
}
END_TEST

START_TEST(a_plugin_that_does_not_load_is_named)
{
    setenv("ORDO_NCCL_PLUGIN", "/nonexistent/libordo_nccl.so", 1);
    ordo__intra_opts_t o = opts();
    ordo__intra_t *it = NULL;
    int rc = ordo__intra_new("nccl", &o, &it);
    ck_assert_int_eq(rc, ORDO_ERR_NOTSUP);
    const char *why = ordo__error_text(rc);
    ck_assert_msg(strstr(why, "intra.backend nccl: cannot load /nonexistent/libordo_nccl.so "
                              "(ORDO_NCCL_PLUGIN): "),
                  "%s", why);
}
END_TEST

START_TEST(auto_takes_shm_for_cpu_tensors)
{
    setenv("ORDO_NCCL_PLUGIN", "/nonexistent/libordo_nccl.so", 1); /* never looked at */
    ck_assert_str_eq(ordo__intra_auto(ORDO_DEVICE_CPU), "shm");
    ck_assert_str_eq(ordo__intra_auto(ORDO_DEVICE_AUTO), "shm");
    ck_assert_int_eq(ordo__intra_new("auto", NULL, NULL), ORDO_ERR_INVAL);
}
END_TEST

START_TEST(the_plugin_backend_runs_or_says_there_is_no_device)
{
    setenv("ORDO_NCCL_PLUGIN", the_plugin(), 1);
    ordo__error_clear();
    ordo__intra_opts_t o = opts();
    ordo__intra_t *it = NULL;
    int rc = ordo__intra_new("nccl", &o, &it);
    if (rc) {
        /* set by the plugin's ordo__error_set, read from this program's error state */
        const char *why = ordo__error_text(rc);
        ck_assert_int_eq(rc, ORDO_ERR_NOTSUP);
        ck_assert_msg(strstr(why, "intra.backend nccl: no CUDA device ("), "%s", why);
        ck_assert_ptr_null(it);
        return;
    }
    /* a device (NEVER RUN: written on a machine without a GPU): one slot of a group of one
     * goes through NCCL's reduce and broadcast and comes back unchanged */
    ck_assert_str_eq(it->ops->name, "nccl");
    static float src[1000], dst[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (float)i * 0.5f;
    ORDO_CK_OK(it->ops->put(it, 0, src, 0));
    for (int n = 0; n < 30000 && !it->ops->reduced(it, 0, 0); n++)
        ORDO_CK_OK(it->ops->wait(it, 0, 1));
    ck_assert(it->ops->reduced(it, 0, 0));
    it->ops->sum(it, 0, dst);
    ck_assert_mem_eq(dst, src, sizeof src);
    ORDO_CK_OK(it->ops->publish(it, 0, dst, 0));
    memset(dst, 0, sizeof dst);
    for (int n = 0; n < 30000 && !it->ops->published(it, 0, 0); n++)
        ORDO_CK_OK(it->ops->wait(it, 0, 1));
    it->ops->fetch(it, 0, dst);
    ck_assert_mem_eq(dst, src, sizeof src);
    ordo__intra_destroy(&it);
}
END_TEST

START_TEST(auto_takes_nccl_for_cuda_tensors_where_the_plugin_loads)
{
    setenv("ORDO_NCCL_PLUGIN", the_plugin(), 1);
    ck_assert_str_eq(ordo__intra_auto(ORDO_DEVICE_CUDA), "nccl");
    ck_assert_str_eq(ordo__intra_auto(ORDO_DEVICE_CPU), "shm");
}
END_TEST

/* "nccl_plugin": the build made libordo_nccl.so */
static const char *probe(const char *need)
{
    if (strcmp(need, "nccl_plugin") == 0)
        return plugin() ? NULL : "this build has no NCCL plugin (no CUDA toolkit or NCCL)";
    fprintf(stderr, "ORDO_CK_NEEDS names '%s', which this suite cannot check\n", need);
    exit(2);
}

static Suite *intra_plugin_suite(void)
{
    Suite *s = suite_create("intra_plugin");
    TCase *tc = tcase_create("missing");
    tcase_add_test(tc, no_plugin_beside_the_program_says_the_build_has_no_nccl);
    tcase_add_test(tc, a_plugin_that_does_not_load_is_named);
    tcase_add_test(tc, auto_takes_shm_for_cpu_tensors);
    suite_add_tcase(s, tc);
    /* Tagged "nccl_plugin": ctest's unit.intra_plugin.loaded runs it where the plugin was built */
    tc = tcase_create("loaded");
    tcase_set_tags(tc, "nccl_plugin");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_plugin_backend_runs_or_says_there_is_no_device);
    tcase_add_test(tc, auto_takes_nccl_for_cuda_tensors_where_the_plugin_loads);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN_PROBE(intra_plugin_suite, probe)
