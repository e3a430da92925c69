/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "xpool/atomic_file.h"
#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/names.h"
#include "xpool/random.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define TOKENS_FILE_MAX (4 * 1024 * 1024)
#define HASH_LEN        32
#define SECRET_LEN      32 /* bytes of getrandom(): 256 bits */
#define ID_BYTES        (XP_TOKEN_ID_LEN / 2)
#define TOKEN_TEXT_LEN  (4 + XP_TOKEN_ID_LEN + 1 + 2 * SECRET_LEN) /* xpa_<id>.<secret> */
#define HEADER_MAX      1024
#define RELOAD_INTERVAL 1 /* seconds between checks of the tokens file */

struct token {
        char id[32];
        uint8_t hash[HASH_LEN];
        enum xp_token_role role;
        char subject[XP_TOKEN_SUBJECT_MAX + 1];
        char created[40];
        uint64_t last_used; /* auth->uses when it last authenticated; 0: never (in memory only) */
};

struct file_id {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        bool exists;
};

struct auth {
        char *path;
        pthread_mutex_t lock; /* guards everything below */
        struct token *tokens;
        size_t n_tokens;
        struct file_id loaded;   /* the file the table came from */
        struct timespec checked; /* CLOCK_MONOTONIC of the last stat() */
        char broken[256];        /* why the table is empty after a failed reload; "" when fine */
        uint64_t uses;           /* successful authentications: orders tokens by last use */
};

static const char *const role_names[] = {
    [XP_TOKEN_ADMIN] = "admin",
    [XP_TOKEN_READER] = "reader",
    [XP_TOKEN_NODE] = "node",
};

static const char role_letters[] = {
    [XP_TOKEN_ADMIN] = 'a',
    [XP_TOKEN_READER] = 'r',
    [XP_TOKEN_NODE] = 'n',
};

static const char *const verb_names[] = {
    [AUTH_GET] = "get",
    [AUTH_LIST] = "list",
    [AUTH_WATCH] = "watch",
    [AUTH_CREATE] = "create",
    [AUTH_UPDATE] = "update",
    [AUTH_PATCH] = "patch",
    [AUTH_DELETE] = "delete",
};

const char *xp_token_role_to_string(enum xp_token_role role)
{
        if ((size_t)role >= XP_ELEMENTSOF(role_names))
                return NULL;
        return role_names[role];
}

int xp_token_role_from_string(const char *s)
{
        for (size_t i = 1; i < XP_ELEMENTSOF(role_names); i++)
                if (s && strcmp(s, role_names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

const char *auth_verb_to_string(enum auth_verb verb)
{
        if ((size_t)verb >= XP_ELEMENTSOF(verb_names))
                return NULL;
        return verb_names[verb];
}

static int sha256(const char *text, size_t len, uint8_t out[static HASH_LEN])
{
        return gnutls_hash_fast(GNUTLS_DIG_SHA256, text, len, out) < 0 ? -EIO : 0;
}

/* Same time whatever the contents, so a client cannot learn a hash byte by byte. */
static bool equal_constant_time(const uint8_t *a, const uint8_t *b, size_t len)
{
        volatile uint8_t diff = 0;

        for (size_t i = 0; i < len; i++)
                diff |= a[i] ^ b[i];
        return diff == 0;
}

static bool is_label_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
}

static int check_subject(enum xp_token_role role, const char *subject, struct xp_error *err)
{
        size_t len;

        if (!subject || !subject[0])
                return xp_errorf(err, -EINVAL, "the subject is empty");
        len = strlen(subject);
        if (len > XP_TOKEN_SUBJECT_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "the subject is %zu characters, at most %d",
                                 len,
                                 XP_TOKEN_SUBJECT_MAX);
        if (role == XP_TOKEN_NODE) {
                int r = xp_check_dns1123_subdomain(subject, err);

                if (r < 0)
                        return xp_error_prefix(err, r, "node name '%s'", subject);
                return 0;
        }
        for (size_t i = 0; i < len; i++)
                if (!is_label_char(subject[i]))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "subject '%s': character %zu is not a letter, digit or one of ._:@-",
                            subject,
                            i + 1);
        return 0;
}

static int check_id(const char *id)
{
        size_t len = strlen(id);

        if (len == 0 || len >= sizeof(((struct token *)NULL)->id))
                return -EINVAL;
        for (size_t i = 0; i < len; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
                        return -EINVAL;
        return 0;
}

static const struct token *find_token(const struct token *tokens, size_t n, const char *id)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(tokens[i].id, id) == 0)
                        return &tokens[i];
        return NULL;
}

