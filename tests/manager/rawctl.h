/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A raw control-channel client for the admission and authentication
 * suites: frames encoded by the codec (src/ctl/wire.h), some of them
 * deliberately wrong, a TCP connection to the fixture's b from a chosen
 * loopback address, and a wait for b to close it.
 */
#ifndef RY_TEST_RAWCTL_H
#define RY_TEST_RAWCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/ctl/wire.h"
#include "tests/manager/fixture.h"

struct frame {
	unsigned char b[4096];
	size_t n;
	uint16_t type;
};

/* Bytes onto the frame (a body the codec encoded, a MAC, or what the
 * other end sent). */
void put(struct frame *f, const void *p, size_t n);
/* A header (src/ctl/wire.h) whose length frame_end fills. */
void frame_start(struct frame *f, uint16_t type);
/* w's body (checked not bad) onto the frame. */
void put_body(struct frame *f, const struct ry__wbuf *w);
void frame_end(struct frame *f);
/* All three: a frame of type with w's body. */
void frame_of(struct frame *f, uint16_t type, const struct ry__wbuf *w);
/* A HELLO or HELLO_ACK (type) carrying h, without a proof. */
void frame_hello(struct frame *f, uint16_t type,
		 const struct ry__wire_hello *h);
/* A HELLO with no rails as node (name, claimed control address addr);
 * with auth, the key flag and a fresh nonce.  Its body is f->b after the
 * header. */
void raw_hello(struct frame *f, uint64_t node, const char *name,
	       const char *addr, bool auth);
/* The same with nrails rails, x<i> on network net<i> (the fixture's),
 * no auth. */
void raw_hello_rails(struct frame *f, uint64_t node, const char *name,
		     const char *addr, unsigned nrails);
/* The header of the frame at in->b; false if fewer bytes than one. */
bool frame_hdr(const struct frame *in, struct ry__ctl_hdr *h);

/* Peer records the manager holds. */
unsigned npeers(struct ry_manager *m);
/*
 * One 1 MiB write from a to b, waited for up to ms; 0 if it succeeded
 * (and, with verify, b holds the bytes), -1 if it failed.
 */
int write_one(struct fx *fx, bool verify, unsigned ms, struct fx_done *d);

/* A TCP connection to fx's b's control port from src (a loopback IP). */
int raw_connect(struct fx *fx, const char *src);
void raw_send(int fd, const void *p, size_t n);
/*
 * Progress both managers until b closes fd (true) or ms pass; what b
 * sends is appended to in (if not NULL).
 */
bool closed_within(struct fx *fx, int fd, unsigned ms, struct frame *in);

/* What a raw session has received and not yet taken, frame by frame. */
struct raw_rx {
	int fd;
	size_t n;
	unsigned char b[8192];
};
/*
 * Progress fx until rx holds a whole frame, and take it into out (header
 * and body; out->type its type); false if ms pass first.  The manager
 * closing the session fails the test.
 */
bool raw_next(struct fx *fx, struct raw_rx *rx, unsigned ms, struct frame *out);

#endif
