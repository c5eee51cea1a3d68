/* libFuzzer target: the OTLP ExportProfilesServiceRequest decoder
 * (src/profile/otlp_decode.c).  A request it accepts must validate and re-encode. */
#include <stdint.h>
#include <stdlib.h>

#include "profile/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_profile *p = NULL;
	uint8_t *out = NULL;
	size_t len;

	if (sp_otlp__decode(data, size, &p) == 0) {
		if (sp_profile__validate(p) != 0)
			abort();
		if (sp_otlp__encode(p, &out, &len) != 0)
			abort();
		free(out);
		if (sp_pprof__encode(p, &out, &len) != 0)
			abort();
		free(out);
	}
	sp_profile__free(p);
	return 0;
}
