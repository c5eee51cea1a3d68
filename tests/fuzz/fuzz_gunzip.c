/* libFuzzer target: bounded gunzip (src/profile/gzip.c): never more than
 * max_out bytes, whatever the stream claims. */
#include <stdint.h>
#include <stdlib.h>

#include "profile/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *out = NULL;
	size_t len = 0;

	if (sp_gunzip(data, size, 1 << 20, &out, &len) == 0 && len > (1 << 20))
		abort();
	free(out);
	return 0;
}
