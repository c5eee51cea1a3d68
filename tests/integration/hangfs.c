/* SPDX-License-Identifier: MIT */
/*
 * hangfs.c - a FUSE file system whose one file never answers a read, as a
 * hung NFS hard mount or a dead FUSE daemon looks to a reader
 * (test_fault_hung_fs.py).  /lib.so is a 1 MiB regular file: lookup,
 * getattr and open answer at once, read blocks for as long as the file
 * HOLD exists (then it fails with EIO: a test ends its hang before it
 * cleans up, because a page whose read never ends stays locked, and any
 * process touching it would be stuck for good).  Open keeps the page
 * cache (a FUSE open otherwise invalidates it, waiting on that lock).  An
 * open with O_SYNC is answered with direct_io: the kernel's mmap of such a
 * file invalidates the cache, waiting on a hung page with the caller's
 * mmap lock held (hung_proc.c's "lock" trap).
 * With BACKING2 too, /lib2.so has its bytes, every read answered (a
 * second file on the same device: test_fault_hung_exe.py).
 * Usage: hangfs MOUNTPOINT HOLD [BACKING PREFIX [BACKING2]] (foreground,
 * multi-threaded, so other requests keep being answered while reads hang).
 * While a file named HOLD.open exists too, opens of lib.so do not answer
 * either (then EIO): a server that went away after the file was opened
 * and mapped.  When HOLD.open names a thread (its first line, a comm),
 * only opens by threads of that name hang: test_fault_hung_exe.py hangs
 * the unwind builder's own reopen ("sp-unwind") that way, while the
 * process table's reopen of the same file a moment earlier answers (a
 * race a test cannot win otherwise).
 * With BACKING and PREFIX, lib.so has BACKING's size and bytes, and reads
 * starting below PREFIX bytes are answered (a file whose headers and build
 * id read fine, and whose later pages - say its .eh_frame - never come,
 * as a server that goes away mid-file; test_unwind_hung_fs.py).
 * /jit-N.dump and /perf-N.map (any decimal N) are the same file under a
 * runtime's jitdump or perf-map name, modified "now" at every getattr (a JIT writing its dump into a
 * directory on this mount: test_fault_hung_jit.py), opened direct_io: no
 * page cache, so every reader's read is a request of its own (one hung
 * page would otherwise hold every later reader on its lock, unseen here).  Each read that hangs
 * appends the comm of the thread that asked to HOLD.log, so that a test
 * can wait until a given reader is the one stuck.
 * While a file named HOLD.tid exists (a thread id, decimal), opens of
 * lib.so and lib2.so are answered with direct_io (every read is a request:
 * as if the page cache had dropped what an earlier read brought in), and
 * reads of them by that one thread hang, every other thread's answered:
 * a file that answers the reads done on a reader's helpers and hangs at
 * the first one the reader itself makes (test_fault_hung_exe.py: the
 * unwind builder's own reads after its prefetch).
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_NAME "lib.so"
#define FILE2_NAME "lib2.so"
#define FILE_SIZE (1 << 20)

static const char *hold;
static char hold_open[4096], hold_log[4096], hold_tid[4096];
static int backing = -1, backing2 = -1;
static off_t file2_size;
static off_t file_size = FILE_SIZE, prefix;

/* lib.so, its jitdump name (see the top), lib2.so: 1, 2, 3, else 0. */
static int file_kind(const char *path)
{
	unsigned n;
	int end = 0;

	if (!strcmp(path, "/" FILE_NAME))
		return 1;
	if (backing2 >= 0 && !strcmp(path, "/" FILE2_NAME))
		return 3;
	if (sscanf(path, "/jit-%u.dump%n", &n, &end) == 1 && end && !path[end])
		return 2;
	end = 0;
	if (sscanf(path, "/perf-%u.map%n", &n, &end) == 1 && end && !path[end])
		return 2;
	return 0;
}

