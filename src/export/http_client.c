/* SPDX-License-Identifier: MIT */
/*
 * http_client.c - one OTLP/HTTP POST attempt on a reused libcurl handle
 * (contract: http_client.h).
 *
 * The transfer runs on a private multi handle (curl_multi_perform +
 * curl_multi_poll, at most 1 s per poll) so that sp_http_client__wakeup
 * (curl_multi_wakeup) interrupts a stalled transfer at once; the progress
 * callback also aborts when *stop is set.  A transfer whose status line
 * arrived but whose body did not complete (timeout, reset) is a transport
 * failure, not an answer: the server's verdict is unknown, so it is
 * retried like a connection failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "export/http_client.h"
#include "export/http_parse.h"
#include "export/monotonic.h"

struct sp_http_client {
	CURL *easy;
	CURLM *multi;
	struct curl_slist *hdrs;
	const atomic_bool *stop;
	struct sp_http_result *cur;	/* result being filled by callbacks */
	uint8_t *body;			/* SP_HTTP_BODY_MAX bytes */
	char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t sp_curl_once = PTHREAD_ONCE_INIT;
static CURLcode sp_curl_init_rc;

static void sp_curl_init(void)
{
	sp_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool stopped(const struct sp_http_client *c)
{
	return c->stop && atomic_load(c->stop);
}

/* Copies a header's value (after "name:") without OWS and CRLF. */
static void header_value(const char *b, const char *e, char *out, size_t out_len)
{
	size_t n;

	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	while (e > b && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	n = (size_t)(e - b);
	if (n >= out_len) {
		out[0] = '\0';	/* too long to be valid: treat as absent/garbled */
		return;
	}
	memcpy(out, b, n);
	out[n] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct sp_http_client *c = ud;
	struct sp_http_result *r = c->cur;
	size_t len = size * nitems;
	static const char ra[] = "retry-after:", ct[] = "content-type:";

	if (len >= 5 && !memcmp(buf, "HTTP/", 5)) {
		/* a new response (after 1xx): forget the previous one's */
		r->has_retry_after = false;
		r->retry_after[0] = '\0';
		r->content_type[0] = '\0';
		r->body_len = 0;
		r->truncated = false;
	} else if (len > sizeof(ra) - 1 && !strncasecmp(buf, ra, sizeof(ra) - 1)) {
		r->has_retry_after = true;
		header_value(buf + sizeof(ra) - 1, buf + len, r->retry_after,
			     sizeof(r->retry_after));
	} else if (len > sizeof(ct) - 1 && !strncasecmp(buf, ct, sizeof(ct) - 1)) {
		header_value(buf + sizeof(ct) - 1, buf + len, r->content_type,
			     sizeof(r->content_type));
	}
	return len;
}

static size_t on_body(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct sp_http_client *c = ud;
	struct sp_http_result *r = c->cur;
	size_t len = size * nmemb, room = SP_HTTP_BODY_MAX - r->body_len;

	if (len > room) {
		memcpy(c->body + r->body_len, buf, room);
		r->body_len += room;
		r->truncated = true;
		return 0;	/* cut the transfer: CURLE_WRITE_ERROR */
	}
	memcpy(c->body + r->body_len, buf, len);
	r->body_len += len;
	return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return stopped(ud) ? 1 : 0;
}

/* Names the exporter sets itself or that frame the message. */
static bool reserved_header(const char *k)
{
	static const char *const names[] = {
		"content-type", "content-encoding", "content-length", "transfer-encoding",
		"host", "connection", "expect", "te", "trailer", "upgrade",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(k, names[i]))
			return true;
	return false;
}

struct hdr_ctx {
	struct sp_http_client *c;
	const char *bad;	/* reserved name seen */
	char bad_buf[64];
};

static int add_header(const char *key, const char *value, void *ud)
{
	struct hdr_ctx *h = ud;
	struct curl_slist *l;
	char *line;

	if (reserved_header(key)) {
		snprintf(h->bad_buf, sizeof(h->bad_buf), "%s", key);
		h->bad = h->bad_buf;
		return -EINVAL;
	}
	/* "Key;" is curl's way to send a header with an empty value */
	if (asprintf(&line, *value ? "%s: %s" : "%s;", key, value) < 0)
		return -ENOMEM;
	l = curl_slist_append(h->c->hdrs, line);
	free(line);
	if (!l)
		return -ENOMEM;
	h->c->hdrs = l;
	return 0;
}

static int push_header(struct sp_http_client *c, const char *line)
{
	struct curl_slist *l = curl_slist_append(c->hdrs, line);

	if (!l)
		return -ENOMEM;
	c->hdrs = l;
	return 0;
}

int sp_http_client__new(const struct sp_http_client_opts *o, struct sp_http_client **out,
			char *err, size_t err_len)
{
	struct sp_http_client *c = NULL;
	struct hdr_ctx hc = { 0 };
	CURLcode cc = CURLE_OK;
	char ct[160];
	int r;

	*out = NULL;
	pthread_once(&sp_curl_once, sp_curl_init);
	if (sp_curl_init_rc != CURLE_OK) {
		snprintf(err, err_len, "libcurl initialisation failed: %s",
			 curl_easy_strerror(sp_curl_init_rc));
		return -ENOMEM;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->stop = o->stop;
	c->body = malloc(SP_HTTP_BODY_MAX);
	c->easy = curl_easy_init();
	c->multi = curl_multi_init();
	if (!c->body || !c->easy || !c->multi)
		goto nomem;

	snprintf(ct, sizeof(ct), "Content-Type: %s",
		 o->content_type ? o->content_type : "application/x-protobuf");
	if (push_header(c, ct) ||
	    (o->gzip && push_header(c, "Content-Encoding: gzip")) || push_header(c, "Expect:"))
		goto nomem;
	if (o->headers) {
		hc.c = c;
		r = sp_http__parse_headers(o->headers, add_header, &hc);
		if (r == -ENOMEM)
			goto nomem;
		if (r) {
			if (hc.bad)
				snprintf(err, err_len,
					 "export headers: \"%s\" is set by spanprof itself; remove it from the headers",
					 hc.bad);
			else
				snprintf(err, err_len,
					 "export headers: malformed (%s); want key=value pairs separated by ',' with values percent-encoded, at most 64",
					 r == -E2BIG ? "too many or too long" : "bad entry");
			sp_http_client__free(c);
			return r == -E2BIG ? -EINVAL : r;
		}
	}

#define SETOPT(opt, val) do { if (cc == CURLE_OK) cc = curl_easy_setopt(c->easy, opt, val); } while (0)
	SETOPT(CURLOPT_URL, o->url);
	SETOPT(CURLOPT_POST, 1L);
	SETOPT(CURLOPT_HTTPHEADER, c->hdrs);
	SETOPT(CURLOPT_USERAGENT, SP_HTTP_USER_AGENT);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)o->timeout_ms);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, c);
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, c);
	SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
	SETOPT(CURLOPT_XFERINFODATA, c);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	SETOPT(CURLOPT_ERRORBUFFER, c->errbuf);
	if (o->ca_file)
		SETOPT(CURLOPT_CAINFO, o->ca_file);
	if (o->client_cert)
		SETOPT(CURLOPT_SSLCERT, o->client_cert);
	if (o->client_key)
		SETOPT(CURLOPT_SSLKEY, o->client_key);
