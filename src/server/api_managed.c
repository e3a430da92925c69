/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Field ownership of the writes other than apply (xp_managed_update()): the manager is
 * ?fieldManager= (kubectl names its commands: kubectl-create, kubectl-client-side-apply,
 * kubectl-edit, kubectl-label, ...), else what kube-apiserver takes from the User-Agent, the part
 * before its first '/' ("curl/8.0" is "curl"), at most 128 bytes.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "internal.h"
#include "xpool/apischema.h"
#include "xpool/managedfields.h"

#define MANAGER_MAX 128

/* An apply patch records its own Apply entry (api_apply.c). */
static bool is_apply(const struct request *req)
{
        const char *type = request_header(req, "Content-Type");

        return type && strncasecmp(type, "application/apply-patch", 23) == 0;
}

static void manager_of(const struct request *req, char buf[static MANAGER_MAX + 1])
{
        const char *manager = request_query(req, "fieldManager");
        size_t len;

        if (!manager || !manager[0]) {
                const char *agent = request_header(req, "User-Agent");

                manager = agent ? agent : "";
                len = strcspn(manager, "/");
        } else {
                len = strlen(manager);
        }
        snprintf(
            buf, MANAGER_MAX + 1, "%.*s", (int)(len < MANAGER_MAX ? len : MANAGER_MAX), manager);
}

int managed_fields_record(const struct request *req,
                          const struct xp_kind *kind,
                          const json_t *live,
                          json_t *object)
{
        const struct xp_apischema *schema = NULL;
        const struct xp_apitype *type;
        char manager[MANAGER_MAX + 1], now[32], version[128];
        time_t t = time(NULL);
        struct tm tm;

        /* entries a client wrote, or an apply kept, are stored as kube-apiserver stores them */
        if (xp_managed_times_canonical(object) < 0)
                return -ENOMEM;
        if (is_apply(req) || xp_apischema_builtin(&schema, NULL) < 0)
                return 0;
        type = xp_apischema_find(schema, kind->kind);
        manager_of(req, manager);
        if (!type || !manager[0])
                return 0; /* a kind without an API schema, or no name to record */
        gmtime_r(&t, &tm);
        strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(version,
                 sizeof version,
                 "%s%s%s",
                 kind->group,
                 kind->group[0] ? "/" : "",
                 kind->version);
        return xp_managed_update(
            type,
            live,
            object,
            &(struct xp_apply_request){.manager = manager, .api_version = version, .now = now});
}