/* One line, NUL-terminated and without its newline, into *ret. */
static int parse_line(char *line, struct token *ret, struct xp_error *err)
{
        char *fields[6];
        size_t n = 0;
        char *save = NULL;
        int64_t seconds;
        int role, r;

        for (char *f = strtok_r(line, " \t", &save); f; f = strtok_r(NULL, " \t", &save)) {
                if (n == XP_ELEMENTSOF(fields))
                        break;
                fields[n++] = f;
        }
        if (n != 5)
                return xp_errorf(err,
                                 -EINVAL,
                                 "expected 5 fields (id sha256 role subject created), found %s%zu",
                                 n > 5 ? "more than " : "",
                                 n > 5 ? (size_t)5 : n);
        if (check_id(fields[0]) < 0)
                return xp_errorf(
                    err, -EINVAL, "id '%s' is not 1 to 31 lowercase letters and digits", fields[0]);
        if (strlen(fields[1]) != 2 * HASH_LEN || !xp_hex_is_lower(fields[1], 2 * HASH_LEN) ||
            xp_hex_decode(fields[1], ret->hash, HASH_LEN) < 0)
                return xp_errorf(
                    err, -EINVAL, "token %s: the hash is not 64 lowercase hex digits", fields[0]);
        role = xp_token_role_from_string(fields[2]);
        if (role < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "token %s: role '%s' is not admin, reader or node",
                                 fields[0],
                                 fields[2]);
        r = check_subject(role, fields[3], err);
        if (r < 0)
                return xp_error_prefix(err, r, "token %s", fields[0]);
        if (strlen(fields[4]) >= sizeof(ret->created) ||
            xp_time_parse_rfc3339(fields[4], &seconds) < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "token %s: created '%s' is not an RFC 3339 time",
                                 fields[0],
                                 fields[4]);
        strcpy(ret->id, fields[0]);
        ret->role = role;
        strcpy(ret->subject, fields[3]);
        strcpy(ret->created, fields[4]);
        return 0;
}

static int parse_tokens(const char *path,
                        char *data,
                        size_t size,
                        struct token **ret,
                        size_t *ret_n,
                        struct xp_error *err)
{
        _cleanup_free_ struct token *tokens = NULL;
        size_t n = 0, allocated = 0;
        unsigned lineno = 0;
        char *p = data, *end = data + size;

        while (p < end) {
                char *nl = memchr(p, '\n', (size_t)(end - p));
                char *line = p;
                int r;

                lineno++;
                if (!nl)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s:%u: the last line has no newline (a cut write?)",
                                         path,
                                         lineno);
                *nl = '\0';
                p = nl + 1;
                if (memchr(line, '\0', (size_t)(nl - line)))
                        return xp_errorf(err, -EINVAL, "%s:%u: a NUL byte", path, lineno);
                if (line[0] == '\0' || line[0] == '#')
                        continue;
                if (n == XP_TOKENS_MAX)
                        return xp_errorf(
                            err, -E2BIG, "%s:%u: more than %d tokens", path, lineno, XP_TOKENS_MAX);
                if (n == allocated) {
                        size_t grown_n = allocated ? 2 * allocated : 16;
                        struct token *grown = reallocarray(tokens, grown_n, sizeof(*tokens));

                        if (!grown)
                                return -ENOMEM;
                        tokens = grown;
                        allocated = grown_n;
                }
                tokens[n] = (struct token){0};
                r = parse_line(line, &tokens[n], err);
                if (r < 0)
                        return xp_error_prefix(err, r, "%s:%u", path, lineno);
                if (find_token(tokens, n, tokens[n].id))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s:%u: token id %s appears twice",
                                         path,
                                         lineno,
                                         tokens[n].id);
                n++;
        }
        *ret = TAKE_PTR(tokens);
        *ret_n = n;
        return 0;
}

