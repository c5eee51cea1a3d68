// SPDX-License-Identifier: MIT
/*
 * forward.c - OTLP/HTTP POST with retries on a reused libcurl easy handle.
 *
 * Contract: see forward.h.  Waiting between attempts sleeps in 50 ms
 * steps so a shutdown (*stop) is noticed quickly.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "forward.h"

struct sp_forward {
	CURL *curl;
	char *url;
	uint32_t max_attempts;
	long retry_after_s;	/* from the last answer, -1 none */
};

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct sp_forward *f = ud;
	size_t len = size * n;
	static const char key[] = "retry-after:";

	if (len > sizeof(key) - 1 && !strncasecmp(buf, key, sizeof(key) - 1)) {
		const char *p = buf + sizeof(key) - 1;

		while (p < buf + len && isspace((unsigned char)*p))
			p++;
		if (p < buf + len && isdigit((unsigned char)*p))
			f->retry_after_s = strtol(p, NULL, 10);
	}
	return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
	(void)buf;
	(void)ud;
	return size * n;	/* the response body is not needed */
}

int sp_forward__new(const char *url, uint32_t max_attempts,
		    struct sp_forward **out)
{
	static bool inited;
	struct sp_forward *f;

	*out = NULL;
	if (!inited) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT))
			return -ENOMEM;
		inited = true;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->url = strdup(url);
	f->curl = curl_easy_init();
	if (!f->url || !f->curl) {
		sp_forward__free(f);
		return -ENOMEM;
	}
	f->max_attempts = max_attempts ? max_attempts : 5;
	*out = f;
	return 0;
}

void sp_forward__free(struct sp_forward *f)
{
	if (!f)
		return;
	if (f->curl)
		curl_easy_cleanup(f->curl);
	free(f->url);
	free(f);
}

static void nap(long ms, const volatile bool *stop)
{
	struct timespec ts = { 0, 50 * 1000000L };

	for (long t = 0; t < ms; t += 50) {
		if (stop && *stop)
			return;
		nanosleep(&ts, NULL);
	}
}

int sp_forward__post(struct sp_forward *f, const uint8_t *body, size_t len,
		     bool gzip, const volatile bool *stop, uint32_t *retries,
		     long *last_status)
{
	struct curl_slist *hdr = NULL, *h;
	long delay_ms = 500, status = 0;
	int err = -EAGAIN;

	*retries = 0;
	hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
	if (hdr && gzip) {
		h = curl_slist_append(hdr, "Content-Encoding: gzip");
		if (!h) {
			curl_slist_free_all(hdr);
			hdr = NULL;
		} else {
			hdr = h;
		}
	}
	if (!hdr)
		return -ENOMEM;
	curl_easy_reset(f->curl);
	curl_easy_setopt(f->curl, CURLOPT_URL, f->url);
	curl_easy_setopt(f->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, (const char *)body);
	curl_easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(f->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(f->curl, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(f->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(f->curl, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(f->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	for (uint32_t attempt = 0; attempt < f->max_attempts; attempt++) {
		CURLcode rc;

		if (attempt) {
			long wait = f->retry_after_s >= 0 ?
					    f->retry_after_s * 1000 : delay_ms;

			if (wait > 30000)
				wait = 30000;
			nap(wait, stop);
			if (stop && *stop)
				break;
			delay_ms = delay_ms * 2 > 8000 ? 8000 : delay_ms * 2;
			(*retries)++;
		}
		f->retry_after_s = -1;
		rc = curl_easy_perform(f->curl);
		if (rc != CURLE_OK) {
			status = 0;
			continue;	/* transport failure: retryable */
		}
		curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			err = 0;
			break;
		}
		if (status != 429 && status != 502 && status != 503 &&
		    status != 504) {
			err = -EIO;
			break;
		}
	}
	if (last_status)
		*last_status = status;
	curl_slist_free_all(hdr);
	return err;
}
