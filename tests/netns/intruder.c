// SPDX-License-Identifier: BSD-2-Clause
/*
 * intruder: a hostile client of railyard's control channel for the
 * namespace drills (tests/netns/test_intruder.sh).  It links with nothing
 * but libc and the control protocol's codec (src/ctl/wire.c, compiled in),
 * and sends HELLO (no rails), AUTH and FENCE_ACK frames, some of them
 * deliberately incomplete.
 *
 * It opens --conns connections to ADDR (from --from, if given), sends on
 * each what the options say, keeps them --hold-ms and reports, as one JSON
 * object on stdout, what happened to each: refused (connect failed),
 * timeout (connect did not complete), closed (by the peer: EOF, reset,
 * EPIPE) or open (still open at the end), and which frames came back.
 * With --repeat R --interval-ms I it does that R times, I ms apart, all
 * connections held to the end.
 *
 * usage: intruder --connect IP:PORT [--from IP] [--conns N] [--repeat R]
 *          [--interval-ms I] [--hold-ms H] [--hello NAME] [--node N]
 *          [--claim IP:PORT] [--auth [--data-mac]] [--fake-proof]
 *          [--fence-ack GEN]
 *          [--partial BYTES] [--flood] [--label TEXT]
 *
 *   --hello NAME     send a HELLO naming NAME, claiming --claim (default:
 *                    the --from address, port 7470), incarnation --node
 *   --auth           the HELLO says "I have a key" and carries a nonce
 *   --data-mac       ... and "I have data_mac on" (as the node attacked)
 *   --fake-proof     after a HELLO_ACK, answer AUTH with a random proof
 *   --fence-ack GEN  after the HELLO, a FENCE_ACK for generation GEN
 *   --partial BYTES  send BYTES of a frame whose header announces one
 *                    byte more, and hold: the frame never completes
 *   --flood          once admitted (HELLO_ACK), CONN_REQ and FENCE_REQ
 *                    frames as fast as the socket takes them until the
 *                    end (flood_frames in the JSON: how many were sent)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "src/ctl/wire.h"

#define NTYPES 16

enum state { S_CONNECTING, S_OPEN, S_CLOSED, S_REFUSED, S_TIMEOUT };

struct conn {
	int fd;
	enum state st;
	uint64_t t0_ns;
	unsigned char hdr[RY__CTL_HDR];
	unsigned hdr_got;
	uint32_t body_left;
	uint16_t type;	    /* of the frame being read */
	bool first_body;    /* the next body byte is its first */
	unsigned char *out; /* not yet sent */
	size_t out_n, out_off;
	bool proof_sent;
	bool flooding; /* --flood, admitted */
};

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static struct {
	const char *connect, *from, *hello, *claim, *label;
	unsigned conns, repeat, interval_ms, hold_ms, connect_ms;
	uint64_t node, fence_gen;
	bool auth, data_mac, fake_proof, fence, flood;
	size_t partial;
} o = {
    .conns = 1, .repeat = 1, .hold_ms = 1000, .connect_ms = 5000, .label = ""};

static struct {
	unsigned refused, timeout, closed, open, send_err_closed;
	unsigned frames[NTYPES], frames_other;
	unsigned refuse_code[256];
	uint64_t bytes_in, bytes_out, flood_frames;
	int first_errno;
} r;

/* --flood: a batch of CONN_REQ and FENCE_REQ frames, sent over and over */
static struct buf flood_batch;
#define FLOOD_BATCH 256

static struct conn *cs;
static unsigned ncs;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "intruder: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("realloc");
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_random(struct buf *b, size_t n)
{
	static int fd = -1;
	unsigned char x[64];

	if (fd < 0)
		fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	while (n) {
		size_t k = n < sizeof(x) ? n : sizeof(x);

		if (fd < 0 || read(fd, x, k) != (ssize_t)k)
			die("/dev/urandom");
		put(b, x, k);
		n -= k;
	}
}