/* Reads and parses the tokens file; -ENOENT (with err set) when it does not exist. */
static int read_tokens(const char *path,
                       struct token **ret,
                       size_t *ret_n,
                       struct file_id *ret_id,
                       struct xp_error *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *data = NULL;
        struct token *tokens = NULL;
        struct stat st;
        size_t size, n = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open '%s': %m", path);
        if (fstat(fd, &st) < 0)
                return xp_errorf(err, -errno, "cannot stat '%s': %m", path);
        if (!S_ISREG(st.st_mode))
                return xp_errorf(err, -EINVAL, "'%s' is not a regular file", path);
        r = xp_read_fd_all(fd, TOKENS_FILE_MAX, &data, &size);
        if (r == -E2BIG)
                return xp_errorf(err, r, "'%s' is larger than %d bytes", path, TOKENS_FILE_MAX);
        if (r < 0)
                return xp_errorf(err, r, "cannot read '%s': %s", path, strerror(-r));
        r = parse_tokens(path, data, size, &tokens, &n, err);
        if (r < 0)
                return r;
        *ret = tokens;
        *ret_n = n;
        if (ret_id)
                *ret_id = (struct file_id){
                    .dev = st.st_dev,
                    .ino = st.st_ino,
                    .size = st.st_size,
                    .mtime = st.st_mtim,
                    .exists = true,
                };
        return 0;
}

static int format_tokens(const struct token *tokens, size_t n, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char hash[2 * HASH_LEN + 1];

                xp_hex_encode(tokens[i].hash, HASH_LEN, hash);
                fprintf(f,
                        "%s %s %s %s %s\n",
                        tokens[i].id,
                        hash,
                        role_names[tokens[i].role],
                        tokens[i].subject,
                        tokens[i].created);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        *ret_len = len;
        return 0;
}

static char *tokens_path(const char *data_dir)
{
        return xp_datadir_path(data_dir, XP_DATADIR_TOKENS);
}

