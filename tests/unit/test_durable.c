/* Tests of common/durable: a file is replaced whole or not at all (a write that fails, here
 * past the process's file-size limit as on a full disk, leaves the old file and its
 * predecessor as they were and names the file and errno's text), and the checksum trailer
 * reads back and refuses a flipped byte. */
#include "common/durable.h"
#include "common/error.h"
#include "ordo_check.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ordo-durable-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path_of(const char *name)
{
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* path's whole contents into buf (at most size bytes); the byte count */
static size_t slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

static int write_text(const char *path, const char *keep, const char *text, size_t repeat)
{
    ordo__durable_t *d;
    int rc = ordo__durable_open(path, &d);
    if (rc) return rc;
    for (size_t i = 0; i < repeat; i++)
        fputs(text, ordo__durable_file(d));
    return ordo__durable_commit(&d, true, keep);
}

START_TEST(a_file_is_replaced_whole_with_its_checksum)
{
    const char *path = path_of("f.bin"), *prev = path_of("f.prev.bin");
    ORDO_CK_OK(write_text(path, prev, "first", 1));
    ck_assert_int_ne(access(prev, F_OK), 0);
    ORDO_CK_OK(write_text(path, prev, "second", 1));
    ck_assert_int_ne(access(path_of("f.bin.tmp"), F_OK), 0);
    char buf[256];
    size_t n = slurp(path, buf, sizeof buf);
    ck_assert_uint_eq(n, 6 + ORDO_DURABLE_TRAILER);
    ck_assert_mem_eq(buf, "second", 6);
    ck_assert_mem_eq(buf + 6, ORDO_DURABLE_MAGIC, 8);
    ck_assert_uint_eq(slurp(prev, buf, sizeof buf), 5 + ORDO_DURABLE_TRAILER);
    ck_assert_mem_eq(buf, "first", 5);
    size_t len = 0;
    ORDO_CK_OK(ordo__durable_check_file(path, &len));
    ck_assert_uint_eq(len, 6);
}
END_TEST

START_TEST(a_failed_write_leaves_the_old_files_whole)
{
    const char *path = path_of("f.bin"), *prev = path_of("f.prev.bin");
    ORDO_CK_OK(write_text(path, prev, "old", 1));
    ORDO_CK_OK(write_text(path, prev, "current", 1));
    /* as on a full disk: every write past 4 KiB fails (EFBIG rather than ENOSPC) */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ORDO_CK_ERR(write_text(path, prev, "0123456789abcdef", 1024), ORDO_ERR_IO);
    ck_assert_msg(strstr(ordo__error_detail(), "cannot write ") &&
                      strstr(ordo__error_detail(), path) &&
                      strstr(ordo__error_detail(), "File too large"),
                  "detail '%s'", ordo__error_detail());
    char buf[256];
    ck_assert_uint_eq(slurp(path, buf, sizeof buf), 7 + ORDO_DURABLE_TRAILER);
    ck_assert_mem_eq(buf, "current", 7);
    ck_assert_uint_eq(slurp(prev, buf, sizeof buf), 3 + ORDO_DURABLE_TRAILER);
    ck_assert_mem_eq(buf, "old", 3);
    ck_assert_int_ne(access(path_of("f.bin.tmp"), F_OK), 0);
}
END_TEST

START_TEST(an_unwritable_folder_is_named)
{
    ordo__durable_t *d = (ordo__durable_t *)1;
    ORDO_CK_ERR(ordo__durable_open(path_of("no/such/f.bin"), &d), ORDO_ERR_IO);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "/no/such/f.bin.tmp: No such file"));
    ORDO_CK_OK(ordo__durable_open(path_of("g.bin"), &d));
    fputs("never", ordo__durable_file(d));
    ordo__durable_abort(&d);
    ck_assert_ptr_null(d);
    ordo__durable_abort(&d); /* NULL-safe */
    ck_assert_int_ne(access(path_of("g.bin.tmp"), F_OK), 0);
    ck_assert_int_ne(access(path_of("g.bin"), F_OK), 0);
}
END_TEST

START_TEST(a_flipped_byte_fails_the_checksum)
{
    const char *path = path_of("f.bin");
    ORDO_CK_OK(write_text(path, NULL, "payload bytes", 1));
    char buf[256];
    size_t n = slurp(path, buf, sizeof buf);
    buf[3] ^= 0x20;
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    size_t len = 0;
    ORDO_CK_ERR(ordo__durable_check_file(path, &len), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "f.bin: offset 13: checksum mismatch"));
    /* no trailer at all: the bytes as they are */
    bool had = true;
    len = 13;
    ORDO_CK_OK(ordo__durable_check(path, (const unsigned char *)buf, &len, &had));
    ck_assert(!had);
    ck_assert_uint_eq(len, 13);
    ORDO_CK_ERR(ordo__durable_check_file(path_of("missing.bin"), &len), ORDO_ERR_NOTFOUND);
}
END_TEST

static Suite *durable_suite(void)
{
    Suite *s = suite_create("durable");
    TCase *tc = tcase_create("durable");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_file_is_replaced_whole_with_its_checksum);
    tcase_add_test(tc, a_failed_write_leaves_the_old_files_whole);
    tcase_add_test(tc, an_unwritable_folder_is_named);
    tcase_add_test(tc, a_flipped_byte_fails_the_checksum);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(durable_suite)
