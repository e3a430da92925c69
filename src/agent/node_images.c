/* SPDX-License-Identifier: Apache-2.0 */
/* The Node's status.images, as the kubelet fills it from its image service. */
#include <stdlib.h>
#include <string.h>

#include "pull.h"

#define NODE_IMAGES_MAX      50 /* the kubelet's nodeStatusMaxImages */
#define NODE_IMAGE_NAMES_MAX 5  /* and its maxNamesPerImageInNodeStatus */

static int by_size(const void *a, const void *b)
{
        const struct xp_image *x = *(struct xp_image *const *)a, *y = *(struct xp_image *const *)b;

        return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static json_t *image_json(const struct xp_image *img)
{
        json_t *names = json_array();
        size_t n = 0;

        /* repo@digest names first, then tags, as the kubelet lists them */
        for (int pass = 0; names && pass < 2; pass++)
                for (char **name = img->names; *name && n < NODE_IMAGE_NAMES_MAX; name++)
                        if ((strchr(*name, '@') != NULL) == (pass == 0) &&
                            json_array_append_new(names, json_string(*name)) == 0)
                                n++;
        if (names && n == 0)
                json_array_append_new(names, json_string(img->id));
        return names ? json_pack("{s:o, s:I}", "names", names, "sizeBytes", (json_int_t)img->size)
                     : NULL;
}

json_t *xp_agent_node_images(struct xp_image_store *store)
{
        struct xp_image **images = NULL;
        json_t *out;
        size_t n = 0;

        if (!store || xp_image_list(store, &images, &n, NULL) < 0)
                return NULL;
        if (n > 1)
                qsort(images, n, sizeof(*images), by_size);
        out = json_array();
        for (size_t i = 0; out && i < n && i < NODE_IMAGES_MAX; i++) {
                json_t *j = image_json(images[i]);

                if (!j || json_array_append_new(out, j) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        xp_image_list_free(images, n);
        return out;
}