/* Serializes writers: the tokens file itself is replaced by rename, so the lock is a sibling. */
static int lock_tokens(const char *data_dir, int *ret_fd, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;

        path = xp_datadir_path(data_dir, XP_DATADIR_TOKENS_LOCK);
        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open '%s': %m", path);
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return xp_errorf(err, -errno, "cannot lock '%s': %m", path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/*
 * The writers' common path. With only_if_absent, adds the token only when the file does not
 * exist yet (auth_open's bootstrap) and returns 0 with *ret_token NULL otherwise.
 */
static int token_add(const char *data_dir,
                     enum xp_token_role role,
                     const char *subject,
                     bool only_if_absent,
                     char **ret_token,
                     char **ret_id,
                     struct xp_error *err)
{
        _cleanup_free_ char *path = NULL, *text = NULL, *token = NULL, *id = NULL;
        _cleanup_free_ struct token *tokens = NULL;
        _cleanup_close_ int lock_fd = -1;
        struct token *grown, *t;
        uint8_t id_bytes[ID_BYTES], secret[SECRET_LEN];
        char secret_hex[2 * SECRET_LEN + 1];
        size_t n = 0, len;
        int r;

        if (!xp_token_role_to_string(role))
                return xp_errorf(err, -EINVAL, "unknown role %d", (int)role);
        r = check_subject(role, subject, err);
        if (r < 0)
                return r;
        path = tokens_path(data_dir);
        if (!path)
                return -ENOMEM;
        r = lock_tokens(data_dir, &lock_fd, err);
        if (r < 0)
                return r;
        r = read_tokens(path, &tokens, &n, NULL, err);
        if (r >= 0 && only_if_absent) {
                *ret_token = NULL;
                if (ret_id)
                        *ret_id = NULL;
                return 0;
        }
        if (r < 0 && r != -ENOENT)
                return r;
        if (r == -ENOENT)
                xp_error_clear(err); /* a first token: not an error */
        if (n >= XP_TOKENS_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "'%s' holds %d tokens already: revoke some first",
                                 path,
                                 XP_TOKENS_MAX);

        grown = reallocarray(tokens, n + 1, sizeof(*tokens));
        if (!grown)
                return -ENOMEM;
        tokens = grown;
        t = &tokens[n];
        *t = (struct token){.role = role};
        do {
                r = xp_random_bytes(id_bytes, sizeof(id_bytes));
                if (r < 0)
                        return xp_errorf(err, r, "getrandom: %s", strerror(-r));
                xp_hex_encode(id_bytes, sizeof(id_bytes), t->id);
        } while (find_token(tokens, n, t->id));
        r = xp_random_bytes(secret, sizeof(secret));
        if (r < 0)
                return xp_errorf(err, r, "getrandom: %s", strerror(-r));
        xp_hex_encode(secret, sizeof(secret), secret_hex);
        if (asprintf(&token, "xp%c_%s.%s", role_letters[role], t->id, secret_hex) < 0)
                return -ENOMEM;
        r = sha256(token, strlen(token), t->hash);
        if (r < 0)
                return xp_errorf(err, r, "cannot compute SHA-256");
        strcpy(t->subject, subject);
        r = xp_time_format_rfc3339((int64_t)time(NULL), t->created);
        if (r < 0)
                return xp_errorf(err, r, "the clock is outside the years 0-9999");
        id = strdup(t->id);
        if (!id)
                return -ENOMEM;

        r = format_tokens(tokens, n + 1, &text, &len);
        if (r < 0)
                return r;
        r = xp_write_file_atomic(path, text, len, 0600, err);
        if (r < 0)
                return r;
        *ret_token = TAKE_PTR(token);
        if (ret_id)
                *ret_id = TAKE_PTR(id);
        return 0;
}

int xp_token_create(const char *data_dir,
                    enum xp_token_role role,
                    const char *subject,
                    char **ret_token,
                    char **ret_id,
                    struct xp_error *err)
{
        return token_add(data_dir, role, subject, false, ret_token, ret_id, err);
}

int xp_token_revoke(const char *data_dir, const char *id, struct xp_error *err)
{
        _cleanup_free_ char *path = tokens_path(data_dir), *text = NULL;
        _cleanup_free_ struct token *tokens = NULL;
        _cleanup_close_ int lock_fd = -1;
        const struct token *t;
        size_t n = 0, len;
        int r;

        if (!path)
                return -ENOMEM;
        if (!id || check_id(id) < 0)
                return xp_errorf(
                    err, -EINVAL, "'%s' is not a token id (see `xpool token list`)", id ? id : "");
        r = lock_tokens(data_dir, &lock_fd, err);
        if (r < 0)
                return r;
        r = read_tokens(path, &tokens, &n, NULL, err);
        if (r < 0)
                return r;
        t = find_token(tokens, n, id);
        if (!t)
                return xp_errorf(
                    err, -ENOENT, "no token with id %s in '%s' (see `xpool token list`)", id, path);
        memmove(tokens + (t - tokens), t + 1, (size_t)(tokens + n - (t + 1)) * sizeof(*tokens));
        r = format_tokens(tokens, n - 1, &text, &len);
        if (r < 0)
                return r;
        return xp_write_file_atomic(path, text, len, 0600, err);
}

int xp_token_list(const char *data_dir,
                  struct xp_token_info **ret,
                  size_t *ret_n,
                  struct xp_error *err)
{
        _cleanup_free_ char *path = tokens_path(data_dir);
        _cleanup_free_ struct token *tokens = NULL;
        struct xp_token_info *infos;
        size_t n = 0;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_tokens(path, &tokens, &n, NULL, err);
        if (r < 0)
                return r;
        infos = calloc(n ? n : 1, sizeof(*infos));
        if (!infos)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                strcpy(infos[i].id, tokens[i].id);
                infos[i].role = tokens[i].role;
                strcpy(infos[i].subject, tokens[i].subject);
                strcpy(infos[i].created, tokens[i].created);
        }
        *ret = infos;
        *ret_n = n;
        return 0;
}

int auth_open(const char *data_dir,
              struct auth **ret,
              char **ret_new_admin_token,
              struct xp_error *err)
{
        _cleanup_(auth_freep) struct auth *auth = NULL;
        _cleanup_free_ char *admin_token = NULL;
        int r;

        auth = calloc(1, sizeof(*auth));
        if (!auth)
                return -ENOMEM;
        pthread_mutex_init(&auth->lock, NULL);
        auth->path = tokens_path(data_dir);
        if (!auth->path)
                return -ENOMEM;
        r = token_add(data_dir, XP_TOKEN_ADMIN, "admin", true, &admin_token, NULL, err);
        if (r < 0)
                return r;
        r = read_tokens(auth->path, &auth->tokens, &auth->n_tokens, &auth->loaded, err);
        if (r < 0)
                return r;
        clock_gettime(CLOCK_MONOTONIC, &auth->checked);
        *ret = TAKE_PTR(auth);
        *ret_new_admin_token = TAKE_PTR(admin_token);
        return 0;
}

void auth_free(struct auth *auth)
{
        if (!auth)
                return;
        pthread_mutex_destroy(&auth->lock);
        free(auth->tokens);
        free(auth->path);
        free(auth);
}

static bool same_file(const struct file_id *a, const struct stat *st)
{
        return a->exists && a->dev == st->st_dev && a->ino == st->st_ino &&
               a->size == st->st_size && a->mtime.tv_sec == st->st_mtim.tv_sec &&
               a->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Called with auth->lock held. */
static void maybe_reload(struct auth *auth)
{
        struct xp_error err = {0};
        struct token *tokens = NULL;
        struct file_id loaded = {0};
        struct timespec now;
        struct stat st;
        size_t n = 0;
        int r;

        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - auth->checked.tv_sec) * 1000000000LL + now.tv_nsec -
                auth->checked.tv_nsec <
            RELOAD_INTERVAL * 1000000000LL)
                return;
        auth->checked = now;
        if (stat(auth->path, &st) < 0) {
                r = xp_errorf(&err, -errno, "cannot stat '%s': %m", auth->path);
        } else {
                if (same_file(&auth->loaded, &st))
                        return;
                /* Remember the broken file too, so that it is parsed again only once changed. */
                loaded = (struct file_id){
                    .dev = st.st_dev,
                    .ino = st.st_ino,
                    .size = st.st_size,
                    .mtime = st.st_mtim,
                    .exists = true,
                };
                r = read_tokens(auth->path, &tokens, &n, &loaded, &err);
        }
        /* Which token a node used last survives the reload (auth_node_key prefers it). */
        for (size_t i = 0; i < n; i++) {
                const struct token *old = find_token(auth->tokens, auth->n_tokens, tokens[i].id);

                if (old)
                        tokens[i].last_used = old->last_used;
        }
        free(auth->tokens);
        auth->tokens = NULL;
        auth->n_tokens = 0;
        auth->loaded = loaded;
        auth->broken[0] = '\0';
        if (r < 0) {
                /* Fail closed: a revocation must not be undone by a broken or missing file. */
                /* Clients are told only that the file is broken; the operator sees where. */
                snprintf(auth->broken, sizeof(auth->broken), "%s", xp_error_message(&err));
                xp_debug("auth", "refusing every token: %s", auth->broken);
                return;
        }
        auth->tokens = tokens;
        auth->n_tokens = n;
}

