/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The reference object server (railyard-objd) and its client
 * (railyard-obj): a put/get object store on librailyard's public API only,
 * in the bulk pattern of Lustre and other RDMA storage servers.
 *
 * A request is one two-sided message (ry_send) carrying the operation, the
 * key, and for PUT and GET the packed descriptor (ry_mr_pack) of the
 * client's buffer.  The server moves the data itself: a PUT's bytes are
 * pulled with an RDMA READ into the server's pool, a GET's pushed with an
 * RDMA WRITE into the client's buffer, and only then does the server
 * answer with a reply message.  The client never touches server memory and
 * the server decides when its buffers are busy (railyard-objd(1), for why
 * READ for PUT and WRITE for GET).
 *
 * Every message is one header (little-endian, below) followed by the key
 * and a tail: the descriptor in a request, an error text in a reply.
 */
#ifndef RAILYARD_OBJSTORE_H
#define RAILYARD_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#define OBJ_MAGIC 0x314f5952u /* "RYO1" */
#define OBJ_VERSION 1
#define OBJ_HDR_LEN 56
#define OBJ_KEY_MAX 250
#define OBJ_TEXT_MAX 512 /* error text in a reply */

enum obj_op {
	OBJ_PUT = 1,
	OBJ_GET,
	OBJ_DEL,
	OBJ_STAT,
	OBJ_REPLY = 0x80, /* or-ed into the op of the request answered */
};

/*
 * One message, decoded.  Requests: id (the client's, echoed), size (PUT:
 * the object's bytes; GET: the room in the client's buffer), crc (PUT:
 * CRC32C of the data), key, tail = the buffer's descriptor.  Replies:
 * status (0 or a negative errno), size (the object's bytes; STAT: number of
 * objects), crc (the stored CRC32C), used/capacity (STAT: pool bytes), tail
 * = why, for an error.
 */
struct obj_msg {
	uint8_t op;
	int32_t status;
	uint64_t id;
	uint64_t size;
	uint32_t crc;
	uint64_t used, capacity;
	const void *key;
	size_t key_len;
	const void *tail;
	size_t tail_len;
};

/* Encode into buf (RY_MSG_MAX is enough); the length, or -EMSGSIZE. */
int obj_encode(void *buf, size_t cap, const struct obj_msg *m);
/* Decode; the pointers point into buf.  0 or -EBADMSG. */
int obj_decode(const void *buf, size_t len, struct obj_msg *m);

/* CRC32C (Castagnoli, as iSCSI and ext4), SSE4.2 where the CPU has it. */
uint32_t obj_crc32c(uint32_t crc, const void *p, size_t len);

/* "4096", "64K", "1M", "2G" (binary units); false if it does not parse. */
bool obj_parse_size(const char *s, uint64_t *out);

/* Load FILE, optionally rename the node and create the manager (its
 * progress threads not started: set the callbacks first); says why on
 * stderr and returns non-zero on failure. */
int obj_start(const char *prog, const char *path, const char *node,
	      struct ry_config **cfg_p, struct ry_manager **mgr_p);

double obj_now(void); /* CLOCK_MONOTONIC seconds */

#endif
