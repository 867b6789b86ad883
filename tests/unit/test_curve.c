/* Tests of common/curve and CURVE in common/transport: the key folder ordo-keygen writes
 * (modes, kept server pair, bad names), loading it, and two transports on loopback: a listed
 * client's messages cross, an unlisted key is refused (a PEER_DEAD whose text says why), a
 * client of another cluster never gets through. */
#include "common/curve.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], other[64];

static void make_dirs(void)
{
    ordo__log_set_level(ORDO_LOG_ERROR);
    snprintf(dir, sizeof dir, "/tmp/ordo-curve-test.XXXXXX");
    snprintf(other, sizeof other, "/tmp/ordo-curve-other.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(mkdtemp(other));
    const char *names[] = {"worker", "intruder"};
    ORDO_CK_OK(ordo__curve_keygen(dir, names, 2, false));
    ORDO_CK_OK(ordo__curve_keygen(other, names, 1, false));
    char path[128];
    snprintf(path, sizeof path, "%s/clients/intruder.pub", dir);
    ck_assert_int_eq(unlink(path), 0); /* a pair the cluster does not list */
}

static void remove_dirs(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, other);
    ck_assert_int_eq(system(cmd), 0);
}

static int mode_of(const char *d, const char *file)
{
    char path[200];
    snprintf(path, sizeof path, "%s/%s", d, file);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (int)(st.st_mode & 0777);
}

START_TEST(keygen_writes_private_keys_and_keeps_the_server_pair)
{
    make_dirs();
    ck_assert_int_eq(mode_of(dir, "server.key"), 0600);
    ck_assert_int_eq(mode_of(dir, "clients/worker.key"), 0600);
    ck_assert_int_eq(mode_of(dir, "server.pub"), 0644);
    char a[200], b[200], path[200];
    snprintf(path, sizeof path, "%s/server.pub", dir);
    FILE *f = fopen(path, "r");
    ck_assert(fread(a, 1, sizeof a, f) > 40);
    fclose(f);
    const char *names[] = {"extra"};
    ORDO_CK_OK(ordo__curve_keygen(dir, names, 1, false)); /* adds a client, keeps the server */
    f = fopen(path, "r");
    ck_assert(fread(b, 1, sizeof b, f) > 40);
    fclose(f);
    ck_assert(!memcmp(a, b, 40 + 30));
    const char *bad[] = {"../up"};
    ORDO_CK_ERR(ordo__curve_keygen(dir, bad, 1, false), ORDO_ERR_INVAL);
    ordo__curve_t *c = NULL;
    ORDO_CK_OK(ordo__curve_new(dir, "worker", &c));
    ordo__curve_destroy(&c);
    ck_assert_ptr_null(c);
    ORDO_CK_OK(ordo__curve_new(dir, NULL, &c));
    ordo__curve_destroy(&c);
    ORDO_CK_ERR(ordo__curve_new(dir, "nobody", &c), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo__error_detail(), "clients/nobody.key"));
    remove_dirs();
}
END_TEST

/* a server transport listening with dir's keys */
static ordo__transport_t *server(char *ep, size_t size)
{
    ordo__transport_opts_t o = {.role = ORDO_ROLE_SERVER, .curve_keys = dir};
    ordo__transport_t *t = NULL;
    ORDO_CK_OK(ordo__transport_new(&o, &t));
    ck_assert_int_ge(ordo__transport_bind(t, "tcp://127.0.0.1:0", 1, ep, size), 0);
    return t;
}

/* client: a worker transport with keys/clients/name connected to ep; sends one PULL */
static ordo__transport_t *client(const char *keys, const char *name, const char *ep, int *sock)
{
    ordo__transport_opts_t o = {.role = ORDO_ROLE_WORKER, .curve_keys = keys, .curve_client = name};
    ordo__transport_t *t = NULL;
    ORDO_CK_OK(ordo__transport_new(&o, &t));
    *sock = ordo__transport_connect(t, ep, 1);
    ck_assert_int_ge(*sock, 0);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PULL);
    m.sock = *sock;
    m.hdr.key = 7;
    ORDO_CK_OK(ordo__transport_send(t, &m));
    return t;
}

START_TEST(listed_clients_cross_and_others_are_refused)
{
    make_dirs();
    char ep[256];
    ordo__transport_t *srv = server(ep, sizeof ep);
    int sock;
    ordo__transport_t *good = client(dir, "worker", ep, &sock);
    ordo__msg_t m;
    ORDO_CK_OK(ordo__transport_recv(srv, &m, 5000));
    ck_assert_int_eq(m.hdr.type, ORDO_MSG_PULL);
    ck_assert_int_eq(m.hdr.key, 7);
    ordo__msg_close(&m);

    /* an unlisted key: the client learns it at once, with the reason */
    ordo__transport_t *bad = client(dir, "intruder", ep, &sock);
    ORDO_CK_OK(ordo__transport_recv(bad, &m, 5000));
    ck_assert_int_eq(m.hdr.type, ORDO_MSG_PEER_DEAD);
    ck_assert_int_eq(m.sock, sock);
    char text[600];
    ck_assert(strstr(ordo__msg_text(&m, 0, text, sizeof text), "refused this process's CURVE key"));
    ordo__msg_close(&m);

    /* another cluster's keys: its messages never arrive */
    ordo__transport_t *foreign = client(other, "worker", ep, &sock);
    ORDO_CK_ERR(ordo__transport_recv(srv, &m, 700), ORDO_ERR_TIMEDOUT);
    /* and the good client still gets through */
    ordo__msg_init(&m, ORDO_MSG_PULL);
    m.sock = 0;
    m.hdr.key = 8;
    ORDO_CK_OK(ordo__transport_send(good, &m));
    ORDO_CK_OK(ordo__transport_recv(srv, &m, 5000));
    ck_assert_int_eq(m.hdr.key, 8);
    ordo__msg_close(&m);
    ordo__transport_destroy(&foreign, 0);
    ordo__transport_destroy(&bad, 0);
    ordo__transport_destroy(&good, 0);
    ordo__transport_destroy(&srv, 0);
    remove_dirs();
}
END_TEST

static Suite *curve_suite(void)
{
    Suite *s = suite_create("curve");
    TCase *tc = tcase_create("keys");
    tcase_add_test(tc, keygen_writes_private_keys_and_keeps_the_server_pair);
    suite_add_tcase(s, tc);
    tc = tcase_create("transport");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, listed_clients_cross_and_others_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(curve_suite)
