/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether an address has a listener (xpool/localaddr.h), from the kernel's socket tables
 * (/proc/net/tcp, tcp6): a local address there is the address's 32-bit words, each printed
 * with %08X as the host holds it, then ':' and the port.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xpool/localaddr.h"

#define TCP_LISTEN  0x0A
#define TABLE_LINES 1000000 /* a bound on a table's lines; a node has far fewer sockets */

static bool table_has_listener(const char *table, const char *want_hex)
{
        FILE *f = fopen(table, "re");
        char line[512], local[40];
        unsigned state;
        bool found = false;

        if (!f)
                return false;
        for (size_t n = 0; !found && n < TABLE_LINES && fgets(line, sizeof(line), f); n++) {
                /* "  sl  local_address rem_address   st ...": the header matches nothing */
                if (sscanf(line, " %*u: %39[0-9A-F]:%*x %*[0-9A-F]:%*x %x", local, &state) != 2)
                        continue;
                found = state == TCP_LISTEN && strcmp(local, want_hex) == 0;
        }
        fclose(f);
        return found;
}

bool xp_localaddr_listened(const char *ip)
{
        unsigned char bytes[16];
        char hex[33] = "";
        bool v6 = strchr(ip, ':') != NULL;
        size_t len = v6 ? 16 : 4;

        if (inet_pton(v6 ? AF_INET6 : AF_INET, ip, bytes) != 1)
                return false;
        for (size_t i = 0; i < len; i += 4) {
                uint32_t word;

                memcpy(&word, bytes + i, sizeof(word));
                snprintf(hex + 2 * i, sizeof(hex) - 2 * i, "%08X", word);
        }
        return table_has_listener(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", hex);
}
