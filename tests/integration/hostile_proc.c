/* SPDX-License-Identifier: MIT */
/*
 * hostile_proc.c - a profiled process that tries to turn the collector
 * against the host (tests/integration/test_security_collector.py).
 * Compiled by the test with -DMARKER="\"PATH\"".
 *
 * Run with anything but "serve ..." as arguments (which is what executing
 * /proc/PID/exe would do) it creates MARKER and exits: a collector that
 * executes a profiled process's executable leaves that file behind.
 *
 *   hostile_proc serve DIR SECONDS
 *
 * must run in a private mount namespace (unshare --mount).  It
 *   - names itself "$(touch ZZsp)" (comm is only ever a label),
 *   - maps DIR/run.sh (a shell script that creates DIR/script-ran)
 *     executable, and /dev/zero executable and shared when /dev allows it,
 *   - opens DIR/lib.so (a regular ELF file), then bind-mounts the FIFO
 *     DIR/fifo over DIR/lib.so in its own mount namespace: its maps show
 *     DIR/lib.so, but that path, resolved under /proc/PID/root, is a FIFO
 *     that blocks whoever opens it for reading,
 *   - publishes an OTEP 4719 process context (memfd "OTEL_CTX", empty
 *     payload), so the collector looks for its TLS descriptor, which opens
 *     every file-backed mapping,
 *   - then for SECONDS maps DIR/lib.so (from the fd it kept) for a few
 *     hundred microseconds, announces it with prctl(PR_SET_VMA) (the
 *     collector's "context published" event, which re-examines the
 *     process), unmaps it, and so on: some examinations read the maps while
 *     the library is mapped and try to open it after it is gone, which
 *     sends a collector that falls back to the maps path into the FIFO.
 * Prints "ready PID" on stdout when set up.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MARKER
#error "compile with -DMARKER=\"\\\"path\\\"\""
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void spin_us(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ull;

	while (now_ns() < end)
		for (int i = 0; i < 200; i++)
			sink += i ^ (sink >> 3);
}

int main(int argc, char **argv)
{
	char lib[4096], fifo[4096], script[4096];
	struct stat st;
	uint64_t end, n = 0;
	unsigned seed = (unsigned)getpid();
	int libfd, sfd, zfd, cfd;
	uint8_t *ctx;
	void *p;

	if (argc < 4 || strcmp(argv[1], "serve")) {
		/* executed by someone else: leave evidence */
		int fd = open(MARKER, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(lib, sizeof(lib), "%s/lib.so", argv[2]);
	snprintf(fifo, sizeof(fifo), "%s/fifo", argv[2]);
	snprintf(script, sizeof(script), "%s/run.sh", argv[2]);
	prctl(PR_SET_NAME, "$(touch ZZsp)", 0, 0, 0);

	sfd = open(script, O_RDONLY | O_CLOEXEC);
	if (sfd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, sfd, 0) == MAP_FAILED) {
		perror(script);
		return 2;
	}
	zfd = open("/dev/zero", O_RDWR | O_CLOEXEC);
	if (zfd >= 0 && mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_SHARED, zfd, 0) == MAP_FAILED)
		fprintf(stderr, "note: /dev/zero cannot be mapped executable here\n");

	libfd = open(lib, O_RDONLY | O_CLOEXEC);
	if (libfd < 0 || fstat(libfd, &st)) {
		perror(lib);
		return 2;
	}
	if (mount(fifo, lib, NULL, MS_BIND, NULL)) {
		perror("bind-mount the FIFO over lib.so (needs a private mount namespace)");
		return 3;
	}

	/* OTEP 4719 header: "OTEL_CTX", version 2, payload 0 bytes,
	 * published_at_ns != 0, payload address 0. */
	cfd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	if (cfd < 0 || ftruncate(cfd, 4096)) {
		perror("memfd_create");
		return 2;
	}
	ctx = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	if (ctx == MAP_FAILED) {
		perror("mmap OTEL_CTX");
		return 2;
	}
	memcpy(ctx, "OTEL_CTX", 8);
	*(uint32_t *)(ctx + 8) = 2;
	*(uint32_t *)(ctx + 12) = 0;
	*(uint64_t *)(ctx + 24) = 0;
	__atomic_store_n((uint64_t *)(ctx + 16), now_ns() | 1, __ATOMIC_RELEASE);

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	end = now_ns() + (uint64_t)(atof(argv[3]) * 1e9);
	while (now_ns() < end) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, libfd, 0);
		/* the publication event; EBADF/EINVAL on this mapping is fine */
		prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)ctx, 4096,
		      (unsigned long)"OTEL_CTX");
		spin_us(200 + rand_r(&seed) % 1000);
		if (p != MAP_FAILED)
			munmap(p, (size_t)st.st_size);
		spin_us(200 + rand_r(&seed) % 1000);
		n++;
	}
	printf("cycles %llu\n", (unsigned long long)n);
	return 0;
}
