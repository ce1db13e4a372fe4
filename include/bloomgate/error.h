/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors are values.
 *
 * Every fallible bloomgate call returns an int: 0 (BG_OK) or a positive
 * answer on success, a negative bg_status on failure. The library never
 * prints, never exits and never aborts on bad input; a NULL or out-of-range
 * argument is a status, not a crash. bg_strerror and bg_err_name return
 * static strings (never free them), allocate nothing and may be called
 * from any thread. */
#ifndef BLOOMGATE_ERROR_H
#define BLOOMGATE_ERROR_H

#include <bloomgate/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, message). Values are stable ABI: append, never renumber. */
#define BG_STATUS_MAP(X)                                                        \
    X(OK,         0,  "success")                                                \
    X(EINVAL,    -1,  "invalid argument")                                         \
    X(ENOMEM,    -2,  "out of memory")                                            \
    X(EOVERFLOW, -3,  "size arithmetic overflows 64 bits")                        \
    X(ETOOBIG,   -4,  "size exceeds the configured cap")                          \
    X(EINCOMPAT, -5,  "filters are incompatible (variant, bits, hashes or seed differ)") \
    X(EUNDERDET, -6,  "sizing is underdetermined: give two of n, p, m, k (not only p and k)") \
    X(EVARIANT,  -7,  "unknown or unsupported filter variant")                    \
    X(EIO,       -8,  "I/O error (errno holds the cause)")                        \
    X(EBADMAGIC, -9,  "not a bloomgate filter file (bad magic)")                  \
    X(EVERSION,  -10, "unsupported file format version")                          \
    X(ECHECKSUM, -11, "checksum mismatch: the file is damaged")                   \
    X(ETRUNC,    -12, "file is truncated")                                        \
    X(ETRAILING, -13, "trailing bytes after the filter's payload")                \
    X(ECORRUPT,  -14, "file fields are out of range or contradict each other")    \
    X(EREADONLY, -15, "filter is read-only (a mapped file)")                      \
    X(EABSENT,   -16, "key is definitely absent: nothing removed")                \
    X(EFULL,     -17, "non-scaling filter is full")                               \
    X(ELAYERS,   -18, "scalable filter has reached its maximum number of layers") \
    X(ECONN,     -19, "connection to the server failed, broke or timed out")      \
    X(EREMOTE,   -20, "the server replied an error")                              \
    X(ESTALE,    -21, "filter was re-created: its parameters changed under the client") \
    X(ENOTFOUND, -22, "filter does not exist")                                    \
    X(EEXIST,    -23, "filter already exists")                                    \
    X(EBUSY,     -24, "resource is busy")                                         \
    X(EOFFSET,   -25, "chunk position lies outside the filter's data")           \
    X(ECHUNK,    -26, "chunk is longer than the rest of the part it starts in")

typedef enum bg_status {
#define BG__STATUS_ENUM(name, value, msg) BG_##name = (value),
    BG_STATUS_MAP(BG__STATUS_ENUM)
#undef BG__STATUS_ENUM
} bg_status;

/* A human-readable message for a status: static storage, never NULL
 * (an unknown code gets "unknown error"). */
BG_API const char *bg_strerror(int status);

/* The status's name, e.g. "BG_EINVAL"; static storage, never NULL. */
BG_API const char *bg_err_name(int status);

#ifdef __cplusplus
}
#endif

#endif