/* Checks the shape xp<r>_<12 hex>.<64 hex>; returns the role or -EINVAL. */
static int parse_token_text(const char *token, size_t len, char id[static XP_TOKEN_ID_LEN + 1])
{
        int role = -EINVAL;

        if (len != TOKEN_TEXT_LEN || token[0] != 'x' || token[1] != 'p' || token[3] != '_' ||
            token[4 + XP_TOKEN_ID_LEN] != '.')
                return -EINVAL;
        for (size_t i = 1; i < XP_ELEMENTSOF(role_letters); i++)
                if (token[2] == role_letters[i])
                        role = (int)i;
        if (role < 0 || !xp_hex_is_lower(token + 4, XP_TOKEN_ID_LEN) ||
            !xp_hex_is_lower(token + 5 + XP_TOKEN_ID_LEN, 2 * SECRET_LEN))
                return -EINVAL;
        memcpy(id, token + 4, XP_TOKEN_ID_LEN);
        id[XP_TOKEN_ID_LEN] = '\0';
        return role;
}

int auth_authenticate(struct auth *auth,
                      const char *authorization,
                      struct auth_identity *ret,
                      struct xp_error *err)
{
        char id[XP_TOKEN_ID_LEN + 1];
        uint8_t hash[HASH_LEN];
        const struct token *t;
        const char *token;
        size_t len;
        int role, r;

