/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A namespace's ServiceAccount, for the admission of every pod create (whether it exists, and its
 * automountServiceAccountToken and imagePullSecrets): read from the namespace's accounts kept in
 * a kind cache (kind_cache.c), not from the store each time.
 */
#include <errno.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"

int xp_registry_serviceaccount_get(struct xp_registry *registry,
                                   const char *namespace,
                                   const char *name,
                                   json_t **ret_account,
                                   struct xp_error *err)
{
        json_t *accounts = NULL, *found = NULL;
        int r =
            kind_cache_list(&registry->serviceaccounts, registry->store, namespace, &accounts, err);

        if (r < 0)
                return r;
        for (size_t i = 0; !found && i < json_array_size(accounts); i++)
                if (strcmp(xp_json_str_at(json_array_get(accounts, i), "metadata.name", ""),
                           name) == 0)
                        found = json_array_get(accounts, i);
        if (found && ret_account)
                *ret_account = json_incref(found);
        json_decref(accounts);
        return found ? 0 : -ENOENT;
}
