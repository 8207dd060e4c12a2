/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A rail's health from its error counters (rail_health.c): ok, degraded
 * (a quarter of its share of the stripe), drained (new work avoids it
 * while another rail to the peer can take it).  railyard.conf(5):
 * error_degrade_ppm, error_drain_ppm, error_quiet_ms.
 */
#ifndef RAILYARD_RAIL_HEALTH_H
#define RAILYARD_RAIL_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include <railyard/railyard.h>

struct ry_manager;
struct ry__lrail;

struct ry__rhealth {
	enum ry_rail_health_state rh_state;
	bool rh_primed;	      /* rh_errs and rh_pkts are a sample's */
	uint8_t rh_streak;    /* samples in a row over the next state's mark */
	uint32_t rh_ppm;      /* the last sample's errors per million */
	uint64_t rh_next_ns;  /* the next sample */
	uint64_t rh_quiet_ns; /* quiet since (0: the last sample was not) */
	uint64_t rh_errs, rh_pkts; /* at the last sample */
	uint64_t rh_changes;
};

/* The cold lock held, every round: sample the open rails once a second
 * and act on what changed. */
void ry__rail_health_run(struct ry_manager *m, uint64_t now);
/* A rail (re)opened: its counters start again, and so does its health. */
void ry__rail_health_reset(struct ry__rhealth *rh);

/* What a degraded rail's share of the stripe is divided by. */
#define RY__DEGRADED_DIV 4

#endif
