// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: any bytes given to the config loader either load or are
 * rejected with problems reported; never a crash, a hang or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <railyard/config.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sink(const struct ry_config_error *e, void *arg)
{
	size_t *n = arg;

	/* touch every string, so a dangling pointer shows under ASan */
	*n += strlen(e->file) + strlen(e->message) + strlen(e->hint);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ry_config *cfg = NULL;
	char *text = malloc(size + 1);
	size_t n = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0; /* the loader rejects embedded NULs before parsing */
	if (ry_config_parse(text, "fuzz.conf", &cfg, sink, &n) == 0) {
		if (ry_config_validate(cfg, sink, &n) != 0)
			abort(); /* loaded configs are valid by definition */
		ry_config_free(cfg);
	}
	free(text);
	return 0;
}
