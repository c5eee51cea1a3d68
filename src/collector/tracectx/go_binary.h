/* SPDX-License-Identifier: MIT */
/*
 * go_binary.h - what a Go executable says about itself, read once per file
 * (not per process, not per sample): its Go version, and the runtime
 * offsets the BPF label reader needs (struct sp_go_desc, abi.h).
 *
 * Recognised as Go: a Go build id note, a .go.buildinfo section, or the
 * buildinfo magic in the first 64 KiB of a writable segment (files without
 * section headers).  Version: .go.buildinfo (layout below, golang/go
 * src/debug/buildinfo/buildinfo.go and cmd/link/internal/ld/data.go):
 *
 *   offset size field
 *   0      14   magic "\xff Go buildinf:"
 *   14     1    pointer size (4 or 8)
 *   15     1    flags: bit 0 big endian, bit 1 (Go 1.18+) strings inline
 *   16     16   Go < 1.18: two pointers to Go string headers {ptr, len}
 *                 (runtime.buildVersion, runtime.modinfo)
 *   32     var  Go 1.18+: uvarint length + version ("go1.19.8"), then
 *                 uvarint length + modinfo
 *
 * Offsets: from the binary's DWARF when it has .debug_info (struct
 * runtime.g members m and labels, runtime.m member curg; the map layout
 * constants of abi.h checked against runtime.hmap and
 * bucket<string,string>; runtime/pprof.labelMap a typedef of a map ->
 * map layout, a struct -> slice layout), else from the version table
 * (go_offsets.c).  g's TLS slot: the first instruction of
 * runtime.stackcheck (found through .symtab or .gopclntab; either
 * `mov %fs:D,%rax` or `mov $D,%rcx; mov %fs:(%rcx),%rax`), else -8 when
 * the binary has no PT_TLS (Go's own linker: "ELF wants -8(FS)"), else
 * runtime.tlsg's st_value - roundup(PT_TLS memsz, align) (cgo, variant II).
 *
 * Park probes: runtime.gopark and runtime.mcall by .symtab or .gopclntab;
 * the park point is the instruction after gopark's frame setup (`lea
 * D(%rsp),%rbp`, 48 8d 6c 24 D8 or 48 8d ac 24 D32, within its first 32
 * bytes: after it, %rbp is gopark's frame, so the stack walk starts
 * right), the resume point the instruction after the one `call rel32`
 * (e8) in gopark whose target is runtime.mcall (exactly one, or none is
 * used): a parked goroutine continues there when it runs again.
 * GC epoch probe: the entry of runtime.gcSweep, the same way.
 *
 * Untrusted input: the file is the profiled program's; every read is
 * bounded (a version longer than SP_GO_VERSION_MAX, a varint past the
 * section, an offset past the file: not Go / unknown, never a crash).
 */
#ifndef SPANPROF_GO_BINARY_H
#define SPANPROF_GO_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "spanprof/abi.h"

#define SP_GO_VERSION_MAX 63

enum sp_go_fail {
	SP_GO_FAIL_NONE = 0,
	SP_GO_FAIL_NO_VERSION,		/* Go, but no readable version */
	SP_GO_FAIL_UNKNOWN_VERSION,	/* not in the table, and no DWARF */
	SP_GO_FAIL_DWARF_LAYOUT,	/* DWARF shows a map layout the BPF
					 * reader does not know */
	SP_GO_FAIL_TLS,			/* g's TLS slot not found */
	SP_GO_FAIL_ELF,			/* malformed or unreadable file */
	SP_GO_FAIL__MAX,
};

const char *sp_go_fail__name(enum sp_go_fail f);

enum sp_go_offsets_src {
	SP_GO_FROM_TABLE = 0,
	SP_GO_FROM_DWARF = 1,
};

struct sp_go_binary {
	char version[SP_GO_VERSION_MAX + 1];	/* "go1.19.8"; "" unknown */
	uint16_t minor;
	uint8_t offsets_from;		/* enum sp_go_offsets_src */
	struct sp_go_desc desc;		/* valid when read returns 0 */
	/* Goroutine park probes (bpf/goparks.bpf.h), file offsets; 0 when
	 * not found (then no goroutine parks for this binary). */
	uint64_t park_off;		/* in runtime.gopark, after its prologue */
	uint64_t resume_off;		/* after gopark's call to runtime.mcall */
	/* The GC epoch probe (bpf/gogc.bpf.c): file offset of
	 * runtime.gcSweep's entry; 0 when not found (then the label cache
	 * uses sweepgen, or is off). */
	uint64_t gc_off;
};

/*
 * Reads the open ELF file fd (not closed).  0: a Go binary, *out filled
 * and its descriptor usable; -ENOENT: not a Go binary (or not x86-64);
 * -ENOTSUP: a Go binary without a usable descriptor, *why says why (and
 * out->version is filled when known); -EINVAL: not ELF or malformed
 * (*why = SP_GO_FAIL_ELF).
 */
int sp_go_binary__read_fd(int fd, struct sp_go_binary *out, enum sp_go_fail *why);

/*
 * The version in a .go.buildinfo image buf[0..len) (the section, or the
 * bytes from the magic on) into out[SP_GO_VERSION_MAX + 1].  Go < 1.18
 * binaries keep pointers instead: read_at(ctx, vaddr, dst, n) must copy
 * n bytes of the image at that virtual address (0 on success).  0,
 * -ENOENT (no magic at buf), -EINVAL (malformed).
 */
typedef int (*sp_go_read_at_fn)(void *ctx, uint64_t vaddr, void *dst, size_t n);
int sp_go_binary__buildinfo_version(const uint8_t *buf, size_t len, sp_go_read_at_fn read_at,
				    void *ctx, char out[SP_GO_VERSION_MAX + 1]);

/* The park and resume points in gopark's code[0..n) at vaddr entry, mcall
 * at vaddr mcall: 0 and *park / *resume (vaddrs), or -ENOENT. */
int sp_go_binary__park_points(const uint8_t *code, size_t n, uint64_t entry, uint64_t mcall,
			      uint64_t *park, uint64_t *resume);

/* The g TLS offset encoded by runtime.stackcheck's first bytes code[0..n):
 * 0 and *off, or -ENOENT when they are neither known form. */
int sp_go_binary__decode_tls(const uint8_t *code, size_t n, int32_t *off);

#endif