        if (!authorization || !authorization[0])
                return xp_errorf(
                    err,
                    -EACCES,
                    "no bearer token: send the header `Authorization: Bearer <token>`");
        if (strnlen(authorization, HEADER_MAX + 1) > HEADER_MAX)
                return xp_errorf(
                    err, -EACCES, "the Authorization header is longer than %d bytes", HEADER_MAX);
        if (strncasecmp(authorization, "Bearer", 6) != 0 ||
            (authorization[6] != ' ' && authorization[6] != '\t'))
                return xp_errorf(err, -EACCES, "the Authorization header is not `Bearer <token>`");
        token = authorization + 6;
        token += strspn(token, " \t");
        len = strcspn(token, " \t");
        if (len == 0)
                return xp_errorf(
                    err, -EACCES, "the Authorization header has no token after `Bearer`");
        if (token[len + strspn(token + len, " \t")] != '\0')
                return xp_errorf(err, -EACCES, "the Authorization header has text after the token");
        role = parse_token_text(token, len, id);
        if (role < 0)
                return xp_errorf(
                    err,
                    -EACCES,
                    "malformed token: an xpool token looks like xpa_<12 hex digits>.<64 hex digits>");
        r = sha256(token, len, hash);
        if (r < 0)
                return xp_errorf(err, -EACCES, "cannot compute SHA-256");

        pthread_mutex_lock(&auth->lock);
        maybe_reload(auth);
        if (auth->broken[0]) {
                r = xp_errorf(
                    err,
                    -EACCES,
                    "the server's tokens file is missing or damaged, so every token is refused: run `xpool token list` on the server to see why");
                goto out;
        }
        t = find_token(auth->tokens, auth->n_tokens, id);
        if (!t || !equal_constant_time(t->hash, hash, HASH_LEN) || (int)t->role != role) {
                r = xp_errorf(err, -EACCES, "unknown or revoked token %s", id);
                goto out;
        }
        ret->role = t->role;
        strcpy(ret->subject, t->subject);
        strcpy(ret->token_id, t->id);
        ((struct token *)t)->last_used = ++auth->uses;
        r = 0;
out:
        pthread_mutex_unlock(&auth->lock);
        return r;
}

int auth_node_key(struct auth *auth,
                  const char *node,
                  char ret_id[static XP_TOKEN_ID_LEN + 1],
                  uint8_t ret_key[static AUTH_KEY_LEN])
{
        const struct token *best = NULL;
        int r = -ENOENT;

        pthread_mutex_lock(&auth->lock);
        maybe_reload(auth);
        for (size_t i = 0; i < auth->n_tokens; i++) {
                const struct token *t = &auth->tokens[i];

                if (t->role != XP_TOKEN_NODE || strcmp(t->subject, node) != 0)
                        continue;
                /* Ties (never used) go to the newest token: the file lists tokens in order. */
                if (!best || t->last_used >= best->last_used)
                        best = t;
        }
        if (best && strlen(best->id) == XP_TOKEN_ID_LEN) {
                strcpy(ret_id, best->id);
                memcpy(ret_key, best->hash, AUTH_KEY_LEN);
                r = 0;
        }
        pthread_mutex_unlock(&auth->lock);
        return r;
}