#undef SETOPT
	if (cc != CURLE_OK) {
		snprintf(err, err_len, "libcurl refused an export option: %s",
			 curl_easy_strerror(cc));
		sp_http_client__free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
nomem:
	snprintf(err, err_len, "out of memory setting up the HTTP client");
	sp_http_client__free(c);
	return -ENOMEM;
}

void sp_http_client__free(struct sp_http_client *c)
{
	if (!c)
		return;
	if (c->easy)
		curl_easy_cleanup(c->easy);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	curl_slist_free_all(c->hdrs);
	free(c->body);
	free(c);
}

void sp_http_client__wakeup(struct sp_http_client *c)
{
	if (c && c->multi)
		curl_multi_wakeup(c->multi);
}

static bool transient_code(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_WEIRD_SERVER_REPLY:
	/* the scheme was validated at start, so at run time this is a
	 * non-HTTP answer ("HTTP/0.9"): a broken peer, maybe transient */
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_HTTP3:
	case CURLE_QUIC_CONNECT_ERROR:
	case CURLE_AGAIN:
		return true;
	default:
		return false;
	}
}

int sp_http_client__post(struct sp_http_client *c, const uint8_t *body, size_t len,
			 struct sp_http_result *r)
{
	CURLcode cc = CURLE_FAILED_INIT;
	CURLMcode mc;
	CURLMsg *msg;
	curl_off_t up = 0;
	int running = 1, left;
	uint64_t t0;
	long status = 0;

	memset(r, 0, sizeof(*r));
	c->cur = r;
	c->errbuf[0] = '\0';
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, (const char *)body);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	t0 = sp_mono__ns();
	mc = curl_multi_add_handle(c->multi, c->easy);
	if (mc != CURLM_OK) {
		snprintf(r->error, sizeof(r->error), "curl_multi_add_handle: %s",
			 curl_multi_strerror(mc));
		c->cur = NULL;
		return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : 0;
	}
	for (;;) {
		mc = curl_multi_perform(c->multi, &running);
		if (mc != CURLM_OK || !running)
			break;
		if (stopped(c)) {
			r->aborted = true;
			break;
		}
		mc = curl_multi_poll(c->multi, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK)
			break;
	}
	if (!running) {
		while ((msg = curl_multi_info_read(c->multi, &left)))
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->easy)
				cc = msg->data.result;
	}
	curl_multi_remove_handle(c->multi, c->easy);
	r->latency_ns = sp_mono__ns() - t0;
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(c->easy, CURLINFO_SIZE_UPLOAD_T, &up);
	r->bytes_sent = up > 0 ? (uint64_t)up : 0;
	r->body = c->body;
	c->cur = NULL;

	if (cc == CURLE_ABORTED_BY_CALLBACK || stopped(c))
		r->aborted = true;
	if (r->aborted) {
		snprintf(r->error, sizeof(r->error), "aborted: exporter stopping");
		return 0;
	}
	if (mc != CURLM_OK) {
		snprintf(r->error, sizeof(r->error), "curl multi: %s", curl_multi_strerror(mc));
		r->transient = true;
		return 0;
	}
	if (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && r->truncated && status > 0)) {
		r->status = status;
		return 0;
	}
	r->transient = transient_code(cc);
	r->body_len = 0;
	snprintf(r->error, sizeof(r->error), "%.60s%s%.190s", curl_easy_strerror(cc),
		 c->errbuf[0] ? ": " : "", c->errbuf);
	/* errbuf may end with a newline */
	r->error[strcspn(r->error, "\r\n")] = '\0';
	return 0;
}
