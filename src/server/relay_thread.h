/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

/*
 * Whether thread tid of this process sleeps in poll(), ppoll(), select() or pselect6(): 1 yes,
 * 0 no (running, runnable, or asleep elsewhere, say on a lock), -errno when the kernel cannot say.
 * libmicrohttpd's TLS relay sleeps there only when it has nothing to do (docs/server.md, "exec,
 * attach, port-forward"), whatever the load.
 */
int relay_thread_waits(pid_t tid);
