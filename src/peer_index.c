// SPDX-License-Identifier: BSD-2-Clause
/*
 * The peer records' indexes, so that admitting a HELLO, naming a peer and
 * delivering a stray packet cost the same with 10,000 records as with
 * one (issue 13): by name (a record's own name and the node name its
 * HELLO gave, one index), by control address (parsed addresses are
 * filed by address and port, so "[::ffff:198.18.0.1]:7000" and
 * "198.18.0.1:7000" meet), the records we dial by host (admission at
 * accept), and by incarnation.
 *
 * Every lookup answers what a walk over m_peers from its head would find
 * first: the newest matching record (the highest pr_seq), since records
 * are only ever added at the head.  Builds with assertions check every
 * answer against that walk, so a forgotten ry__peer_index() after a
 * field changes shows in the test suites.
 *
 * The keys are SipHash (libsodium's crypto_shorthash) under a key drawn
 * per manager: names and addresses come from HELLOs, and a client that
 * could choose names colliding in a known hash could make every lookup a
 * walk again.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "src/control.h"
#include "src/manager.h"
#include "src/peer.h"

enum { KEY_STR = 1, KEY_IP, KEY_HOST, KEY_NODE };

static bool name_is(const struct ry_peer *p, const char *name)
{
	return !strcmp(p->pr_name, name) || !strcmp(p->pr_node_name, name);
}

static uint64_t hkey(const struct ry_manager *m, int kind, const void *v,
		     size_t len)
{
	unsigned char buf[1 + RY_ADDR_MAX], out[crypto_shorthash_BYTES];
	uint64_t k;

	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	buf[0] = (unsigned char)kind;
	memcpy(buf + 1, v, len);
	crypto_shorthash(out, buf, 1 + len, m->m_ix_key);
	memcpy(&k, out, sizeof(k));
	return k;
}

static uint64_t str_key(const struct ry_manager *m, const char *s)
{
	return hkey(m, KEY_STR, s, strlen(s));
}

uint64_t ry__ip_key(const struct ry_manager *m, const struct ry__ip *ip,
		    bool port)
{
	unsigned char b[19];

	b[0] = (unsigned char)ip->fam;
	memcpy(b + 1, ip->a, 16);
	b[17] = (unsigned char)(port ? ip->port >> 8 : 0);
	b[18] = (unsigned char)(port ? ip->port : 0);
	return hkey(m, port ? KEY_IP : KEY_HOST, b, sizeof(b));
}

/* A control address's key: parsed if it parses, else as written. */
static uint64_t addr_key(const struct ry_manager *m, const char *addr,
			 struct ry__ip *ip)
{
	if (!ry__ip_parse(addr, ip))
		return ry__ip_key(m, ip, true);
	memset(ip, 0, sizeof(*ip));
	return str_key(m, addr);
}

int ry__peer_index_init(struct ry_manager *m)
{
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(m->m_ix_key, sizeof(m->m_ix_key));
	if (ry__hidx_init(&m->m_ix_name) || ry__hidx_init(&m->m_ix_nname) ||
	    ry__hidx_init(&m->m_ix_addr) || ry__hidx_init(&m->m_ix_host) ||
	    ry__hidx_init(&m->m_ix_node))
		return -ENOMEM; /* ry__peer_index_fini frees what was made */
	return 0;
}

void ry__peer_index_fini(struct ry_manager *m)
{
	ry__hidx_free(&m->m_ix_name);
	ry__hidx_free(&m->m_ix_nname);
	ry__hidx_free(&m->m_ix_addr);
	ry__hidx_free(&m->m_ix_host);
	ry__hidx_free(&m->m_ix_node);
}

void ry__peer_unindex(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;

	ry__hidx_del(&m->m_ix_name, &p->pr_ix_name);
	ry__hidx_del(&m->m_ix_nname, &p->pr_ix_node_name);
	ry__hidx_del(&m->m_ix_addr, &p->pr_ix_addr);
	ry__hidx_del(&m->m_ix_host, &p->pr_ix_host);
	ry__hidx_del(&m->m_ix_node, &p->pr_ix_node);
}

void ry__peer_index(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t k;

	ry__peer_unindex(p);
	ry__hidx_add(&m->m_ix_name, &p->pr_ix_name, str_key(m, p->pr_name));
	if (p->pr_node_name[0] && strcmp(p->pr_node_name, p->pr_name))
		ry__hidx_add(&m->m_ix_nname, &p->pr_ix_node_name,
			     str_key(m, p->pr_node_name));
	memset(&p->pr_addr_ip, 0, sizeof(p->pr_addr_ip));
	if (p->pr_addr[0]) {
		k = addr_key(m, p->pr_addr, &p->pr_addr_ip);
		ry__hidx_add(&m->m_ix_addr, &p->pr_ix_addr, k);
		if (p->pr_dial && p->pr_addr_ip.fam)
			ry__hidx_add(&m->m_ix_host, &p->pr_ix_host,
				     ry__ip_key(m, &p->pr_addr_ip, false));
	}
	if (p->pr_node)
		ry__hidx_add(
		    &m->m_ix_node, &p->pr_ix_node,
		    hkey(m, KEY_NODE, &p->pr_node, sizeof(p->pr_node)));
}

static struct ry_peer *newer(struct ry_peer *a, struct ry_peer *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a->pr_seq > b->pr_seq ? a : b;
}

