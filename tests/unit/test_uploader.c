// SPDX-License-Identifier: MIT
/*
 * test_uploader.c - the agent's host-symbol uploader (src/export/
 * uploader.h) against real sockets on loopback, no mock: a receiver that
 * accepts and never answers (the blob in flight waits, the queue fills:
 * a blob past queue_bytes is refused, counted, nothing queued; a key
 * already queued is not queued twice; shutdown drops what is left,
 * counted, and tells the producer through on_lost), and an endpoint that
 * refuses connections (retries exhausted: failed, on_lost).  submit never
 * waits on the network.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/symstore.h"
#include "export/exporter.h"
#include "export/uploader.h"

static int lost_n;

static void on_lost(void *ctx, int kind, const uint8_t *key, size_t key_len)
{
	(void)ctx;
	(void)key;
	assert_int_equal(kind, SP_SYMSTORE_JIT);
	assert_int_equal(key_len, 16);
	lost_n++;
}

/* A listening socket on loopback that never accepts: connects succeed
 * (the backlog), no answer ever comes.  Returns the fd; *port. */
static int silent_listener(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct sp_uploader *make(const char *url, size_t queue)
{
	struct sp_export_config c;
	struct sp_uploader *u = NULL;
	char err[256] = "";

	sp_export_config__init(&c);
	c.endpoint = url;
	c.gzip = false;
	c.timeout_ms = 20000;
	c.max_attempts = 2;
	c.initial_backoff_ms = 10;
	c.max_backoff_ms = 20;
	assert_int_equal(sp_uploader__new(&c, queue, on_lost, NULL, &u, err, sizeof(err)), 0);
	assert_non_null(strstr(sp_uploader__url(u), SP_SYMSTORE_UPLOAD_PATH));
	return u;
}

static void test_queue_full_and_shutdown(void **state)
{
	static uint8_t blob[3000];
	uint8_t k1[16] = { 1 }, k2[16] = { 2 }, k3[16] = { 3 }, k4[16] = { 4 };
	struct pollfd pfd;
	struct sp_uploader_stats st;
	struct sp_uploader *u;
	char url[64];
	uint16_t port;
	uint64_t t0;
	int lfd;

	(void)state;
	lost_n = 0;
	lfd = silent_listener(&port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	/* Room for two encoded blobs in the queue; the one in flight is
	 * outside it (uploader.h's memory contract).  The first is known to
	 * be in flight once its connection reaches the listener, so what
	 * fits next does not depend on when the sender thread ran. */
	u = make(url, 8192);
	t0 = now_ms();
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k1, 16, blob, sizeof(blob)), 0);
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 10000), 1);	/* k1's connection is there */
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k2, 16, blob, sizeof(blob)), 0);
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k3, 16, blob, sizeof(blob)), 0);
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k4, 16, blob, sizeof(blob)),
			 -ENOSPC);
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k2, 16, blob, sizeof(blob)), 1);
	assert_true(now_ms() - t0 < 10000);	/* never waited on the network */
	assert_int_equal(sp_uploader__flush(u, 100), -ETIMEDOUT);
	sp_uploader__stats(u, &st);
	assert_int_equal(st.submitted, 3);
	assert_int_equal(st.dropped_queue_full, 1);
	assert_int_equal(st.known, 1);
	assert_int_equal(st.delivered, 0);
	assert_int_equal(st.queue_limit_bytes, 8192);
	t0 = now_ms();
	sp_uploader__free(u);			/* aborts the one in flight */
	assert_true(now_ms() - t0 < 5000);
	assert_int_equal(lost_n, 3);		/* in flight and the two queued */
	close(lfd);
}

static void test_refused_endpoint(void **state)
{
	uint8_t k[16] = { 7 }, blob[100] = { 0 };
	struct sp_uploader_stats st;
	struct sp_uploader *u;
	char url[64];
	uint16_t port;
	int lfd;

	(void)state;
	lost_n = 0;
	lfd = silent_listener(&port);
	close(lfd);				/* nothing listens there now */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	u = make(url, 0);
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k, 16, blob, sizeof(blob)), 0);
	assert_int_equal(sp_uploader__flush(u, 10000), 0);
	sp_uploader__stats(u, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.sender.requests, 2);	/* max_attempts */
	assert_int_equal(lost_n, 1);
	/* lost: forgotten, so the producer's second offer is queued again */
	assert_int_equal(sp_uploader__submit(u, SP_SYMSTORE_JIT, k, 16, blob, sizeof(blob)), 0);
	sp_uploader__free(u);
	sp_uploader__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_full_and_shutdown),
		cmocka_unit_test(test_refused_endpoint),
	};

	return cmocka_run_group_tests_name("uploader", tests, NULL, NULL);
}
