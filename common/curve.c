/* curve: the key folder, CURVE socket options and the ZAP handler thread. */
#include "common/curve.h"
#include "common/error.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define Z85_KEY 40 /* a 32-byte key as Z85 text */

struct ordo__curve {
    char dir[1024];
    char server_pub[Z85_KEY + 1];
    char server_sec[Z85_KEY + 1];            /* "" until a listening socket needs it */
    char pub[Z85_KEY + 1], sec[Z85_KEY + 1]; /* this process as a client */
    void *zap;                               /* the ZAP REP socket (the thread's) */
    pthread_t zap_thread;
    bool zap_started;
};

int ordo__curve_check(void)
{
    if (!zmq_has("curve"))
        return ordo__error_set(ORDO_ERR_INVAL, "security.curve = true, but this libzmq was built "
                                           "without CURVE (libsodium); install a libzmq with it");
    return 0;
}

/* ---- key files ---------------------------------------------------------------------- */

/* read_key reads the first 40-character Z85 word of path (lines starting with # are
 * comments) into key */
static int read_key(const char *path, char key[Z85_KEY + 1])
{
    FILE *f = fopen(path, "r");
    if (!f) return ordo__error_set(ORDO_ERR_NOTFOUND, "cannot read %s: %s", path, strerror(errno));
    char line[256];
    int rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: no 40-character Z85 key in it", path);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        size_t n = strcspn(line, " \t\r\n");
        if (n != Z85_KEY) continue;
        uint8_t raw[32];
        line[n] = '\0';
        if (!zmq_z85_decode(raw, line)) continue;
        memcpy(key, line, Z85_KEY + 1);
        rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

static int write_key(const char *path, const char *what, const char *key, bool secret)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, secret ? 0600 : 0644);
    if (fd < 0) return ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    if (secret) fchmod(fd, 0600); /* an existing file keeps its mode through O_TRUNC */
    char text[256];
    int n = snprintf(text, sizeof text, "# ordo CURVE %s key (%s)%s\n%s\n", what,
                     secret ? "secret" : "public", secret ? ": keep it private" : "", key);
    bool ok = write(fd, text, (size_t)n) == n;
    if (close(fd) != 0) ok = false;
    return ok ? 0 : ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
}

static int write_pair(const char *dir, const char *name, const char *what)
{
    char pub[Z85_KEY + 1], sec[Z85_KEY + 1], path[1200];
    if (zmq_curve_keypair(pub, sec) != 0)
        return ordo__error_set(ORDO_ERR_IO, "zmq_curve_keypair: %s", zmq_strerror(errno));
    snprintf(path, sizeof path, "%s/%s.key", dir, name);
    int rc = write_key(path, what, sec, true);
    snprintf(path, sizeof path, "%s/%s.pub", dir, name);
    if (!rc) rc = write_key(path, what, pub, false);
    return rc;
}

static bool valid_name(const char *s)
{
    if (!*s || strlen(s) > 100) return false;
    for (; *s; s++)
        if (!(*s == '-' || *s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
              (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}

int ordo__curve_keygen(const char *dir, const char *const *names, int n, bool force)
{
    int rc = ordo__curve_check();
    if (rc) return rc;
    for (int i = 0; i < n; i++)
        if (!valid_name(names[i]) || names[i][0] == '.')
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "client name '%s': use letters, digits, -, _ "
                                  "and . only",
                                  names[i]);
    char path[1200];
    snprintf(path, sizeof path, "%s/clients", dir);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(path, 0755) != 0 && errno != EEXIST))
        return ordo__error_set(ORDO_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/server.key", dir);
    if (force || access(path, F_OK) != 0)
        if ((rc = write_pair(dir, "server", "server")) != 0) return rc;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/clients", dir);
        if ((rc = write_pair(path, names[i], names[i])) != 0) return rc;
    }
    return 0;
}

/* ---- the process's keys ------------------------------------------------------------- */

int ordo__curve_new(const char *dir, const char *client, ordo__curve_t **out)
{
    int rc = ordo__curve_check();
    if (rc) return rc;
    if (client && !valid_name(client))
        return ordo__error_set(ORDO_ERR_INVAL, "security.client '%s' is not a key name", client);
    ordo__curve_t *c = calloc(1, sizeof *c);
    if (!c) return ORDO_ERR_NOMEM;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/server.pub", dir);
    if ((rc = read_key(path, c->server_pub)) != 0) goto fail;
    if (client) {
        snprintf(path, sizeof path, "%s/clients/%s.key", dir, client);
        if ((rc = read_key(path, c->sec)) != 0) goto fail;
        if (zmq_curve_public(c->pub, c->sec) != 0) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: not a CURVE secret key", path);
            goto fail;
        }
    } else {
        snprintf(path, sizeof path, "%s/server.key", dir);
        if ((rc = read_key(path, c->server_sec)) != 0) goto fail;
        memcpy(c->sec, c->server_sec, sizeof c->sec);
        memcpy(c->pub, c->server_pub, sizeof c->pub);
    }
    *out = c;
    return 0;
fail:
    free(c);
    return rc;
}

/* ---- ZAP handler -------------------------------------------------------------------- */

/* key_listed: whether z85 is in dir/server.pub or one of dir/clients/\*.pub. The folder is
 * read at each handshake, so removing a .pub file shuts that key out of new connections. */
static bool key_listed(const ordo__curve_t *c, const char *z85)
{
    char key[Z85_KEY + 1], path[1400];
    if (!strcmp(z85, c->server_pub)) return true;
    snprintf(path, sizeof path, "%s/clients", c->dir);
    DIR *d = opendir(path);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".pub") != 0) continue;
        snprintf(path, sizeof path, "%s/clients/%s", c->dir, e->d_name);
        found = read_key(path, key) == 0 && !strcmp(key, z85);
    }
    closedir(d);
    return found;
}