/* A frame with w's body onto b. */
static void put_frame(struct buf *b, uint16_t type, const struct ry__wbuf *w)
{
	unsigned char hdr[RY__CTL_HDR];

	if (w->bad) {
		errno = EMSGSIZE;
		die("frame");
	}
	ry__ctl_hdr_put(hdr, (uint32_t)w->n, type);
	put(b, hdr, sizeof(hdr));
	put(b, w->b, w->n);
}

static void random_bytes(void *p, size_t n)
{
	struct buf b = {0};

	put_random(&b, n);
	memcpy(p, b.p, n);
	free(b.p);
}

static void build_flood(struct buf *b)
{
	unsigned char body[128];
	struct ry__wbuf w;

	for (unsigned i = 0; i < FLOOD_BATCH; i++) {
		ry__wbuf_init(&w, body, sizeof(body));
		if (i % 2) {
			struct ry__wire_fence f = {.wf_gen = i, .wf_n = 1};

			ry__wire_fence_put(&w, false, &f);
			put_frame(b, CTL_FENCE_REQ, &w);
		} else {
			struct ry__wire_conn cr = {.wc_attempt = i};

			ry__wire_conn_put(&w, CTL_CONN_REQ, &cr);
			put_frame(b, CTL_CONN_REQ, &w);
		}
	}
}

/* What every connection sends right after connecting. */
static void build_payload(struct buf *b)
{
	static unsigned char body[RY__CTL_MAX_FRAME];
	struct ry__wbuf w;

	if (o.hello) {
		static struct ry__wire_hello h;

		h.wh_node = o.node;
		snprintf(h.wh_name, sizeof(h.wh_name), "%s", o.hello);
		snprintf(h.wh_addr, sizeof(h.wh_addr), "%s", o.claim);
		h.wh_auth = o.auth;
		h.wh_data_mac = o.auth && o.data_mac;
		if (o.auth)
			random_bytes(h.wh_nonce, sizeof(h.wh_nonce));
		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_hello_put(&w, &h, false);
		put_frame(b, CTL_HELLO, &w);
	}
	if (o.fence) {
		struct ry__wire_fence f = {.wf_gen = o.fence_gen};

		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_fence_put(&w, true, &f);
		put_frame(b, CTL_FENCE_ACK, &w);
	}
	if (o.partial >= RY__CTL_HDR) {
		unsigned char hdr[RY__CTL_HDR];

		/* announce one byte more than will ever come */
		ry__ctl_hdr_put(hdr, (uint32_t)(o.partial - RY__CTL_HDR + 1),
				CTL_HELLO);
		put(b, hdr, sizeof(hdr));
		put_random(b, o.partial - RY__CTL_HDR);
	} else if (o.partial) {
		put_random(b, o.partial); /* not even a header */
	}
}

static void conn_close(struct conn *c, enum state st, int err)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->st = st;
	if (err && !r.first_errno)
		r.first_errno = err;
	free(c->out);
	c->out = NULL;
}

/* Queue bytes on c; flush() sends what the socket takes. */
static void queue(struct conn *c, const unsigned char *p, size_t n)
{
	unsigned char *q = realloc(c->out, c->out_n - c->out_off + n);

	if (!q)
		die("realloc");
	memmove(q, q + c->out_off, c->out_n - c->out_off);
	c->out_n -= c->out_off;
	c->out_off = 0;
	memcpy(q + c->out_n, p, n);
	c->out_n += n;
	c->out = q;
}

static void flush(struct conn *c)
{
	if (c->flooding && c->out_off == c->out_n) {
		queue(c, flood_batch.p, flood_batch.n);
		r.flood_frames += FLOOD_BATCH;
	}
	while (c->st == S_OPEN && c->out_off < c->out_n) {
		ssize_t n =
		    send(c->fd, c->out + c->out_off, c->out_n - c->out_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			r.send_err_closed++;
			conn_close(c, S_CLOSED, errno);
			return;
		}
		c->out_off += (size_t)n;
		r.bytes_out += (uint64_t)n;
	}
}

