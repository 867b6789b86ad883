/* push: makes a push path from its table, and frees it (push_paths.c: which table). */
#include "client/push.h"

#include <stdlib.h>

int ordo__push_new(const ordo__push_ops_t *ops, ordo__ps_t *ps, ordo__push_t **out)
{
    ordo__push_t *p = NULL;
    int rc = ops->create(ps, &p);
    if (rc) return rc;
    p->ops = ops;
    p->ps = ps;
    *out = p;
    return 0;
}

void ordo__push_destroy(ordo__push_t **pp)
{
    ordo__push_t *p = *pp;
    if (!p) return;
    p->ops->destroy(p);
    *pp = NULL;
}