void auth_user_name(const struct auth_identity *who, char *buf, size_t size)
{
        const char *role = xp_token_role_to_string(who->role);

        if (who->service_account) {
                snprintf(buf, size, "system:serviceaccount:%s:%s", who->sa_namespace, who->subject);
                return;
        }

        snprintf(buf, size, "system:%s:%s", role ? role : "unknown", who->subject);
}

static bool is_read(enum auth_verb verb)
{
        return verb == AUTH_GET || verb == AUTH_LIST || verb == AUTH_WATCH;
}

static bool is_write(enum auth_verb verb)
{
        return verb == AUTH_CREATE || verb == AUTH_UPDATE || verb == AUTH_PATCH;
}

static bool streq(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

static bool core(const struct auth_request *req)
{
        return !req->group || !req->group[0];
}

/* Secrets are the admin's: Kubernetes' view role leaves them out, and a node reads only those
 * its own pods name (the node authorizer's rule). */
static bool secret(const struct auth_request *req)
{
        return core(req) && streq(req->resource, "secrets");
}

/* What the node authorizer gives a node only through its pods: Secrets and ConfigMaps. */
static bool pod_config(const struct auth_request *req)
{
        return secret(req) || (core(req) && streq(req->resource, "configmaps"));
}

static enum auth_decision authorize_node(const char *node, const struct auth_request *req)
{
        const char *sub = req->subresource;

        if (!req->resource)
                return is_read(req->verb) ? AUTH_ALLOW : AUTH_DENY;
        if (pod_config(req))
                return req->verb == AUTH_GET && req->name && !sub ? AUTH_ALLOW_IF_REFERENCED
                                                                  : AUTH_DENY;
        /* the agent's tokens for projected volumes: TokenRequest checks that the token is bound
         * to a pod of this node (api_token.c), as Kubernetes' NodeRestriction */
        if (core(req) && streq(req->resource, "serviceaccounts") && streq(sub, "token"))
                return req->verb == AUTH_CREATE && req->name ? AUTH_ALLOW : AUTH_DENY;
        if (core(req) && streq(req->resource, "pods")) {
                if (streq(sub, "log"))
                        return req->verb == AUTH_GET ? AUTH_ALLOW_IF_POD_ON_NODE : AUTH_DENY;
                if (streq(sub, "status") && (req->verb == AUTH_UPDATE || req->verb == AUTH_PATCH))
                        return AUTH_ALLOW_IF_POD_ON_NODE;
                if (!sub && req->verb == AUTH_DELETE && req->name)
                        return AUTH_ALLOW_IF_POD_ON_NODE;
        }
        if (is_read(req->verb))
                return AUTH_ALLOW;
        if (core(req) && streq(req->resource, "nodes") && (!sub || streq(sub, "status")))
                return is_write(req->verb) && streq(req->name, node) ? AUTH_ALLOW : AUTH_DENY;
        if (streq(req->group, "coordination.k8s.io") && streq(req->resource, "leases") && !sub)
                return (is_write(req->verb) || req->verb == AUTH_DELETE) &&
                               streq(req->namespace, "kube-node-lease") && streq(req->name, node)
                           ? AUTH_ALLOW
                           : AUTH_DENY;
        if (core(req) && streq(req->resource, "events") && !sub)
                return is_write(req->verb) ? AUTH_ALLOW : AUTH_DENY;
        /* its serving certificate: the handler signs only the node's own names (api_csr.c) */
        if (streq(req->group, "certificates.k8s.io") &&
            streq(req->resource, "certificatesigningrequests") && !sub)
                return req->verb == AUTH_CREATE ? AUTH_ALLOW : AUTH_DENY;
        return AUTH_DENY;
}

static void forbidden(const struct auth_identity *who,
                      const struct auth_request *req,
                      char *reason,
                      size_t size)
{
        const char *verb = auth_verb_to_string(req->verb), *group = req->group ? req->group : "";
        char user[XP_TOKEN_SUBJECT_MAX + 32], resource[256], qualified[512], scope[300];

        if (size == 0)
                return;
        auth_user_name(who, user, sizeof(user));
        if (!verb)
                verb = "access";
        if (!req->resource) {
                snprintf(reason,
                         size,
                         "forbidden: User \"%s\" cannot %s path \"%s\"",
                         user,
                         verb,
                         req->path ? req->path : "");
                return;
        }
        snprintf(resource,
                 sizeof(resource),
                 "%s%s%s",
                 req->resource,
                 req->subresource ? "/" : "",
                 req->subresource ? req->subresource : "");
        /* Kubernetes names the resource with its group (leases.coordination.k8s.io) up front. */
        snprintf(qualified, sizeof(qualified), "%s%s%s", req->resource, group[0] ? "." : "", group);
        if (req->namespace)
                snprintf(scope, sizeof(scope), "in the namespace \"%s\"", req->namespace);
        else
                snprintf(scope, sizeof(scope), "at the cluster scope");
        snprintf(
            reason,
            size,
            "%s%s%s%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s",
            qualified,
            req->name ? " \"" : "",
            req->name ? req->name : "",
            req->name ? "\"" : "",
            user,
            verb,
            resource,
            group,
            scope);
}

/* What Kubernetes' system:discovery role lets every user read. */
static bool discovery_path(const char *path)
{
        static const char *const exact[] = {
            "/api", "/apis", "/openapi", "/version", "/version/", "/healthz", "/livez", "/readyz"};
        static const char *const prefixes[] = {"/api/", "/apis/", "/openapi/"};

        if (!path)
                return false;
        for (size_t i = 0; i < XP_ELEMENTSOF(exact); i++)
                if (strcmp(path, exact[i]) == 0)
                        return true;
        for (size_t i = 0; i < XP_ELEMENTSOF(prefixes); i++)
                if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

/* The reviews that tell callers about themselves: every role may ask them. */
static bool self_review(const struct auth_request *req)
{
        return req->verb == AUTH_CREATE && !req->subresource &&
               ((streq(req->group, "authentication.k8s.io") &&
                 streq(req->resource, "selfsubjectreviews")) ||
                (streq(req->group, "authorization.k8s.io") &&
                 (streq(req->resource, "selfsubjectaccessreviews") ||
                  streq(req->resource, "selfsubjectrulesreviews"))));
}

enum auth_decision auth_authorize(const struct auth_identity *who,
                                  const struct auth_request *req,
                                  char *reason,
                                  size_t reason_size)
{
        enum auth_decision d = AUTH_DENY;

        if (reason_size > 0)
                reason[0] = '\0';
        if (!auth_verb_to_string(req->verb))
                d = AUTH_DENY;
        else if (self_review(req))
                d = AUTH_ALLOW;
        else if (who->role == XP_TOKEN_ADMIN)
                d = AUTH_ALLOW;
        else if (who->role == XP_TOKEN_READER)
                d = is_read(req->verb) && !secret(req) ? AUTH_ALLOW : AUTH_DENY;
        else if (who->role == XP_TOKEN_NODE && !who->service_account)
                d = authorize_node(who->subject, req);
        else if (who->service_account && !who->role)
                d = !req->resource && is_read(req->verb) && discovery_path(req->path) ? AUTH_ALLOW
                                                                                      : AUTH_DENY;
        if (d == AUTH_DENY || d == AUTH_ALLOW_IF_REFERENCED)
                forbidden(who, req, reason, reason_size);
        /* the node authorizer's own words */
        if (who->role == XP_TOKEN_NODE && pod_config(req) && reason_size > 0) {
                size_t len = strlen(reason);

                if (d == AUTH_ALLOW_IF_REFERENCED)
                        snprintf(reason + len,
                                 reason_size - len,
                                 ": no relationship found between node '%s' and this object",
                                 who->subject);
                else if (!req->subresource)
                        snprintf(reason + len,
                                 reason_size - len,
                                 ": can only get individual resources of this type");
        }
        return d;
}