static void on_frame_start(struct conn *c)
{
	if (c->type < NTYPES)
		r.frames[c->type]++;
	else
		r.frames_other++;
	if (c->type == CTL_HELLO_ACK && o.flood)
		c->flooding = true;
	if (c->type == CTL_HELLO_ACK && o.fake_proof && !c->proof_sent) {
		unsigned char proof[RY__CTL_MAC], body[RY__CTL_MAC];
		struct buf b = {0};
		struct ry__wbuf w;

		random_bytes(proof, sizeof(proof));
		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_auth_put(&w, proof);
		put_frame(&b, CTL_AUTH, &w);
		queue(c, b.p, b.n);
		free(b.p);
		c->proof_sent = true;
	}
}

/* Count the frames in what came back; bodies are skipped. */
static void parse(struct conn *c, const unsigned char *p, size_t n)
{
	size_t k;

	while (n) {
		if (c->hdr_got < RY__CTL_HDR) {
			struct ry__ctl_hdr h;

			c->hdr[c->hdr_got++] = *p++;
			n--;
			if (c->hdr_got < RY__CTL_HDR)
				continue;
			ry__ctl_hdr_get(c->hdr, &h);
			c->body_left = h.h_len;
			c->type = h.h_type;
			c->first_body = true;
			on_frame_start(c);
			if (!c->body_left)
				c->hdr_got = 0;
			continue;
		}
		if (c->first_body && c->type == CTL_REFUSE)
			r.refuse_code[ry__wire_refuse_get(p, 1)]++;
		c->first_body = false;
		k = n < c->body_left ? n : c->body_left;

		p += k;
		n -= k;
		c->body_left -= (uint32_t)k;
		if (!c->body_left)
			c->hdr_got = 0;
	}
}

static void on_readable(struct conn *c)
{
	unsigned char buf[4096];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			r.bytes_in += (uint64_t)n;
			parse(c, buf, (size_t)n);
			continue;
		}
		if (n == 0) {
			conn_close(c, S_CLOSED, 0);
		} else if (errno != EAGAIN && errno != EINTR) {
			conn_close(c, S_CLOSED, errno);
		}
		return;
	}
}

static void on_connected(struct conn *c, const struct buf *payload)
{
	int err = 0;
	socklen_t sl = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
		err = errno;
	if (err) {
		conn_close(c, err == ECONNREFUSED ? S_REFUSED : S_CLOSED, err);
		return;
	}
	c->st = S_OPEN;
	if (payload->n)
		queue(c, payload->p, payload->n);
	flush(c);
}

