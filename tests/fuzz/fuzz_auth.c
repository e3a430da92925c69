/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the tokens file parser and the Authorization header parser: the input up to the first
 * newline is the header, the rest the contents of DATA_DIR/tokens. auth_open() must either load
 * the file or fail with -EINVAL/-E2BIG and a message naming the file; auth_authenticate() must
 * either fail with -EACCES and a message, or name an identity whose token id is in the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static char dir[] = "/tmp/xpool-fuzz-auth-XXXXXX";
static char path[64], lock_path[64];

static void remove_dir(void)
{
        unlink(path);
        unlink(lock_path);
        rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nl = memchr(data, '\n', size);
        size_t header_len = nl ? (size_t)(nl - data) : size;
        const uint8_t *file = nl ? nl + 1 : data + size;
        size_t file_len = size - (size_t)(file - data);
        struct auth *auth = NULL;
        struct auth_identity who = {0};
        struct xp_error err = {0};
        char *admin = NULL, *header;
        int fd, r;

        if (!path[0]) {
                check(mkdtemp(dir) != NULL);
                snprintf(path, sizeof(path), "%s/tokens", dir);
                snprintf(lock_path, sizeof(lock_path), "%s/tokens.lock", dir);
                atexit(remove_dir);
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(fd >= 0);
        check(write(fd, file, file_len) == (ssize_t)file_len);
        close(fd);

        r = auth_open(dir, &auth, &admin, &err);
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG);
                check(strstr(err.msg, path) != NULL);
                return 0;
        }
        check(admin == NULL);
        header = strndup((const char *)data, header_len);
        check(header != NULL);
        xp_error_clear(&err);
        r = auth_authenticate(auth, header, &who, &err);
        if (r < 0) {
                check(r == -EACCES);
                check(err.msg[0] != '\0');
        } else {
                check(r == 0);
                check(xp_token_role_to_string(who.role) != NULL);
                check(who.subject[0] != '\0');
                check(strstr(header, who.token_id) != NULL);
        }
        free(header);
        auth_free(auth);
        return 0;
}
