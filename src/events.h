/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events.c: the queue through which the lower floors (peers, connections,
 * messages) tell the application what happened; deliver.c hands it out.
 */
#ifndef RAILYARD_EVENTS_H
#define RAILYARD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

struct ry_manager;
struct ry_peer;
struct ry__lrail;

/* Handed to the application after m_lock is dropped (deliver.c). */
struct ry__delivery {
	struct ry__delivery *dv_next;
	int dv_kind; /* 0 message, 1 event */
	struct ry_peer *dv_peer;
	struct ry_message dv_msg;
	struct ry_event dv_ev;
	char dv_rail[RY_NAME_MAX];
	char dv_peer_name[RY_ADDR_MAX];
	char dv_reason[128];
	unsigned char dv_data[];
};

/* The queued event, for the caller to add fields; NULL if not queued. */
struct ry_event *ry__queue_event(struct ry_manager *m, enum ry_event_type t,
				 struct ry__lrail *lr, struct ry_peer *p,
				 const char *reason, uint64_t time_ns);
void ry__queue_message(struct ry_manager *m, struct ry_peer *p,
		       enum ry_msg_type t, const void *data, size_t len,
		       uint64_t notify);

#endif /* RAILYARD_EVENTS_H */
