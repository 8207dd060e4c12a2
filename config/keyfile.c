// SPDX-License-Identifier: BSD-2-Clause
/*
 * The key_file: the control channel's pre-shared key (src/auth.c).  Its
 * bytes pass through a stack buffer that is wiped before returning.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <sodium.h>

#include "config/config_int.h"

#define KEY_HEX (2 * RY__KEY_BYTES)

int ry__key_file_read(const char *path, unsigned char key[RY__KEY_BYTES],
		      char *why, size_t why_len, char *hint, size_t hint_len)
{
	/* one byte more than the longest valid file, to see a longer one */
	unsigned char buf[KEY_HEX + 2];
	size_t n = 0, hex_len;
	struct stat st;
	ssize_t r;
	int fd, ret = 0;

	hint[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "key_file '%s': %s", path,
			 strerror(errno));
		snprintf(hint, hint_len,
			 "create it with: head -c 32 /dev/urandom > %s; "
			 "chmod 600 %s",
			 path, path);
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "key_file '%s' is not a regular file",
			 path);
		snprintf(hint, hint_len, "point key_file at the key itself");
		ret = -EINVAL;
		goto out;
	}
	/* like ssh: a key others can read is no secret */
	if (st.st_mode & 077) {
		snprintf(why, why_len,
			 "key_file '%s' is accessible by group or others "
			 "(mode %04o)",
			 path, (unsigned)(st.st_mode & 07777));
		snprintf(hint, hint_len, "chmod 600 %s", path);
		ret = -EPERM;
		goto out;
	}
	while (n < sizeof(buf)) {
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			snprintf(why, why_len, "key_file '%s': %s", path,
				 strerror(errno));
			goto out;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	hex_len = n;
	if (hex_len && buf[hex_len - 1] == '\n')
		hex_len--;
	if (n == RY__KEY_BYTES) {
		memcpy(key, buf, RY__KEY_BYTES);
	} else if (hex_len != KEY_HEX ||
		   sodium_hex2bin(key, RY__KEY_BYTES, (const char *)buf,
				  hex_len, NULL, NULL, NULL)) {
		snprintf(why, why_len,
			 "key_file '%s' holds %zu%s bytes: want 32 raw bytes "
			 "or 64 hex digits",
			 path, n, n == sizeof(buf) ? " or more" : "");
		snprintf(hint, hint_len,
			 "make one with: openssl rand -hex 32 > %s (or head "
			 "-c 32 /dev/urandom > %s)",
			 path, path);
		ret = -EINVAL;
	}
out:
	sodium_memzero(buf, sizeof(buf));
	if (ret)
		sodium_memzero(key, RY__KEY_BYTES);
	close(fd);
	return ret;
}
