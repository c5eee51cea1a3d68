/* SPDX-License-Identifier: MIT */
/*
 * config.h - exporter configuration: defaults, validation, the request URL
 * (private; the public half is in exporter.h).
 *
 * sp_export_config__resolve: copies in to out with every zero numeric
 * field replaced by its default, checks ranges and builds the URL
 * (*url malloc'd, NULL when there is no network export).  0, or -EINVAL /
 * -ENOMEM with a one-line message.
 * sp_export__url: profiles_url validated and used as is (empty path ->
 * "/"), else endpoint validated with "/v1development/profiles" appended to
 * its path (one '/' between).  Only http and https with a host.
 */
#ifndef SPANPROF_EXPORT_CONFIG_H
#define SPANPROF_EXPORT_CONFIG_H

#include <stddef.h>

#include "export/exporter.h"

#define SP_EXPORT_SIGNAL_PATH "v1development/profiles"
#define SP_EXPORT_DEF_TIMEOUT_MS 10000u
#define SP_EXPORT_DEF_ATTEMPTS 5u
#define SP_EXPORT_DEF_INITIAL_BACKOFF_MS 1000u
#define SP_EXPORT_DEF_MAX_BACKOFF_MS 30000u
#define SP_EXPORT_DEF_QUEUE_BYTES ((size_t)16 << 20)
#define SP_EXPORT_DEF_MAX_FILES 100u
#define SP_EXPORT_DEF_MAX_FILE_BYTES ((size_t)64 << 20)
#define SP_EXPORT_MAX_TIMEOUT_MS 86400000u

int sp_export__url(const char *endpoint, const char *profiles_url, char **url, char *err,
		   size_t err_len);
int sp_export_config__resolve(const struct sp_export_config *in, struct sp_export_config *out,
			      char **url, char *err, size_t err_len);

#endif