/* The comm of the thread behind this request ("" when gone). */
static void requester_comm(char *comm, size_t size)
{
	char p[64];
	FILE *f;

	comm[0] = 0;
	snprintf(p, sizeof(p), "/proc/%d/comm", (int)fuse_get_context()->pid);
	f = fopen(p, "re");
	if (f) {
		if (!fgets(comm, (int)size, f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
}

static int hang_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (file_kind(path)) {
		st->st_mode = S_IFREG | 0755;
		st->st_nlink = 1;
		st->st_size = file_kind(path) == 3 ? file2_size : file_size;
		if (file_kind(path) == 2)
			st->st_mtime = time(NULL);
		return 0;
	}
	return -ENOENT;
}

static int hang_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, FILE_NAME, NULL, 0, 0);
	return 0;
}

/* True when this open is to hang (HOLD.open, see the top). */
static int open_hangs(void)
{
	char want[64] = "", comm[64] = "";
	FILE *f = fopen(hold_open, "re");

	if (!f)
		return 0;
	if (!fgets(want, sizeof(want), f))
		want[0] = 0;
	fclose(f);
	want[strcspn(want, "\n")] = 0;
	if (!want[0])
		return 1;
	requester_comm(comm, sizeof(comm));
	return !strcmp(comm, want);
}

/* The thread HOLD.tid names, or 0 (see the top). */
static int held_tid(void)
{
	FILE *f = fopen(hold_tid, "re");
	int tid = 0;

	if (f) {
		if (fscanf(f, "%d", &tid) != 1)
			tid = 0;
		fclose(f);
	}
	return tid;
}

static int hang_open(const char *path, struct fuse_file_info *fi)
{
	if (open_hangs()) {
		while (access(hold_open, F_OK) == 0 && access(hold, F_OK) == 0)
			usleep(50000);
		return -EIO;
	}
	fi->keep_cache = 1;
	if ((fi->flags & O_SYNC) || file_kind(path) == 2 ||
	    (file_kind(path) != 2 && held_tid()))
		fi->direct_io = 1;
	return file_kind(path) ? 0 : -ENOENT;
}

static int hang_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	(void)fi;
	if (file_kind(path) != 2 && held_tid() &&
	    held_tid() == (int)fuse_get_context()->pid)
		goto hang;
	if (file_kind(path) == 3) {
		n = pread(backing2, buf, size, off);
		return n < 0 ? -errno : (int)n;
	}
	if (backing >= 0 && off < prefix) {
		n = pread(backing, buf, size, off);
		return n < 0 ? -errno : (int)n;
	}
hang:
	if (access(hold, F_OK) == 0) {
		char comm[64];
		FILE *f;

		requester_comm(comm, sizeof(comm));
		f = fopen(hold_log, "ae");
		if (f) {
			fprintf(f, "%s\n", comm);
			fclose(f);
		}
	}
	while (access(hold, F_OK) == 0)
		usleep(50000);
	return -EIO;
}

static const struct fuse_operations ops = {
	.getattr = hang_getattr,
	.readdir = hang_readdir,
	.open = hang_open,
	.read = hang_read,
};

int main(int argc, char **argv)
{
	char *args[] = { argv[0], "-f", "-o", "allow_other", argv[1], NULL };

	if (argc != 3 && argc != 5 && argc != 6)
		return 2;
	hold = argv[2];
	if (snprintf(hold_open, sizeof(hold_open), "%s.open", hold) >= (int)sizeof(hold_open) ||
	    snprintf(hold_log, sizeof(hold_log), "%s.log", hold) >= (int)sizeof(hold_log) ||
	    snprintf(hold_tid, sizeof(hold_tid), "%s.tid", hold) >= (int)sizeof(hold_tid))
		return 2;
	if (argc >= 5) {
		struct stat st;

		backing = open(argv[3], O_RDONLY | O_CLOEXEC);
		if (backing < 0 || fstat(backing, &st))
			return 1;
		file_size = st.st_size;
		prefix = strtoll(argv[4], NULL, 0);
	}
	if (argc == 6) {
		struct stat st;

		backing2 = open(argv[5], O_RDONLY | O_CLOEXEC);
		if (backing2 < 0 || fstat(backing2, &st))
			return 1;
		file2_size = st.st_size;
	}
	return fuse_main(5, args, &ops, NULL);
}
