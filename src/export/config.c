/* SPDX-License-Identifier: MIT */
/*
 * config.c - exporter configuration: defaults, OTEL_EXPORTER_OTLP_*
 * variables, validation and the request URL (contracts: exporter.h,
 * config.h).
 *
 * URLs are parsed with libcurl's URL API (the same parser that will send
 * the request), so what is validated is what is used.  Following the
 * OpenTelemetry exporter specification, the signal-specific variable
 * (OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT) is used as is and the generic one
 * gets the signal path appended.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "export/config.h"
#include "export/http_parse.h"

void sp_export_config__init(struct sp_export_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->gzip = true;
	cfg->drop_policy = SP_DROP_OLDEST;
}

static int url_err(const char *what, const char *s, const char *why, char *err,
		   size_t err_len)
{
	snprintf(err, err_len, "%s \"%.200s\": %s (want e.g. http://localhost:4318)", what, s,
		 why);
	return -EINVAL;
}

int sp_export__url(const char *endpoint, const char *profiles_url, char **url, char *err,
		   size_t err_len)
{
	const char *src = profiles_url ? profiles_url : endpoint;
	const char *what = profiles_url ? "profiles URL" : "export endpoint";
	char *scheme = NULL, *host = NULL, *path = NULL, *newpath = NULL, *full = NULL;
	CURLU *u = NULL;
	CURLUcode uc;
	int r = 0;

	*url = NULL;
	if (!src)
		return 0;
	for (const char *p = src; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return url_err(what, src, "contains a space or control character", err,
				       err_len);
	/* curl is lenient ("http:///h" is host h, "h:4318" a scheme "h"):
	 * demand scheme://host explicitly */
	{
		const char *sep = strstr(src, "://");

		if (!sep)
			return url_err(what, src, "no scheme: start with http:// or https://",
				       err, err_len);
		if (!((sep - src == 4 && !strncasecmp(src, "http", 4)) ||
		      (sep - src == 5 && !strncasecmp(src, "https", 5))))
			return url_err(what, src, "scheme must be http or https", err, err_len);
		if (sep[3] == '/' || sep[3] == '\0' || sep[3] == '?' || sep[3] == '#')
			return url_err(what, src, "no host", err, err_len);
	}
	u = curl_url();
	if (!u)
		goto nomem;
	uc = curl_url_set(u, CURLUPART_URL, src, CURLU_NON_SUPPORT_SCHEME);
	if (uc == CURLUE_OUT_OF_MEMORY)
		goto nomem;
	if (uc) {
		r = url_err(what, src, curl_url_strerror(uc), err, err_len);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
		r = url_err(what, src, "scheme must be http or https", err, err_len);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) || !*host) {
		r = url_err(what, src, "no host", err, err_len);
		goto out;
	}
	if (!profiles_url) {
		size_t n;

		if (curl_url_get(u, CURLUPART_PATH, &path, 0))
			goto nomem;
		n = strlen(path);
		while (n && path[n - 1] == '/')
			n--;
		if (asprintf(&newpath, "%.*s/%s", (int)n, path, SP_EXPORT_SIGNAL_PATH) < 0) {
			newpath = NULL;
			goto nomem;
		}
		uc = curl_url_set(u, CURLUPART_PATH, newpath, 0);
		if (uc) {
			r = url_err(what, src, curl_url_strerror(uc), err, err_len);
			goto out;
		}
	}
	if (curl_url_get(u, CURLUPART_URL, &full, 0))
		goto nomem;
	*url = strdup(full);
	if (!*url)
		goto nomem;
	goto out;
nomem:
	snprintf(err, err_len, "out of memory parsing the export URL");
	r = -ENOMEM;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(path);
	curl_free(full);
	free(newpath);
	curl_url_cleanup(u);
	return r;
}

static int readable(const char *what, const char *path, char *err, size_t err_len)
{
	if (path && access(path, R_OK)) {
		int r = -errno;

		snprintf(err, err_len, "%s %s: %s", what, path, strerror(-r));
		return -EINVAL;
	}
	return 0;
}

