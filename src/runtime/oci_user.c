/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The user an OCI container runs as, resolved as containerd resolves it for Kubernetes: the
 * pod's runAsUser (and runAsGroup, else the primary group /etc/passwd gives that uid, else 0),
 * else the image's User ("uid", "uid:gid", "name", "name:group"), names looked up in the
 * container's own /etc/passwd and /etc/group (read inside its root file system: a symbolic link
 * there cannot lead out); the groups /etc/group lists the user in and the pod's
 * supplementalGroups as additional groups; HOME from /etc/passwd when the env has none.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_internal.h"
#include "xpool/fileio.h"

#define ID_FILE_MAX (4 * 1024 * 1024)

struct user {
        uid_t uid;
        gid_t gid;
        bool found; /* an /etc/passwd entry names the uid */
        char name[256], home[1024];
        gid_t gids[64];
        size_t n_gids;
};

/* The file at path (absolute, in the container), read below rootfs; NULL when missing. */
static char *read_in_root(const char *rootfs, const char *path)
{
        struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                               .resolve = RESOLVE_IN_ROOT};
        _cleanup_close_ int root = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = -1;
        char *data = NULL, *text;
        size_t size = 0;

        if (root < 0)
                return NULL;
        fd = (int)syscall(SYS_openat2, root, path + 1, &how, sizeof(how));
        if (fd < 0 || xp_read_fd_all(fd, ID_FILE_MAX, &data, &size) < 0)
                return NULL;
        text = strndup(data ? data : "", size);
        free(data);
        return text;
}

/* Splits a passwd or group line into its ':' fields (in place); how many. */
static size_t fields(char *line, char **f, size_t max)
{
        size_t n = 0;

        while (n < max) {
                f[n++] = line;
                line = strchr(line, ':');
                if (!line)
                        break;
                *line++ = '\0';
        }
        return n;
}

static bool numeric(const char *s, unsigned long *ret)
{
        char *end;

        if (!*s || strspn(s, "0123456789") != strlen(s))
                return false;
        errno = 0;
        *ret = strtoul(s, &end, 10);
        return errno == 0 && *ret < 4294967295UL;
}

/* The passwd entry of name (or of uid when name is NULL) into u. */
static bool passwd_find(const char *passwd, const char *name, uid_t uid, struct user *u)
{
        _cleanup_free_ char *copy = passwd ? strdup(passwd) : NULL;
        char *save = NULL, *f[7];
        unsigned long id, gid;

        for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save)) {
                if (fields(line, f, 7) < 7 || !numeric(f[2], &id) || !numeric(f[3], &gid))
                        continue;
                if (name ? strcmp(f[0], name) != 0 : id != uid)
                        continue;
                u->uid = (uid_t)id;
                u->gid = (gid_t)gid;
                u->found = true;
                snprintf(u->name, sizeof(u->name), "%s", f[0]);
                snprintf(u->home, sizeof(u->home), "%s", f[5]);
                return true;
        }
        return false;
}

/* The gid of group name; false when the group file has none. */
static bool group_find(const char *group, const char *name, gid_t *ret)
{
        _cleanup_free_ char *copy = group ? strdup(group) : NULL;
        char *save = NULL, *f[4];
        unsigned long gid;

        for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save))
                if (fields(line, f, 4) >= 3 && strcmp(f[0], name) == 0 && numeric(f[2], &gid)) {
                        *ret = (gid_t)gid;
                        return true;
                }
        return false;
}

static void add_gid(struct user *u, gid_t gid)
{
        for (size_t i = 0; i < u->n_gids; i++)
                if (u->gids[i] == gid)
                        return;
        if (gid != u->gid && u->n_gids < XP_ELEMENTSOF(u->gids))
                u->gids[u->n_gids++] = gid;
}