static void zap_reply(void *s, zmq_msg_t *req_id, const char *status, const char *text)
{
    zmq_send(s, "1.0", 3, ZMQ_SNDMORE);
    zmq_msg_send(req_id, s, ZMQ_SNDMORE);
    zmq_send(s, status, 3, ZMQ_SNDMORE);
    zmq_send(s, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(s, "", 0, ZMQ_SNDMORE); /* user id */
    zmq_send(s, "", 0, 0);           /* metadata */
}

/* zap_answer handles one ZAP request (RFC 27: version, request id, domain, address,
 * identity, mechanism, credentials); false when the context is terminating */
static bool zap_answer(ordo__curve_t *c)
{
    enum { MAXF = 8 };
    zmq_msg_t f[MAXF];
    int n = 0, extra = 0;
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, c->zap, 0) < 0) {
            zmq_msg_close(&part);
            for (int i = 0; i < n; i++)
                zmq_msg_close(&f[i]);
            return errno != ETERM;
        }
        int more = zmq_msg_more(&part);
        if (n < MAXF) {
            zmq_msg_init(&f[n]);
            zmq_msg_move(&f[n++], &part);
        } else {
            extra++;
        }
        zmq_msg_close(&part);
        if (!more) break;
    }
    char addr[64] = "?", z85[Z85_KEY + 1] = "";
    if (n >= 4)
        snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[3]), (char *)zmq_msg_data(&f[3]));
    bool curve = n >= 7 && zmq_msg_size(&f[5]) == 5 && !memcmp(zmq_msg_data(&f[5]), "CURVE", 5);
    if (curve && zmq_msg_size(&f[6]) == 32) zmq_z85_encode(z85, zmq_msg_data(&f[6]), 32);
    if (n < 2) { /* not a request: a REP socket still owes an answer */
        zmq_msg_t empty;
        zmq_msg_init(&empty);
        zap_reply(c->zap, &empty, "500", "malformed ZAP request");
    } else if (!z85[0] || extra) {
        ORDO_WARN("security: refused a connection from %s: not a CURVE client", addr);
        zap_reply(c->zap, &f[1], "400", "CURVE only");
    } else if (!key_listed(c, z85)) {
        ORDO_WARN("security: refused a client at %s: its key %s is not in %s/clients", addr, z85,
                  c->dir);
        zap_reply(c->zap, &f[1], "400", "key not in the cluster's key folder");
    } else {
        ORDO_DEBUG("security: admitted the client at %s (key %s)", addr, z85);
        zap_reply(c->zap, &f[1], "200", "OK");
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
    return true;
}

static void *zap_main(void *arg)
{
    ordo__curve_t *c = arg;
    while (zap_answer(c)) {
    }
    zmq_close(c->zap);
    c->zap = NULL;
    return NULL;
}

int ordo__curve_listen(ordo__curve_t *c, void *ctx)
{
    if (!c->server_sec[0]) {
        char path[1200];
        snprintf(path, sizeof path, "%s/server.key", c->dir);
        int rc = read_key(path, c->server_sec);
        if (rc) return ordo__error_context(rc, "this process listens (CURVE server)");
    }
    if (c->zap_started) return 0;
    void *s = zmq_socket(ctx, ZMQ_REP);
    if (!s) return ordo__error_set(ORDO_ERR_IO, "zmq_socket: %s", zmq_strerror(errno));
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(s, "inproc://zeromq.zap.01") != 0) {
        int rc = ordo__error_set(ORDO_ERR_IO, "ZAP handler: bind: %s", zmq_strerror(errno));
        zmq_close(s);
        return rc;
    }
    c->zap = s;
    if (pthread_create(&c->zap_thread, NULL, zap_main, c) != 0) {
        zmq_close(s);
        c->zap = NULL;
        return ordo__error_set(ORDO_ERR_IO, "ZAP handler: pthread_create failed");
    }
    c->zap_started = true;
    return 0;
}

int ordo__curve_setup(const ordo__curve_t *c, void *z, bool listening)
{
    int one = 1, rc = 0;
    if (listening) {
        if (!c->server_sec[0])
            return ordo__error_set(ORDO_ERR_INVAL, "CURVE server socket before ordo__curve_listen");
        rc |= zmq_setsockopt(z, ZMQ_CURVE_SERVER, &one, sizeof one);
        rc |= zmq_setsockopt(z, ZMQ_CURVE_SECRETKEY, c->server_sec, Z85_KEY);
    } else {
        rc |= zmq_setsockopt(z, ZMQ_CURVE_SERVERKEY, c->server_pub, Z85_KEY);
        rc |= zmq_setsockopt(z, ZMQ_CURVE_PUBLICKEY, c->pub, Z85_KEY);
        rc |= zmq_setsockopt(z, ZMQ_CURVE_SECRETKEY, c->sec, Z85_KEY);
    }
    return rc ? ordo__error_set(ORDO_ERR_IO, "CURVE socket options: %s", zmq_strerror(errno)) : 0;
}

void ordo__curve_destroy(ordo__curve_t **cp)
{
    ordo__curve_t *c = *cp;
    if (!c) return;
    if (c->zap_started) pthread_join(c->zap_thread, NULL);
    memset(c->sec, 0, sizeof c->sec); /* no secret left in freed memory */
    memset(c->server_sec, 0, sizeof c->server_sec);
    free(c);
    *cp = NULL;
}
