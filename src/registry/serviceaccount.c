/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a ServiceAccount exists, for the admission of every pod create: read from the
 * namespace's accounts kept in a kind cache (kind_cache.c), not from the store each time.
 */
#include <errno.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"

int xp_registry_serviceaccount_exists(struct xp_registry *registry,
                                      const char *namespace,
                                      const char *name,
                                      struct xp_error *err)
{
        json_t *accounts = NULL;
        int r =
            kind_cache_list(&registry->serviceaccounts, registry->store, namespace, &accounts, err);

        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = 0; r == -ENOENT && i < json_array_size(accounts); i++)
                if (strcmp(xp_json_str_at(json_array_get(accounts, i), "metadata.name", ""),
                           name) == 0)
                        r = 0;
        json_decref(accounts);
        return r;
}
