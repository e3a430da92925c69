/* SPDX-License-Identifier: Apache-2.0 */
/* The autoscaling/v1 Scale of an object whose kind declares a scale subresource (xpool/doc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/doc.h"

/* The status.selector of a Scale: a string path as it is, a LabelSelector printed. */
static int scale_selector(const struct xp_scale_paths *paths, const json_t *object, char **ret)
{
        const json_t *v = paths->label_selector ? xp_json_at(object, paths->label_selector) : NULL;

        if (json_is_string(v)) {
                *ret = strdup(json_string_value(v));
                return *ret ? 0 : -ENOMEM;
        }
        return xp_json_label_selector_string(v, ret);
}

static json_t *scale_json(const struct xp_kind *kind, const json_t *object)
{
        const struct xp_scale_paths *paths = kind->scale;
        const json_t *meta = json_object_get(object, "metadata");
        _cleanup_free_ char *selector = NULL;
        json_t *scale, *m;

        if (scale_selector(paths, object, &selector) < 0)
                return NULL;
        m = json_object();
        for (const char *const *key =
                 (const char *const[]){
                     "name", "namespace", "uid", "resourceVersion", "creationTimestamp", NULL};
             m && *key;
             key++) {
                json_t *v = json_object_get(meta, *key);

                if (v && json_object_set(m, *key, v) < 0) {
                        json_decref(m);
                        m = NULL;
                }
        }
        scale = json_pack("{s:s, s:s, s:o, s:{s:I}, s:{s:I}}",
                          "kind",
                          "Scale",
                          "apiVersion",
                          "autoscaling/v1",
                          "metadata",
                          m,
                          "spec",
                          "replicas",
                          (json_int_t)xp_json_int_at(object, paths->spec_replicas, 0),
                          "status",
                          "replicas",
                          (json_int_t)xp_json_int_at(object, paths->status_replicas, 0));
        if (scale && selector[0] && xp_json_set_str_at(scale, "status.selector", selector) < 0) {
                json_decref(scale);
                return NULL;
        }
        return scale;
}

int xp_doc_scale(const struct xp_kind *kind, const json_t *object, json_t **ret)
{
        json_t *scale;

        if (!kind->scale)
                return -EINVAL;
        scale = scale_json(kind, object);
        if (!scale)
                return -ENOMEM;
        *ret = scale;
        return 0;
}
