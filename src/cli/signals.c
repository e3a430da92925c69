/* SPDX-License-Identifier: Apache-2.0 */
/* The stop signals of the long-running subcommands. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "cli.h"

void xp_cli_block_stop_signals(sigset_t *mask)
{
        /* before any thread starts, so that all inherit the mask and sigwait() is the one place
         * the signals arrive */
        sigemptyset(mask);
        sigaddset(mask, SIGINT);
        sigaddset(mask, SIGTERM);
        pthread_sigmask(SIG_BLOCK, mask, NULL);
        signal(SIGPIPE, SIG_IGN);
}

int xp_cli_wait_stop(const sigset_t *mask)
{
        int r, sig = SIGTERM;

        do
                r = sigwait(mask, &sig);
        while (r == EINTR);
        return sig;
}
