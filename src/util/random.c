// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

#include "src/util/clock.h"
#include "src/util/log.h"
#include "src/util/random.h"

int ry__rand_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	/* A signal may cut a read short or interrupt it; neither is an error.
	 */
	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			RY_ERR("random", "getrandom: %m");
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint64_t ry__rand64(void)
{
	uint64_t v;

	if (ry__rand_bytes(&v, sizeof(v)))
		v = ry__now_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}
