// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fault injection, applied to every packet a rail sends (and, for drop_all
 * and a downed link, to every packet it receives): drop with probability
 * p, duplicate, corrupt (one bit flipped, so the receiver's CRC32C check
 * must catch it), delay, and reorder (hold a packet back so that later ones
 * overtake it).  Held packets are copied into slots allocated by
 * set_fault, never on the packet path; when the slots run out the packet
 * is dropped and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rails/soft/soft_int.h"
#include "src/util/log.h"

#define REORDER_HOLD_NS 300000ull

static uint64_t rng_next(struct ry__soft_rail *r)
{
	/* xorshift64*: cheap, and tests need no cryptographic quality */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return r->rng * 2685821657736338717ull;
}

static bool chance(struct ry__soft_rail *r, double p)
{
	return p > 0 && (double)(rng_next(r) >> 11) * 0x1.0p-53 < p;
}

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0;
}

int ry__soft_set_fault(struct ry_rail *rail, const struct ry_fault *f)
{
	struct ry__soft_rail *r = to_srail(rail);

	if (!prob_ok(f->drop) || !prob_ok(f->duplicate) ||
	    !prob_ok(f->reorder) || !prob_ok(f->corrupt) ||
	    f->delay_us > 10000000)
		return -EINVAL;
	if ((f->delay_us || f->reorder > 0) && !r->slots) {
		r->slot_size = RY__SOFT_HDR_LEN + r->mtu;
		r->slots = calloc(RY__SOFT_FAULT_SLOTS, sizeof(*r->slots));
		r->slot_mem =
		    malloc((size_t)RY__SOFT_FAULT_SLOTS * r->slot_size);
		if (!r->slots || !r->slot_mem) {
			free(r->slots);
			free(r->slot_mem);
			r->slots = NULL;
			r->slot_mem = NULL;
			return -ENOMEM;
		}
		for (unsigned i = 0; i < RY__SOFT_FAULT_SLOTS; i++)
			r->slots[i].buf =
			    r->slot_mem + (size_t)i * r->slot_size;
	}
	r->fault = *f;
	return 0;
}

int ry__soft_set_link(struct ry_rail *rail, enum ry_link_state state)
{
	struct ry__soft_rail *r = to_srail(rail);

	if (state != RY_LINK_UP && state != RY_LINK_DOWN)
		return -EINVAL;
	r->link = state;
	ry__soft_link_update(r);
	return 0;
}

/* hlen: the header and the MAC after it, if any */
static bool hold(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		 const struct ry__soft_hdr *h, uint32_t hlen,
		 const void *payload, uint32_t paylen, uint64_t release)
{
	for (unsigned i = 0; i < RY__SOFT_FAULT_SLOTS; i++) {
		struct ry__soft_fault_slot *s = &r->slots[i];

		if (s->used)
			continue;
		memcpy(s->buf, h, hlen);
		if (paylen)
			memcpy(s->buf + hlen, payload, paylen);
		s->len = hlen + paylen;
		s->dst = *dst;
		s->release = release;
		s->used = true;
		r->slots_used++;
		return true;
	}
	return false;
}

bool ry__soft_fault_tx(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		       struct ry__soft_hdr *h, uint32_t hlen,
		       const void *payload, uint32_t paylen, bool *dup)
{
	const struct ry_fault *f = &r->fault;
	uint64_t release = 0;

	if (f->drop > 0 && chance(r, f->drop)) {
		r->st.faults_dropped++;
		return true;
	}
	if (f->corrupt > 0 && chance(r, f->corrupt)) {
		/* Flip a header bit after the version byte: the payload is
		 * the caller's memory and must not change. */
		unsigned bit =
		    (unsigned)(rng_next(r) % ((RY__SOFT_HDR_LEN - 1) * 8));

		((uint8_t *)h)[1 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		r->st.faults_corrupted++;
	}
	if (f->duplicate > 0 && chance(r, f->duplicate)) {
		*dup = true;
		r->st.faults_duplicated++;
	}
	if (f->delay_us)
		release = r->now + (uint64_t)f->delay_us * 1000;
	if (f->reorder > 0 && chance(r, f->reorder)) {
		release =
		    r->now + (uint64_t)f->delay_us * 1000 + REORDER_HOLD_NS;
		r->st.faults_reordered++;
	}
	if (!release || !r->slots)
		return false;
	if (!hold(r, dst, h, hlen, payload, paylen, release))
		r->st.faults_dropped++;
	return true;
}

void ry__soft_fault_run(struct ry__soft_rail *r)
{
	bool sent = false;

	if (!r->slots_used)
		return;
	/* Flush first: the held packets must not overtake or share a batch
	 * with slots that are about to be reused. */
	ry__soft_tx_flush(r);
	for (unsigned i = 0; i < RY__SOFT_FAULT_SLOTS; i++) {
		struct ry__soft_fault_slot *s = &r->slots[i];

		if (!s->used || s->release > r->now)
			continue;
		if (ry__soft_tx_full(r))
			break;
		if (r->eff_up && !r->fault.drop_all)
			ry__soft_tx_raw(r, &s->dst, s->buf, s->len);
		s->release = 0; /* sent at the flush below, then freed */
		sent = true;
	}
	if (sent)
		ry__soft_tx_flush(r);
	for (unsigned i = 0; i < RY__SOFT_FAULT_SLOTS; i++) {
		if (r->slots[i].used && !r->slots[i].release) {
			r->slots[i].used = false;
			r->slots_used--;
		}
	}
}

uint64_t ry__soft_fault_next_timer(struct ry__soft_rail *r)
{
	uint64_t t = 0;

	if (!r->slots_used)
		return 0;
	for (unsigned i = 0; i < RY__SOFT_FAULT_SLOTS; i++)
		if (r->slots[i].used && (!t || r->slots[i].release < t))
			t = r->slots[i].release;
	return t;
}

void ry__soft_fault_cleanup(struct ry__soft_rail *r)
{
	free(r->slots);
	free(r->slot_mem);
	r->slots = NULL;
	r->slot_mem = NULL;
}
