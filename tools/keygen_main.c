/* keygen_main: the `ordo-keygen` command line. It writes a cluster's CURVE key folder
 * (common/curve.h): the server pair the scheduler and servers share, and one pair per
 * client name. Errors go to stderr as one line (exit 2 on usage, 1 otherwise). */
#include "common/curve.h"
#include "common/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: ordo-keygen [--force] DIR [CLIENT ...]\n"
    "  writes DIR/server.key and server.pub (the scheduler's and servers' pair; an existing\n"
    "  pair is kept unless --force) and DIR/clients/CLIENT.key and CLIENT.pub for each client\n"
    "  (default: one client named worker). Secret files are mode 0600. The scheduler and\n"
    "  servers let in only the keys of DIR/clients/*.pub; remove a .pub to shut a client out.\n"
    "  Then run with [security] curve = true, keys = DIR (docs/security.md).\n";

int main(int argc, char **argv)
{
    bool force = false;
    const char *dir = NULL, *names[256];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("ordo-keygen %s\n", ORDO_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--force")) {
            force = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "ordo-keygen: unknown option %s\n", argv[i]);
            return 2;
        } else if (!dir) {
            dir = argv[i];
        } else if (n < 256) {
            names[n++] = argv[i];
        } else {
            fprintf(stderr, "ordo-keygen: at most 256 clients at once\n");
            return 2;
        }
    }
    if (!dir) {
        fputs(usage, stderr);
        return 2;
    }
    if (n == 0) names[n++] = "worker";
    int rc = ordo__curve_keygen(dir, names, n, force);
    if (rc) {
        fprintf(stderr, "ordo-keygen: %s\n", ordo__error_text(rc));
        return 1;
    }
    printf("ordo-keygen: wrote %s/server.pub%s and %d client pair%s in %s/clients\n", dir,
           force ? " (new)" : "", n, n > 1 ? "s" : "", dir);
    return 0;
}
