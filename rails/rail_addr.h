/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Addresses of the rails that bind an IPv4 socket (soft, tcp): what a
 * config's address and interface name, and which interface owns one.
 */
#ifndef RAILYARD_RAIL_ADDR_H
#define RAILYARD_RAIL_ADDR_H

#include <netinet/in.h>
#include <stddef.h>

#include <railyard/config.h>

/*
 * cfg->address "ip[:port]", or the first IPv4 address of cfg->interface
 * when the address has no ip: 0, -EINVAL (does not parse, or neither
 * given) or -EADDRNOTAVAIL (the interface has no IPv4 address).
 */
int ry__rail_parse_addr(const struct ry_rail_config *cfg,
			struct sockaddr_in *sa);

/* The interface that owns addr into name (len bytes), "" when none (a
 * wildcard bind). */
void ry__rail_addr_owner(const struct sockaddr_in *addr, char *name,
			 size_t len);

#endif
