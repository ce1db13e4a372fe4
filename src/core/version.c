/* SPDX-License-Identifier: BSD-3-Clause */
#include <bloomgate/version.h>

#define BG__STR2(x) #x
#define BG__STR(x) BG__STR2(x)

unsigned bg_version(void)
{
    return BG_VERSION_HEX;
}

const char *bg_version_string(void)
{
    return BG__STR(BG_VERSION_MAJOR) "." BG__STR(BG_VERSION_MINOR) "." BG__STR(BG_VERSION_PATCH);
}