#define PEER_OF(x, member) container_of((x), struct ry_peer, member)

static struct ry_peer *by_name(struct ry_manager *m, const char *name,
			       const struct ry_peer *except)
{
	uint64_t k = str_key(m, name);
	struct ry_peer *best = NULL, *p;
	struct ry__hnode *x;

	if (!name[0])
		return NULL; /* names nobody, not every record without one */
	ry__hidx_for_each(x, &m->m_ix_name, k)
	{
		p = PEER_OF(x, pr_ix_name);
		if (p != except && name_is(p, name))
			best = newer(best, p);
	}
	ry__hidx_for_each(x, &m->m_ix_nname, k)
	{
		p = PEER_OF(x, pr_ix_node_name);
		if (p != except && name_is(p, name))
			best = newer(best, p);
	}
	return best;
}

/* addr's record: exact, written so; else the same address however
 * written (ry__addr_same). */
static struct ry_peer *by_addr(struct ry_manager *m, const char *addr,
			       bool exact)
{
	struct ry_peer *best = NULL, *p;
	struct ry__hnode *x;
	struct ry__ip ip;
	uint64_t k = addr_key(m, addr, &ip);

	ry__hidx_for_each(x, &m->m_ix_addr, k)
	{
		p = PEER_OF(x, pr_ix_addr);
		if (exact    ? !strcmp(p->pr_addr, addr)
		    : ip.fam ? p->pr_addr_ip.fam &&
				   ry__ip_same_host(&ip, &p->pr_addr_ip) &&
				   ip.port == p->pr_addr_ip.port
			     : !strcmp(p->pr_addr, addr))
			best = newer(best, p);
	}
	return best;
}

/*
 * The walks the indexes stand for, to check them in builds with
 * assertions: O(records) per lookup, as every lookup was before.
 */
#ifndef NDEBUG
static struct ry_peer *walk_find(struct ry_manager *m, const char *name,
				 const char *addr)
{
	struct ry_peer *p;

	for (p = m->m_peers; p; p = p->pr_next) {
		if (name && name[0] && name_is(p, name))
			return p;
		if (addr && addr[0] && !strcmp(p->pr_addr, addr))
			return p;
	}
	return NULL;
}

static struct ry_peer *walk_name(struct ry_manager *m, const char *name,
				 const struct ry_peer *except)
{
	struct ry_peer *p;

	if (!name[0])
		return NULL;
	for (p = m->m_peers; p; p = p->pr_next)
		if (p != except && name_is(p, name))
			return p;
	return NULL;
}

static struct ry_peer *walk_addr(struct ry_manager *m, const char *addr)
{
	struct ry_peer *p;

	for (p = m->m_peers; p; p = p->pr_next)
		if (p->pr_addr[0] && ry__addr_same(p->pr_addr, addr))
			return p;
	return NULL;
}

static bool walk_dialed_host(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry_peer *p;
	struct ry__ip pip;

	for (p = m->m_peers; p; p = p->pr_next)
		if (p->pr_dial && !ry__ip_parse(p->pr_addr, &pip) &&
		    ry__ip_same_host(&pip, ip))
			return true;
	return false;
}

static struct ry_peer *walk_node(struct ry_manager *m, uint64_t node)
{
	struct ry_peer *p;

	for (p = m->m_peers; p; p = p->pr_next)
		if (p->pr_node && p->pr_node == node)
			return p;
	return NULL;
}
#endif

struct ry_peer *ry__peer_find(struct ry_manager *m, const char *name,
			      const char *addr)
{
	struct ry_peer *p = NULL;

	if (name && name[0])
		p = by_name(m, name, NULL);
	if (addr && addr[0])
		p = newer(p, by_addr(m, addr, true));
	assert(p == walk_find(m, name, addr));
	return p;
}

struct ry_peer *ry__peer_by_name(struct ry_manager *m, const char *name,
				 const struct ry_peer *except)
{
	struct ry_peer *p = by_name(m, name, except);

	assert(p == walk_name(m, name, except));
	return p;
}

struct ry_peer *ry__peer_by_addr(struct ry_manager *m, const char *addr)
{
	struct ry_peer *p = by_addr(m, addr, false);

	assert(p == walk_addr(m, addr));
	return p;
}

bool ry__peer_dialed_host(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry__hnode *x;
	struct ry_peer *p;
	bool found = false;

	ry__hidx_for_each(x, &m->m_ix_host, ry__ip_key(m, ip, false))
	{
		p = PEER_OF(x, pr_ix_host);
		if (p->pr_dial && ry__ip_same_host(&p->pr_addr_ip, ip)) {
			found = true;
			break;
		}
	}
	assert(found == walk_dialed_host(m, ip));
	return found;
}

struct ry_peer *ry__peer_by_node(struct ry_manager *m, uint64_t node)
{
	struct ry_peer *best = NULL, *p;
	struct ry__hnode *x;

	if (!node)
		return NULL;
	ry__hidx_for_each(x, &m->m_ix_node,
			  hkey(m, KEY_NODE, &node, sizeof(node)))
	{
		p = PEER_OF(x, pr_ix_node);
		if (p->pr_node == node)
			best = newer(best, p);
	}
	assert(best == walk_node(m, node));
	return best;
}
