/* libFuzzer target: a process's environment block as /proc/PID/environ
 * holds it (untrusted: the process wrote it), scanned for the OTel
 * resource variables (src/collector/procs/otel_env.c), and the bytes as
 * an OTEL_RESOURCE_ATTRIBUTES value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/procs/otel_env.h"

/* Every string is terminated within its field and holds no control byte. */
static void check_attrs(const struct sp_otel_attrs *a)
{
	if (a->n > SP_OTEL_ATTRS_MAX)
		abort();
	for (uint32_t i = 0; i < a->n; i++) {
		if (!memchr(a->a[i].key, 0, sizeof(a->a[i].key)) || !a->a[i].key[0] ||
		    !memchr(a->a[i].value, 0, sizeof(a->a[i].value)))
			abort();
		for (const char *p = a->a[i].value; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(a->a[i].key, a->a[j].key))
				abort();	/* a key appears once */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sp_otel_identity id;
	static struct sp_otel_attrs attrs;
	/* An exactly sized heap copy so ASan sees any read past the end. */
	char *buf = malloc(size ? size : 1);
	uint32_t bad = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	sp_otel_env__scan(buf, size, &id);
	if (!memchr(id.service_name, 0, sizeof(id.service_name)))
		abort();
	check_attrs(&id.attrs);
	if (id.invalid && id.attrs.n)
		abort();	/* discarded means empty */
	if (sp_otel_env__parse_attrs(buf, size, &attrs, &bad)) {
		if (attrs.n || !bad)
			abort();
	} else {
		check_attrs(&attrs);
	}
	free(buf);
	return 0;
}
