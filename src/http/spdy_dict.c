/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dictionary SPDY/3 primes zlib with for header blocks (the protocol draft, section
 * 2.6.10.1): the common header names and methods, each as a 32-bit big-endian length and the
 * name, then common values run together. Both ends must use the very same bytes (zlib checks
 * their Adler-32), so it is built once from the two lists below, in the draft's order.
 */
#include <pthread.h>
#include <string.h>

#include "xpool/macro.h"
#include "xpool/spdy.h"

static const char *const words[] = {
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
};

/* The values, without separators where the draft has none. */
static const char values[] = "100"
                             "101"
                             "201"
                             "202"
                             "205"
                             "206"
                             "300"
                             "302"
                             "303"
                             "304"
                             "305"
                             "306"
                             "307"
                             "402"
                             "405"
                             "406"
                             "407"
                             "408"
                             "409"
                             "410"
                             "411"
                             "412"
                             "413"
                             "414"
                             "415"
                             "416"
                             "417"
                             "502"
                             "504"
                             "505"
                             "203 Non-Authoritative Information"
                             "204 No Content"
                             "301 Moved Permanently"
                             "400 Bad Request"
                             "401 Unauthorized"
                             "403 Forbidden"
                             "404 Not Found"
                             "500 Internal Server Error"
                             "501 Not Implemented"
                             "503 Service Unavailable"
                             "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec"
                             " 00:00:00"
                             " Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
                             "chunked,text/html,image/png,image/jpg,image/gif,application/xml,"
                             "application/xhtml+xml,text/plain,text/javascript,"
                             "public"
                             "private"
                             "max-age="
                             "gzip,deflate,sdch"
                             "charset=utf-8"
                             "charset=iso-8859-1,utf-,*,enq=0.";

#define DICT_LEN 1423

static uint8_t dict[DICT_LEN];
static size_t dict_len;
static pthread_once_t dict_once = PTHREAD_ONCE_INIT;

static void build(void)
{
        size_t n = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(words); i++) {
                size_t len = strlen(words[i]);

                dict[n++] = 0;
                dict[n++] = 0;
                dict[n++] = 0;
                dict[n++] = (uint8_t)len;
                memcpy(dict + n, words[i], len);
                n += len;
        }
        memcpy(dict + n, values, sizeof(values) - 1);
        dict_len = n + sizeof(values) - 1;
}

const uint8_t *xp_spdy_dictionary(size_t *ret_len)
{
        pthread_once(&dict_once, build);
        *ret_len = dict_len;
        return dict;
}