static int parse_addr(const char *s, struct sockaddr_in *sa, bool port)
{
	char host[64];
	unsigned p = 0;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (port) {
		if (sscanf(s, "%63[^:]:%u", host, &p) != 2 || p > 65535)
			return -1;
		sa->sin_port = htons((uint16_t)p);
	} else {
		snprintf(host, sizeof(host), "%s", s);
	}
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void open_one(struct conn *c, const struct sockaddr_in *to,
		     const struct buf *payload)
{
	struct sockaddr_in from;
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->t0_ns = now_ns();
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		die("socket");
	setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (o.from) {
		parse_addr(o.from, &from, false);
		if (bind(c->fd, (struct sockaddr *)&from, sizeof(from)) < 0)
			die("bind --from");
	}
	c->st = S_CONNECTING;
	if (connect(c->fd, (const struct sockaddr *)to, sizeof(*to)) == 0) {
		on_connected(c, payload);
	} else if (errno != EINPROGRESS) {
		int e = errno;

		conn_close(c, e == ECONNREFUSED ? S_REFUSED : S_CLOSED, e);
	}
}

/* One round of poll over every live connection, up to ms. */
static void pump(unsigned ms, const struct buf *payload)
{
	struct pollfd *pf = calloc(ncs ? ncs : 1, sizeof(*pf));
	unsigned *idx = calloc(ncs ? ncs : 1, sizeof(*idx));
	unsigned n = 0;
	uint64_t now = now_ns();

	if (!pf || !idx)
		die("calloc");
	for (unsigned i = 0; i < ncs; i++) {
		struct conn *c = &cs[i];

		if (c->st == S_CONNECTING &&
		    now - c->t0_ns > o.connect_ms * 1000000ull) {
			conn_close(c, S_TIMEOUT, ETIMEDOUT);
			continue;
		}
		if (c->st != S_CONNECTING && c->st != S_OPEN)
			continue;
		pf[n].fd = c->fd;
		pf[n].events = POLLIN;
		if (c->st == S_CONNECTING || c->out_off < c->out_n)
			pf[n].events |= POLLOUT;
		idx[n++] = i;
	}
	if (poll(pf, n, (int)ms) > 0) {
		for (unsigned k = 0; k < n; k++) {
			struct conn *c = &cs[idx[k]];

			if (!pf[k].revents)
				continue;
			if (c->st == S_CONNECTING) {
				on_connected(c, payload);
				if (c->st != S_OPEN)
					continue;
			}
			if (pf[k].revents & (POLLIN | POLLHUP | POLLERR))
				on_readable(c);
			if (c->st == S_OPEN)
				flush(c);
		}
	} else {
		/* nothing: still give queued AUTHs a chance */
		for (unsigned k = 0; k < n; k++)
			if (cs[idx[k]].st == S_OPEN)
				flush(&cs[idx[k]]);
	}
	free(pf);
	free(idx);
}

static void pump_for(unsigned ms, const struct buf *payload)
{
	uint64_t end = now_ns() + ms * 1000000ull;

	for (;;) {
		uint64_t now = now_ns();

		if (now >= end)
			return;
		pump((unsigned)((end - now) / 1000000ull) + 1, payload);
	}
}

static void raise_nofile(unsigned want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want; /* root may */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void report(uint64_t ms)
{
	static const char *const names[NTYPES] = {
	    [1] = "hello",     [2] = "hello_ack", [3] = "conn_req",
	    [4] = "conn_rep",  [5] = "conn_rej",  [6] = "fence_req",
	    [7] = "fence_ack", [8] = "auth",	  [9] = "refuse",
	};
	bool first = true;

	for (unsigned i = 0; i < ncs; i++) {
		switch (cs[i].st) {
		case S_OPEN:
		case S_CONNECTING:
			r.open++;
			break;
		case S_CLOSED:
			r.closed++;
			break;
		case S_REFUSED:
			r.refused++;
			break;
		case S_TIMEOUT:
			r.timeout++;
			break;
		}
	}
	printf("{\"label\":");
	json_str(o.label);
	printf(",\"connect\":");
	json_str(o.connect);
	printf(",\"from\":");
	json_str(o.from ? o.from : "");
	printf(",\"connections\":%u,\"refused\":%u,\"closed\":%u,"
	       "\"open\":%u,\"timeout\":%u,\"closed_on_send\":%u,"
	       "\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64
	       ",\"flood_frames\":%" PRIu64 ",\"elapsed_ms\":%" PRIu64
	       ",\"first_error\":",
	       ncs, r.refused, r.closed, r.open, r.timeout, r.send_err_closed,
	       r.bytes_out, r.bytes_in, r.flood_frames, ms);
	json_str(r.first_errno ? strerror(r.first_errno) : "");
	printf(",\"frames\":{");
	for (unsigned t = 0; t < NTYPES; t++) {
		if (!r.frames[t])
			continue;
		printf("%s", first ? "" : ",");
		if (names[t])
			json_str(names[t]);
		else
			printf("\"type%u\"", t);
		printf(":%u", r.frames[t]);
		first = false;
	}
	if (r.frames_other)
		printf("%s\"other\":%u", first ? "" : ",", r.frames_other);
	printf("},\"refuse_codes\":{");
	first = true;
	for (unsigned k = 0; k < 256; k++) {
		if (!r.refuse_code[k])
			continue;
		printf("%s\"%u\":%u", first ? "" : ",", k, r.refuse_code[k]);
		first = false;
	}
	printf("}}\n");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: intruder --connect IP:PORT [--from IP] [--conns N] "
		"[--repeat R]\n"
		"         [--interval-ms I] [--hold-ms H] [--hello NAME] "
		"[--node N]\n"
		"         [--claim IP:PORT] [--auth [--data-mac]] "
		"[--fake-proof] [--fence-ack GEN]\n"
		"         [--partial BYTES] [--flood] [--label TEXT]\n");
	exit(2);
}

static unsigned long long num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !*s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"connect", required_argument, NULL, 'c'},
	    {"from", required_argument, NULL, 'f'},
	    {"conns", required_argument, NULL, 'n'},
	    {"repeat", required_argument, NULL, 'r'},
	    {"interval-ms", required_argument, NULL, 'i'},
	    {"hold-ms", required_argument, NULL, 'H'},
	    {"connect-ms", required_argument, NULL, 'T'},
	    {"hello", required_argument, NULL, 'h'},
	    {"node", required_argument, NULL, 'N'},
	    {"claim", required_argument, NULL, 'C'},
	    {"auth", no_argument, NULL, 'a'},
	    {"data-mac", no_argument, NULL, 'd'},
	    {"fake-proof", no_argument, NULL, 'p'},
	    {"fence-ack", required_argument, NULL, 'F'},
	    {"partial", required_argument, NULL, 'P'},
	    {"flood", no_argument, NULL, 'x'},
	    {"label", required_argument, NULL, 'l'},
	    {NULL, 0, NULL, 0},
	};
	static char claim[96];
	struct sockaddr_in to;
	struct buf payload = {0};
	uint64_t t0;
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.connect = optarg;
			break;
		case 'f':
			o.from = optarg;
			break;
		case 'n':
			o.conns = (unsigned)num(optarg);
			break;
		case 'r':
			o.repeat = (unsigned)num(optarg);
			break;
		case 'i':
			o.interval_ms = (unsigned)num(optarg);
			break;
		case 'H':
			o.hold_ms = (unsigned)num(optarg);
			break;
		case 'T':
			o.connect_ms = (unsigned)num(optarg);
			break;
		case 'h':
			o.hello = optarg;
			break;
		case 'N':
			o.node = num(optarg);
			break;
		case 'C':
			o.claim = optarg;
			break;
		case 'a':
			o.auth = true;
			break;
		case 'd':
			o.data_mac = true;
			break;
		case 'p':
			o.fake_proof = true;
			break;
		case 'F':
			o.fence = true;
			o.fence_gen = num(optarg);
			break;
		case 'P':
			o.partial = (size_t)num(optarg);
			break;
		case 'x':
			o.flood = true;
			break;
		case 'l':
			o.label = optarg;
			break;
		default:
			usage();
		}
	}
	if (!o.connect || optind != argc || !o.conns || !o.repeat ||
	    parse_addr(o.connect, &to, true) < 0 ||
	    (o.from && parse_addr(o.from, &(struct sockaddr_in){0}, false)))
		usage();
	if (!o.claim) {
		snprintf(claim, sizeof(claim), "%s:7470",
			 o.from ? o.from : "127.0.0.1");
		o.claim = claim;
	}
	if (!o.node)
		o.node = ((uint64_t)getpid() << 32) ^ now_ns();
	if (o.fence && !o.hello)
		o.hello = "x";
	build_payload(&payload);
	if (o.flood)
		build_flood(&flood_batch);
	raise_nofile(o.conns * o.repeat + 64);
	cs = calloc((size_t)o.conns * o.repeat, sizeof(*cs));
	if (!cs)
		die("calloc");
	t0 = now_ns();
	for (unsigned rep = 0; rep < o.repeat; rep++) {
		uint64_t next = now_ns() + o.interval_ms * 1000000ull;

		for (unsigned i = 0; i < o.conns; i++) {
			open_one(&cs[ncs++], &to, &payload);
			if (i % 64 == 63)
				pump(0, &payload);
		}
		if (rep + 1 < o.repeat) {
			uint64_t now = now_ns();

			pump_for(next > now
				     ? (unsigned)((next - now) / 1000000ull)
				     : 0,
				 &payload);
		}
	}
	pump_for(o.hold_ms, &payload);
	report((now_ns() - t0) / 1000000ull);
	free(payload.p);
	return 0;
}
