/* SPDX-License-Identifier: Apache-2.0 */
/* A file of the registry that calls the server (declared here: its header is not on the
 * registry's include path). The server is above the registry, so the registry's link check
 * must fail (tests/layers/check.sh). */
#include <stddef.h>

struct xp_server;
struct xp_server_options;
struct xp_error;
int xp_server_new(const struct xp_server_options *options,
                  struct xp_server **ret,
                  struct xp_error *err);

int probe_call_up(void);
int probe_call_up(void)
{
        struct xp_server *server = NULL;

        return xp_server_new(NULL, &server, NULL);
}
