/* SPDX-License-Identifier: BSD-3-Clause */
/* Everything in libbloomgate's core, in one include. */
#ifndef BLOOMGATE_BLOOMGATE_H
#define BLOOMGATE_BLOOMGATE_H

#include <bloomgate/alloc.h>
#include <bloomgate/error.h>
#include <bloomgate/file.h>
#include <bloomgate/filter.h>
#include <bloomgate/hash.h>
#include <bloomgate/layout.h>
#include <bloomgate/redisbloom.h>
#include <bloomgate/sizing.h>
#include <bloomgate/version.h>

#endif
