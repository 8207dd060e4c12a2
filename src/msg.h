/* SPDX-License-Identifier: BSD-2-Clause */
/* msg.c: rail messages (sends and notifications), their slots and windows. */
#ifndef RAILYARD_MSG_H
#define RAILYARD_MSG_H

#include <stdint.h>

#include "src/ctl/wire.h"

struct ry__conn;
struct ry__lrail;
struct ry__op;
struct ry_manager;
struct ry_peer;
struct ry_wc;

/* msg.c */
int ry__recv_setup(struct ry__lrail *lr);
void ry__recv_teardown(struct ry__lrail *lr);
void ry__on_recv(struct ry__lrail *lr, const struct ry_wc *wc, uint64_t now);
int ry__msg_slots_setup(struct ry_manager *m);
unsigned ry__slot_get(struct ry_manager *m);
void ry__slot_put(struct ry_manager *m, unsigned slot);
void *ry__slot_addr(struct ry_manager *m, unsigned slot);
void ry__msg_prepare(struct ry__op *op, enum ry__mtype type, const void *data,
		     size_t len);
/*
 * The receiver's dedupe window: 1 if seq is new (and is now remembered),
 * 0 if it was seen before, -ERANGE if it lies past the window (a protocol
 * violation; the window is unchanged).  Constant time in seq.
 */
int ry__rxwin_accept(uint64_t *base, uint64_t *bits, uint64_t seq);
/* One received rail message of len bytes on c (the cold lock held): checks,
 * dedupes and queues it for delivery; a protocol violation fails c. */
void ry__msg_rx(struct ry__conn *c, const unsigned char *buf, uint32_t len,
		uint64_t now);
uint64_t ry__tx_seq_take(struct ry_peer *p);
void ry__tx_seq_done(struct ry_peer *p, uint64_t seq);
void ry__tx_seq_reset(struct ry_peer *p);

#endif /* RAILYARD_MSG_H */
