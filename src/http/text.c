/* SPDX-License-Identifier: Apache-2.0 */
/* Plain-text answers (xpool/http_text.h). */
#include <stdio.h>
#include <stdlib.h>

#include "xpool/http_text.h"

enum MHD_Result
xp_http_queue_text(struct MHD_Connection *conn, unsigned code, const char *fmt, va_list ap)
{
        struct MHD_Response *response;
        enum MHD_Result r;
        char *text = NULL;
        int n = vasprintf(&text, fmt, ap);

        if (n < 0)
                return MHD_NO;
        response = MHD_create_response_from_buffer((size_t)n, text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(
            response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        r = MHD_queue_response(conn, code, response);
        MHD_destroy_response(response);
        return r;
}
