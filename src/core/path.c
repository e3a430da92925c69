/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "xpool/path.h"
#include "xpool/strutil.h"

static void push(struct xp_path *path, struct xp_path_segment segment)
{
        if (path->depth < XP_PATH_MAX_DEPTH)
                path->segments[path->depth] = segment;
        path->depth++;
}

void xp_path_push_field(struct xp_path *path, const char *name)
{
        push(path, (struct xp_path_segment){.kind = XP_PATH_FIELD, .name = name});
}

void xp_path_push_index(struct xp_path *path, size_t index)
{
        push(path, (struct xp_path_segment){.kind = XP_PATH_INDEX, .index = index});
}

void xp_path_push_key(struct xp_path *path, const char *key)
{
        push(path, (struct xp_path_segment){.kind = XP_PATH_KEY, .name = key});
}

void xp_path_pop(struct xp_path *path)
{
        if (path->depth > 0)
                path->depth--;
}

static size_t recorded_depth(const struct xp_path *path)
{
        return path->depth < XP_PATH_MAX_DEPTH ? path->depth : XP_PATH_MAX_DEPTH;
}

char *xp_path_format(const struct xp_path *path, char *buf, size_t size)
{
        size_t used = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
        for (size_t i = 0; i < recorded_depth(path) && used < size; i++) {
                const struct xp_path_segment *s = &path->segments[i];
                int n;

                switch (s->kind) {
                case XP_PATH_FIELD:
                        n = snprintf(buf + used, size - used, "%s%s", used ? "." : "", s->name);
                        break;
                case XP_PATH_INDEX:
                        n = snprintf(buf + used, size - used, "[%zu]", s->index);
                        break;
                default: {
                        char shown[XP_QUOTE_MAX];

                        /* keys come from users: shown escaped and cut like quoted values */
                        n = snprintf(buf + used, size - used, "[%s]", xp_escape(s->name, shown));
                        break;
                }
                }
                if (n < 0)
                        break;
                used += (size_t)n;
        }
        return buf;
}

int xp_json_pointer_append(char *buf, size_t size, const char *token)
{
        size_t start = strlen(buf);
        size_t used = start;

        if (used + 1 >= size)
                return -ENAMETOOLONG;
        buf[used++] = '/';
        for (const char *p = token; *p; p++) {
                const char *piece = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
                size_t len = piece ? 2 : 1;

                if (used + len >= size) {
                        buf[start] = '\0';
                        return -ENAMETOOLONG;
                }
                if (piece)
                        memcpy(buf + used, piece, 2);
                else
                        buf[used] = *p;
                used += len;
        }
        buf[used] = '\0';
        return 0;
}

char *xp_path_pointer(const struct xp_path *path, char *buf, size_t size)
{
        if (size == 0)
                return buf;
        buf[0] = '\0';
        for (size_t i = 0; i < recorded_depth(path); i++) {
                const struct xp_path_segment *s = &path->segments[i];
                char index[24];

                if (s->kind == XP_PATH_INDEX)
                        snprintf(index, sizeof(index), "%zu", s->index);
                if (xp_json_pointer_append(buf, size, s->kind == XP_PATH_INDEX ? index : s->name) <
                    0)
                        break;
        }
        return buf;
}
