/* curve: ZeroMQ CURVE security for ordo's sockets. It writes and reads the cluster's key
 * folder (server.key/.pub: the pair of every listening process, the scheduler and the
 * servers; clients/NAME.key/.pub: one pair per client, the .pub files being the keys let
 * in), makes sockets CURVE servers or clients, and runs the ZAP handler (a thread answering
 * inproc://zeromq.zap.01) that admits only the listed public keys and logs every refusal.
 * Key files hold Z85 text; secret files are written mode 0600. */
#ifndef ORDO_CURVE_H
#define ORDO_CURVE_H

#include <stdbool.h>

typedef struct ordo__curve ordo__curve_t;

/* ordo__curve_check returns 0 when the libzmq in use supports CURVE, else ORDO_ERR_INVAL with a
 * message saying so. */
int ordo__curve_check(void);

/* ordo__curve_keygen writes dir/server.key and server.pub (kept when they exist, unless
 * force) and, for each of the n names, dir/clients/NAME.key and NAME.pub (replaced). */
int ordo__curve_keygen(const char *dir, const char *const *names, int n, bool force);

/* ordo__curve_new reads dir/server.pub and this process's pair: dir/clients/CLIENT.key, or
 * with client NULL the server pair (dir/server.key). Errors name the file and why. */
int ordo__curve_new(const char *dir, const char *client, ordo__curve_t **out);

/* ordo__curve_destroy stops the ZAP thread (the ZeroMQ context must have been terminated,
 * which ends it) and frees c; NULL-safe, sets *c = NULL. */
void ordo__curve_destroy(ordo__curve_t **c);

/* ordo__curve_listen prepares c for a listening socket on ZeroMQ context ctx: reads the
 * server pair if not yet read and, the first time, binds the ZAP handler on ctx and starts
 * its thread (before any socket binds, or ZeroMQ would let every client in). */
int ordo__curve_listen(ordo__curve_t *c, void *ctx);

/* ordo__curve_setup makes ZeroMQ socket z a CURVE server (listening: needs
 * ordo__curve_listen first) or a client of the cluster's server key. */
int ordo__curve_setup(const ordo__curve_t *c, void *z, bool listening);

#endif
