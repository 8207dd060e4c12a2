/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * railyard test hooks: fault injection on a manager's rails and the
 * demo's built-in config.  Not part of the API a storage server sees: this
 * header is not installed, and these functions are not exported by the
 * shared library (no RY_API, and src/librailyard.map lists only the
 * public API).  They live in the objects the library is built from, so the
 * in-tree users reach them by linking the static library or the ry_core
 * object library: the test suites, and `railyard demo`, which pulls a
 * rail's cable on its own.  Real drills pull real cables.
 *
 * Threading and errors as in railyard.h.
 */
#ifndef RAILYARD_TESTING_H
#define RAILYARD_TESTING_H

#include <stdbool.h>
#include <stdint.h>

#include <railyard/config.h>
#include <railyard/railyard.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What to do to a rail's packets; all zero clears every fault. */
struct ry_fault_spec {
	bool drop_all; /* an unplugged cable: nothing in or out, silently */
	double drop;   /* probabilities 0..1 */
	double duplicate;
	double reorder;
	double corrupt;
	uint32_t delay_us; /* added one-way delay */
};

/*
 * Inject a fault on a local rail by name; it replaces the previous one.
 * Errors: -ENOENT (no such rail), -EINVAL (a probability outside 0..1),
 * -EOPNOTSUPP (the provider cannot inject that fault: the verbs rail none,
 * the test-only loop rail only drop_all).
 */
int ry_rail_fault(struct ry_manager *mgr, const char *rail,
		  const struct ry_fault_spec *spec);

/*
 * Take a local rail's link down or up, as pulling a cable would; the rail
 * reports it as a link event.  Errors: -ENOENT, -EOPNOTSUPP.
 */
int ry_rail_link(struct ry_manager *mgr, const char *rail, bool up);

/*
 * The built-in configuration `railyard demo` uses: node "demo", four soft
 * rails on 127.0.0.1 with kernel-chosen ports, all on network "loop".
 * Returns 0 or -ENOMEM; free with ry_config_free().
 */
int ry_config_demo(struct ry_config **cfg_p);

#ifdef __cplusplus
}
#endif
#endif /* RAILYARD_TESTING_H */