int sp_export_config__resolve(const struct sp_export_config *in, struct sp_export_config *out,
			      char **url, char *err, size_t err_len)
{
	int r;

	*url = NULL;
	*out = *in;
	if (!out->timeout_ms)
		out->timeout_ms = SP_EXPORT_DEF_TIMEOUT_MS;
	if (!out->max_attempts)
		out->max_attempts = SP_EXPORT_DEF_ATTEMPTS;
	if (!out->initial_backoff_ms)
		out->initial_backoff_ms = SP_EXPORT_DEF_INITIAL_BACKOFF_MS;
	if (!out->max_backoff_ms)
		out->max_backoff_ms = SP_EXPORT_DEF_MAX_BACKOFF_MS;
	if (!out->queue_bytes)
		out->queue_bytes = SP_EXPORT_DEF_QUEUE_BYTES;
	if (!out->max_files)
		out->max_files = SP_EXPORT_DEF_MAX_FILES;
	if (!out->max_file_bytes)
		out->max_file_bytes = SP_EXPORT_DEF_MAX_FILE_BYTES;

	if (!out->endpoint && !out->profiles_url && !out->output_dir) {
		snprintf(err, err_len,
			 "nothing to export to: set an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) or an output directory");
		return -EINVAL;
	}
	if (out->drop_policy != SP_DROP_OLDEST && out->drop_policy != SP_DROP_NEWEST) {
		snprintf(err, err_len, "export drop policy %d unknown: use oldest or newest",
			 (int)out->drop_policy);
		return -EINVAL;
	}
	if (out->timeout_ms > SP_EXPORT_MAX_TIMEOUT_MS) {
		snprintf(err, err_len, "export timeout %u ms is over 24 h", out->timeout_ms);
		return -EINVAL;
	}
	if (out->max_backoff_ms < out->initial_backoff_ms) {
		snprintf(err, err_len,
			 "export max backoff (%u ms) is below the initial backoff (%u ms)",
			 out->max_backoff_ms, out->initial_backoff_ms);
		return -EINVAL;
	}
	r = readable("CA file", out->ca_file, err, err_len);
	if (!r)
		r = readable("client certificate", out->client_cert, err, err_len);
	if (!r)
		r = readable("client key", out->client_key, err, err_len);
	if (!r && !out->client_cert != !out->client_key) {
		snprintf(err, err_len, "client certificate and client key go together: set both");
		r = -EINVAL;
	}
	if (r)
		return r;
	return sp_export__url(out->endpoint, out->profiles_url, url, err, err_len);
}

static const char *env2(const char *specific, const char *generic, const char **name)
{
	const char *v = getenv(specific);

	if (v && *v) {
		*name = specific;
		return v;
	}
	v = getenv(generic);
	if (v && *v) {
		*name = generic;
		return v;
	}
	return NULL;
}

static int count_header(const char *k, const char *v, void *ctx)
{
	(void)k;
	(void)v;
	(*(int *)ctx)++;
	return 0;
}

#define ENVP(x) "OTEL_EXPORTER_OTLP_PROFILES_" x, "OTEL_EXPORTER_OTLP_" x

int sp_export_config__from_env(struct sp_export_config *cfg, char *err, size_t err_len)
{
	const char *v, *name = "";
	char *url = NULL;
	int r;

	if (!cfg->endpoint && !cfg->profiles_url) {
		v = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
		if (v && *v) {
			name = "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT";
			r = sp_export__url(NULL, v, &url, err, err_len);
			if (!r)
				cfg->profiles_url = v;
		} else if ((v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
			name = "OTEL_EXPORTER_OTLP_ENDPOINT";
			r = sp_export__url(v, NULL, &url, err, err_len);
			if (!r)
				cfg->endpoint = v;
		} else {
			r = 0;
		}
		free(url);
		if (r) {
			/* prefix the variable's name to the message */
			char tmp[256];

			snprintf(tmp, sizeof(tmp), "%s", err);
			snprintf(err, err_len, "%s: %s", name, tmp);
			return r;
		}
	}
	if (!cfg->headers && (v = env2(ENVP("HEADERS"), &name))) {
		int n = 0;

		r = sp_http__parse_headers(v, count_header, &n);
		if (r) {
			snprintf(err, err_len,
				 "%s: entry %d is malformed: want key=value pairs separated by ',', values percent-encoded, at most 64 of 8 KiB",
				 name, n + 1);
			return -EINVAL;
		}
		cfg->headers = v;
	}
	if ((v = env2(ENVP("COMPRESSION"), &name))) {
		if (!strcmp(v, "gzip")) {
			cfg->gzip = true;
		} else if (!strcmp(v, "none")) {
			cfg->gzip = false;
		} else {
			snprintf(err, err_len, "%s=%.64s: use gzip or none", name, v);
			return -EINVAL;
		}
	}
	if (!cfg->timeout_ms && (v = env2(ENVP("TIMEOUT"), &name))) {
		uint64_t ms = 0;
		const char *p = v;

		for (; *p >= '0' && *p <= '9' && ms <= SP_EXPORT_MAX_TIMEOUT_MS; p++)
			ms = ms * 10 + (uint64_t)(*p - '0');
		if (*p || !ms || ms > SP_EXPORT_MAX_TIMEOUT_MS) {
			snprintf(err, err_len, "%s=%.64s: want milliseconds, 1..%u", name, v,
				 SP_EXPORT_MAX_TIMEOUT_MS);
			return -EINVAL;
		}
		cfg->timeout_ms = (uint32_t)ms;
	}
	if (!cfg->ca_file && (v = env2(ENVP("CERTIFICATE"), &name)))
		cfg->ca_file = v;
	if (!cfg->client_cert && (v = env2(ENVP("CLIENT_CERTIFICATE"), &name)))
		cfg->client_cert = v;
	if (!cfg->client_key && (v = env2(ENVP("CLIENT_KEY"), &name)))
		cfg->client_key = v;
	return 0;
}