/* The groups that list the user's name as a member. */
static void member_gids(const char *group, struct user *u)
{
        _cleanup_free_ char *copy = group && u->found ? strdup(group) : NULL;
        char *save = NULL, *f[4];
        unsigned long gid;

        for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save)) {
                char *msave = NULL;

                if (fields(line, f, 4) < 4 || !numeric(f[2], &gid))
                        continue;
                for (char *m = strtok_r(f[3], ",", &msave); m; m = strtok_r(NULL, ",", &msave))
                        if (strcmp(m, u->name) == 0)
                                add_gid(u, (gid_t)gid);
        }
}

/* The image's User text ("name:group", ...) into u; -ENOENT with containerd's message. */
static int image_user(
    const char *text, const char *passwd, const char *group, struct user *u, struct xp_error *err)
{
        char who[256], *colon;
        unsigned long id;

        snprintf(who, sizeof(who), "%s", text);
        colon = strchr(who, ':');
        if (colon)
                *colon++ = '\0';
        if (numeric(who, &id)) {
                if (!passwd_find(passwd, NULL, (uid_t)id, u)) {
                        u->uid = (uid_t)id;
                        u->gid = 0;
                }
        } else if (!passwd_find(passwd, who, 0, u)) {
                return xp_errorf(err,
                                 -ENOENT,
                                 "unable to find user %s: no matching entries in passwd file",
                                 who);
        }
        if (!colon)
                return 0;
        if (numeric(colon, &id))
                u->gid = (gid_t)id;
        else if (!group_find(group, colon, &u->gid))
                return xp_errorf(err,
                                 -ENOENT,
                                 "unable to find group %s: no matching entries in group file",
                                 colon);
        return 0;
}

static int resolve(
    json_t *spec_user, const char *passwd, const char *group, struct user *u, struct xp_error *err)
{
        const char *text = json_string_value(json_object_get(spec_user, "image_user"));
        json_t *sup = json_object_get(spec_user, "supplemental"), *g;
        size_t i;
        int r = 0;

        if (json_is_true(json_object_get(spec_user, "uid_set"))) {
                u->uid = (uid_t)json_integer_value(json_object_get(spec_user, "uid"));
                if (!passwd_find(passwd, NULL, u->uid, u))
                        u->gid = 0;
        } else if (text && *text) {
                r = image_user(text, passwd, group, u, err);
        } else {
                (void)passwd_find(passwd, NULL, 0, u);
        }
        if (r < 0)
                return r;
        if (json_is_true(json_object_get(spec_user, "gid_set")))
                u->gid = (gid_t)json_integer_value(json_object_get(spec_user, "gid"));
        member_gids(group, u);
        json_array_foreach(sup, i, g) add_gid(u, (gid_t)json_integer_value(g));
        return 0;
}

/* HOME from /etc/passwd ("/" without an entry), unless the env sets it. */
static int set_home(json_t *process, const struct user *u)
{
        json_t *env = json_object_get(process, "env"), *e;
        _cleanup_free_ char *home = NULL;
        size_t i;

        json_array_foreach(env, i, e)
        {
                if (strncmp(json_string_value(e), "HOME=", 5) == 0)
                        return 0;
        }
        if (asprintf(&home, "HOME=%s", u->found && *u->home ? u->home : "/") < 0)
                return -ENOMEM;
        return json_array_append_new(env, json_string(home));
}

int oci_shim_user(struct shim *s, const char *rootfs, json_t *config, struct xp_error *err)
{
        _cleanup_free_ char *passwd = read_in_root(rootfs, "/etc/passwd");
        _cleanup_free_ char *group = read_in_root(rootfs, "/etc/group");
        json_t *process = json_object_get(config, "process"), *gids;
        struct user u = {0};
        int r;

        r = resolve(json_object_get(s->oci, "user"), passwd, group, &u, err);
        if (r < 0)
                return r;
        gids = json_array();
        for (size_t i = 0; gids && i < u.n_gids; i++)
                json_array_append_new(gids, json_integer(u.gids[i]));
        if (!gids ||
            json_object_set_new(process,
                                "user",
                                json_pack("{s:I, s:I, s:o}",
                                          "uid",
                                          (json_int_t)u.uid,
                                          "gid",
                                          (json_int_t)u.gid,
                                          "additionalGids",
                                          gids)) < 0 ||
            set_home(process, &u) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return 0;
}
