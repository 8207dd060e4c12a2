// SPDX-License-Identifier: BSD-2-Clause
/* serve --metrics's HTTP endpoint (metrics_http.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "src/cli/metrics_http.h"

#define TOKEN_MAX 256

struct cli_mhttp {
	struct ry_manager *mgr;
	struct MHD_Daemon *d;
	char token[TOKEN_MAX]; /* "": none */
	size_t token_len;
	/* the last rendering, reused for CLI_MHTTP_CACHE_MS */
	pthread_mutex_t lock;
	char *text;
	size_t len, cap;
	uint64_t at_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A response with a copy of the cached text, rendered again if stale. */
static struct MHD_Response *metrics_response(struct cli_mhttp *h)
{
	struct MHD_Response *r = NULL;
	uint64_t t = now_ms();

	pthread_mutex_lock(&h->lock);
	if (!h->text || t - h->at_ms >= CLI_MHTTP_CACHE_MS) {
		if (!h->text) {
			h->text = malloc(64 << 10);
			if (!h->text)
				goto out;
			h->cap = 64 << 10;
		}
		/* sized like snprintf; a second snapshot may be a bit longer */
		for (;;) {
			int n = ry_metrics_render(h->mgr, h->text, h->cap);
			size_t cap;
			char *nb;

			if (n < 0)
				goto out;
			if ((size_t)n < h->cap) {
				h->len = (size_t)n;
				break;
			}
			cap = (size_t)n + (size_t)n / 4 + 4096;
			nb = realloc(h->text, cap);
			if (!nb)
				goto out;
			h->text = nb;
			h->cap = cap;
		}
		h->at_ms = t;
	}
	r = MHD_create_response_from_buffer(h->len, h->text,
					    MHD_RESPMEM_MUST_COPY);
out:
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* The bearer token, compared in time independent of where it differs. */
static bool authorized(const struct cli_mhttp *h, struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(
	    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned char diff = 0;
	size_t i;

	if (!h->token_len)
		return true;
	if (!v || strncmp(v, "Bearer ", 7) || strlen(v + 7) != h->token_len)
		return false;
	for (i = 0; i < h->token_len; i++)
		diff |= (unsigned char)(v[7 + i] ^ h->token[i]);
	return !diff;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	static const char not_found[] = "not found: try /metrics\n";
	static const char denied[] = "a bearer token is required\n";
	struct cli_mhttp *h = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned code = MHD_HTTP_OK;

	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO; /* closes the connection */
	if (!authorized(h, conn)) {
		code = MHD_HTTP_UNAUTHORIZED;
		r = MHD_create_response_from_buffer(
		    strlen(denied), (void *)denied, MHD_RESPMEM_PERSISTENT);
		if (r)
			MHD_add_response_header(
			    r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	} else if (strcmp(url, "/metrics")) {
		code = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(strlen(not_found),
						    (void *)not_found,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = metrics_response(h);
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK
				    ? "text/plain; version=0.0.4; charset=utf-8"
				    : "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* The token: the file's first line, from a file only its owner can read. */
static int read_token(const char *path, struct cli_mhttp *h)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		fprintf(stderr, "railyard serve: --metrics-token %s: %s\n",
			path, strerror(errno));
		goto out;
	}
	if (st.st_mode & 077) {
		fprintf(stderr,
			"railyard serve: --metrics-token %s: mode %04o, "
			"readable by others: chmod 600 it\n",
			path, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
		goto out;
	}
	n = read(fd, h->token, sizeof(h->token) - 1);
	if (n < 0) {
		ret = -errno;
		fprintf(stderr, "railyard serve: --metrics-token %s: %s\n",
			path, strerror(errno));
		goto out;
	}
	h->token[n] = 0;
	h->token_len = strcspn(h->token, "\r\n");
	h->token[h->token_len] = 0;
	if (h->token_len < 16) {
		fprintf(stderr,
			"railyard serve: --metrics-token %s: the token is "
			"%zu bytes, at least 16 are needed\n",
			path, h->token_len);
		ret = -EINVAL;
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int cli_mhttp_start(struct ry_manager *mgr, int fd, const char *token_file,
		    struct cli_mhttp **h_p)
{
	struct cli_mhttp *h = calloc(1, sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	h->mgr = mgr;
	pthread_mutex_init(&h->lock, NULL);
	if (token_file) {
		ret = read_token(token_file, h);
		if (ret) {
			cli_mhttp_stop(h);
			return ret;
		}
	}
	h->d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY, 0, NULL,
	    NULL, answer, h, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CLI_MHTTP_IDLE_S,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)CLI_MHTTP_MAX,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)CLI_MHTTP_PER_SOURCE,
	    MHD_OPTION_END);
	if (!h->d) {
		fprintf(stderr, "railyard serve: cannot start the metrics "
				"server\n");
		cli_mhttp_stop(h);
		return -EIO;
	}
	*h_p = h;
	return 0;
}

void cli_mhttp_stop(struct cli_mhttp *h)
{
	if (!h)
		return;
	if (h->d)
		MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h->text);
	free(h);
}
