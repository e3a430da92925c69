/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

int main(void)
{
        puts("xpool");
        return 0;
}
