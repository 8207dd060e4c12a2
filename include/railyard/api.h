/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbol visibility: the library is built with hidden symbols; only what a
 * public header marks RY_API is exported (all of it named ry_*). */
#ifndef RAILYARD_API_H
#define RAILYARD_API_H

#if defined(RY_BUILDING)
#define RY_API __attribute__((visibility("default")))
#else
#define RY_API
#endif

#endif
