/* SPDX-License-Identifier: Apache-2.0 */
/* The data of Kubernetes' remote command protocols (remotecmd.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/macro.h"
#include "xpool/remotecmd.h"

int xp_rc_channel_from_stream_type(const char *type)
{
        static const char *const names[XP_RC_CHANNELS] = {
            [XP_RC_STDIN] = "stdin",
            [XP_RC_STDOUT] = "stdout",
            [XP_RC_STDERR] = "stderr",
            [XP_RC_ERROR] = "error",
            [XP_RC_RESIZE] = "resize",
        };

        for (int i = 0; type && i < XP_RC_CHANNELS; i++)
                if (strcmp(type, names[i]) == 0)
                        return i;
        return -EINVAL;
}

static int size_member(json_t *v, uint16_t *ret)
{
        json_int_t n;

        if (!json_is_integer(v))
                return -EINVAL;
        n = json_integer_value(v);
        if (n < 0 || n > 65535)
                return -EINVAL;
        *ret = (uint16_t)n;
        return 0;
}

int xp_rc_parse_resize(const uint8_t *data,
                       size_t len,
                       uint16_t *ret_width,
                       uint16_t *ret_height,
                       const char **ret_why)
{
        json_t *o, *v;
        const char *key;
        uint16_t w = 0, h = 0;
        bool have_w = false, have_h = false;
        int r = 0;

        if (len > XP_RC_RESIZE_MAX) {
                *ret_why = "terminal size message longer than 256 bytes";
                return -EINVAL;
        }
        o = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                *ret_why = "terminal size message is not a JSON object";
                return -EINVAL;
        }
        json_object_foreach(o, key, v)
        {
                if (strcasecmp(key, "Width") == 0) {
                        r = have_w ? -EINVAL : size_member(v, &w);
                        have_w = true;
                } else if (strcasecmp(key, "Height") == 0) {
                        r = have_h ? -EINVAL : size_member(v, &h);
                        have_h = true;
                }
                if (r < 0)
                        break;
        }
        json_decref(o);
        if (r < 0 || !have_w || !have_h) {
                *ret_why = "terminal size message needs Width and Height, each 0 to 65535";
                return -EINVAL;
        }
        *ret_width = w;
        *ret_height = h;
        return 0;
}

static char *dump_line(json_t *o)
{
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

        json_decref(o);
        return text;
}

/* "[sh -c exit 3]", as Go prints a []string. */
static char *argv_text(char *const *argv)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return NULL;
        fputc('[', f);
        for (size_t i = 0; argv && argv[i]; i++)
                fprintf(f, "%s%s", i ? " " : "", argv[i]);
        fputc(']', f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

char *xp_rc_status_exit(char *const *argv, int exit_code)
{
        _cleanup_free_ char *cmd = NULL, *message = NULL;
        char code[16];

        if (exit_code == 0)
                return dump_line(json_pack("{s:{}, s:s}", "metadata", "status", "Success"));
        cmd = argv_text(argv);
        if (!cmd)
                return NULL;
        if (asprintf(
                &message,
                "command terminated with non-zero exit code: error executing command %s, exit code %d",
                cmd,
                exit_code) < 0) {
                message = NULL;
                return NULL;
        }
        snprintf(code, sizeof(code), "%d", exit_code);
        return dump_line(json_pack("{s:{}, s:s, s:s, s:s, s:{s:[{s:s, s:s}]}}",
                                   "metadata",
                                   "status",
                                   "Failure",
                                   "message",
                                   message,
                                   "reason",
                                   "NonZeroExitCode",
                                   "details",
                                   "causes",
                                   "reason",
                                   "ExitCode",
                                   "message",
                                   code));
}

char *xp_rc_status_error(const char *message)
{
        _cleanup_free_ char *text = NULL;

        if (asprintf(&text, "Internal error occurred: %s", message) < 0) {
                text = NULL;
                return NULL;
        }
        return dump_line(json_pack("{s:{}, s:s, s:s, s:s, s:{s:[{s:s}]}, s:i}",
                                   "metadata",
                                   "status",
                                   "Failure",
                                   "message",
                                   text,
                                   "reason",
                                   "InternalError",
                                   "details",
                                   "causes",
                                   "message",
                                   message,
                                   "code",
                                   500));
}
