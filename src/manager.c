// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager's public entry points.  Until the rail manager lands
 * (issue "rail manager") every call says plainly that it is not there:
 * -ENOSYS, as documented in railyard.h.
 */
#include <errno.h>

#include <railyard/railyard.h>

int ry_manager_create(const struct ry_config *cfg, struct ry_manager **mgr_p)
{
	return -ENOSYS;
}

int ry_manager_create_from_file(const char *path, struct ry_manager **mgr_p)
{
	return -ENOSYS;
}

void ry_manager_destroy(struct ry_manager *mgr)
{
}

int ry_progress(struct ry_manager *mgr)
{
	return -ENOSYS;
}

int ry_event_fd(struct ry_manager *mgr)
{
	return -ENOSYS;
}

int ry_progress_thread_start(struct ry_manager *mgr)
{
	return -ENOSYS;
}

void ry_progress_thread_stop(struct ry_manager *mgr)
{
}

int ry_mr_reg(struct ry_manager *mgr, void *addr, size_t len, unsigned access,
	      struct ry_mr **mr_p)
{
	return -ENOSYS;
}

int ry_mr_dereg(struct ry_mr *mr)
{
	return mr ? -ENOSYS : 0;
}

int ry_mr_pack(const struct ry_mr *mr, void *buf, size_t len)
{
	return -ENOSYS;
}

int ry_peer_get(struct ry_manager *mgr, const char *name_or_addr,
		struct ry_peer **peer_p)
{
	return -ENOSYS;
}

int ry_write(struct ry_peer *peer, struct ry_mr *local, size_t local_off,
	     const void *remote_desc, size_t desc_len, size_t remote_off,
	     size_t len, ry_complete_fn cb, void *context)
{
	return -ENOSYS;
}

int ry_read(struct ry_peer *peer, struct ry_mr *local, size_t local_off,
	    const void *remote_desc, size_t desc_len, size_t remote_off,
	    size_t len, ry_complete_fn cb, void *context)
{
	return -ENOSYS;
}

int ry_poll_completions(struct ry_manager *mgr, struct ry_completion *out,
			int max)
{
	return -ENOSYS;
}
