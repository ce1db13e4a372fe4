/* SPDX-License-Identifier: BSD-3-Clause */
#include <bloomgate/error.h>

const char *bg_strerror(int status)
{
    switch (status) {
#define BG__STATUS_MSG(name, value, msg) \
    case (value):                        \
        return (msg);
        BG_STATUS_MAP(BG__STATUS_MSG)
#undef BG__STATUS_MSG
    }
    return "unknown error";
}

const char *bg_err_name(int status)
{
    switch (status) {
#define BG__STATUS_NAME(name, value, msg) \
    case (value):                         \
        return "BG_" #name;
        BG_STATUS_MAP(BG__STATUS_NAME)
#undef BG__STATUS_NAME
    }
    return "BG_UNKNOWN";
}
