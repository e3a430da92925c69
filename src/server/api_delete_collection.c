/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The deletecollection verb (DELETE on a collection's path, as the Python client's
 * delete_collection_namespaced_pod and `kubectl delete --all` on some paths use it): every object
 * the selectors match is deleted as one DELETE of it would be (the same DeleteOptions, pods
 * gracefully, finalizers honoured), and the answer is the list of them as each DELETE answered,
 * as kube-apiserver's generic store does.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "xpool/selector.h"
#include "xpool/store.h"

/* One object's DELETE: 1 with its answer appended, 0 with ret filled (its error), -errno. */
static int delete_one(const struct request *req,
                      const struct route *route,
                      const char *name,
                      json_t *deleted,
                      struct reply *ret)
{
        struct request one = *req;
        struct reply answer = {0};
        int r;

        one.name = name;
        r = handle_delete(&one, route, &answer);
        if (r >= 0 && answer.code == 200 && answer.body)
                r = json_array_append(deleted, answer.body) < 0 ? -ENOMEM : 1;
        else if (r >= 0 && answer.code == 404)
                r = 1; /* gone meanwhile: nothing to report, as a list a moment later */
        else if (r >= 0) {
                *ret = answer;
                return 0;
        }
        json_decref(answer.body);
        free(answer.text);
        return r;
}

int handle_delete_collection(const struct request *req,
                             const struct route *route,
                             struct reply *ret)
{
        const struct xp_kind *kind = route->kind;
        struct xp_label_selector *labels = NULL;
        struct xp_field_selector *fields = NULL;
        json_t *items = NULL, *deleted, *item;
        struct xp_error err = {0};
        char rv[24];
        uint64_t version;
        size_t i;
        int r;

        /* as kube-apiserver: a namespace goes only by name (its deletion is a process) */
        if (strcmp(kind->plural, "namespaces") == 0)
                return reply_status(
                    ret,
                    405,
                    "MethodNotAllowed",
                    NULL,
                    NULL,
                    "the server does not allow this method on the requested resource");
        deleted = json_array();
        if (!deleted)
                return -ENOMEM;
        r = selectors_parse(req, kind, &labels, &fields, ret);
        if (r > 0) {
                r = xp_store_list(req->api->store,
                                  kind->plural,
                                  store_namespace(req, kind),
                                  &items,
                                  &version,
                                  &err);
                if (r < 0)
                        r = reply_store_error(ret, r, kind, NULL, &err);
                else
                        r = 1;
        }
        json_array_foreach(items, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));

                if (r <= 0)
                        break;
                if (name && selectors_match(labels, fields, item))
                        r = delete_one(req, route, name, deleted, ret);
        }
        xp_label_selector_free(labels);
        xp_field_selector_free(fields);
        json_decref(items);
        if (r <= 0) {
                json_decref(deleted);
                return r;
        }
        xp_registry_version_format(version, rv);
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:{s:s}, s:o}",
                                    "kind",
                                    kind->list_kind,
                                    "apiVersion",
                                    kind->api_version,
                                    "metadata",
                                    "resourceVersion",
                                    rv,
                                    "items",
                                    deleted));
}
