# spanprof - non-recursive build.  `make` builds everything into build/.
#
# Why make and not CMake: the field's BPF projects (libbpf-tools,
# libbpf-bootstrap) use plain make, BPF needs custom steps anyway (clang
# -target bpf, bpftool gen skeleton, vmlinux.h), and one Makefile that
# includes a small fragment per folder keeps the whole dependency graph in one
# make process (correct parallel builds, no recursion).
#
#   make            build/ : the collector, symbolizer, libspanctx, demo, tests
#                   (no libFuzzer targets: `make fuzz-build`, `make fuzz`)
#   make SAN=1      build-san/ : the same with ASan + UBSan
#   make demo       install missing packages, build, profile the demo, report
#   make check      install missing packages, build plain, ASan/UBSan and the
#                   fuzz targets at once (one make, shared -j), run the whole
#                   test suite (tests/run.sh)
#   make test       run the suite on what is built
#   make check-san  the integration suite too against the ASan/UBSan build
#                   (scripts/san_integration.sh; not in check: it adds about
#                   7 minutes, see docs/reliability.md)
#   make clean

SAN ?= 0
ifeq ($(SAN),1)
O ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
else
O ?= build
SANFLAGS :=
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c
# Go (the Go demo and fixtures): Debian's golang-go, standard library only,
# offline (GOPROXY=off); the build cache and GOPATH live under the build
# directory, so a fresh clone built as root needs no home directory.
GO ?= go
GO_ENV = GOCACHE=$(abspath $(O))/go/cache GOPATH=$(abspath $(O))/go/path GOPROXY=off \
	GOFLAGS= GOTOOLCHAIN=local
ARCH := x86

# The collector is built with frame pointers so it can profile itself.
CFLAGS_COMMON := -std=gnu11 -O2 -g -Wall -Wextra -Werror \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-D_GNU_SOURCE $(SANFLAGS)
CFLAGS_WARN_PB := -Wno-unused-parameter
INCLUDES := -Iinclude -Isrc -I$(O) -I$(O)/gen -I$(O)/bpf
CFLAGS += $(CFLAGS_COMMON) $(INCLUDES)
LDFLAGS += $(SANFLAGS)

LIBS_BPF := -lbpf -lelf -lz
LIBS_PROFILE := -lprotobuf-c -lz
LIBS_ALL := -lbpf -ldw -lelf -ldebuginfod -lcurl -lmicrohttpd -lprotobuf-c \
	-lxxhash -lzstd -lz -lpthread -lm

.DEFAULT_GOAL := all
.PHONY: all clean test check check-san check-build demo deps
.SECONDARY:
.DELETE_ON_ERROR:

# ---------------------------------------------------------------- vmlinux.h
# Generated from the running kernel's BTF; BPF objects use CO-RE, so the
# header only has to describe *a* kernel with the fields we touch.
$(O)/vmlinux.h:
	@mkdir -p $(@D)
	@test -r /sys/kernel/btf/vmlinux || { echo "spanprof build: /sys/kernel/btf/vmlinux missing: the kernel needs CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; }
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- BPF
# Each bpf/*.bpf.c is compiled on its own, then all are statically linked
# into one object (shared maps and .rodata config are declared extern in
# bpf/maps.bpf.h) and one skeleton, $(O)/bpf/spanprof.skel.h.
# proc.bpf.c defines the shared maps and must come first: bpftool 7.1's
# linker fails to relocate extern maps seen before their definition.
BPF_SRCS := bpf/proc.bpf.c $(filter-out bpf/proc.bpf.c,$(wildcard bpf/*.bpf.c))
BPF_PARTS := $(patsubst bpf/%.bpf.c,$(O)/bpf/%.part.o,$(BPF_SRCS))
BPF_SKELS := $(O)/bpf/spanprof.skel.h
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
	-Iinclude -Ibpf -I$(O)

$(O)/bpf/%.part.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) include/spanprof/abi.h $(O)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(O)/bpf/spanprof.bpf.o: $(BPF_PARTS)
	$(BPFTOOL) gen object $@ $^

$(O)/bpf/spanprof.skel.h: $(O)/bpf/spanprof.bpf.o
	$(BPFTOOL) gen skeleton $< name spanprof_bpf > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- protobuf
PROTOS := $(wildcard proto/*.proto)
PB_C := $(patsubst proto/%.proto,$(O)/gen/%.pb-c.c,$(PROTOS))
PB_H := $(PB_C:.c=.h)
PB_OBJS := $(PB_C:.c=.o)

$(O)/gen/%.pb-c.c $(O)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(PROTOC_C) --proto_path=proto --c_out=$(O)/gen $<

$(O)/gen/%.pb-c.o: $(O)/gen/%.pb-c.c $(PB_H)
	$(CC) $(CFLAGS) $(CFLAGS_WARN_PB) -c $< -o $@

# ---------------------------------------------------------------- C objects
# Every C object depends on the generated headers so ordering is simple.
GEN_HDRS := $(PB_H) $(BPF_SKELS)

$(O)/obj/%.o: %.c $(GEN_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)

# Layers, lowest first.  Each is a static archive of its folder's objects
# (and of its subfolders', one level down: src/collector/pipeline/ ...),
# except the file holding main().
define layer
$(1)_SRCS := $$(filter-out $(2)/main.c,$$(wildcard $(2)/*.c $(2)/*/*.c))
$(1)_OBJS := $$(patsubst %.c,$(O)/obj/%.o,$$($(1)_SRCS))
$(O)/lib$(1).a: $$($(1)_OBJS) $(3)
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
endef

$(eval $(call layer,sp_base,src/base,))
$(eval $(call layer,sp_profile,src/profile,$(PB_OBJS)))
$(eval $(call layer,sp_export,src/export,))
$(eval $(call layer,sp_collector,src/collector,))
$(eval $(call layer,sp_symbolizer,src/symbolizer,))

CORE_LIBS := $(O)/libsp_symbolizer.a $(O)/libsp_collector.a \
	$(O)/libsp_export.a $(O)/libsp_profile.a $(O)/libsp_base.a

$(O)/spanprof: $(O)/obj/src/collector/main.o $(O)/libsp_collector.a \
		$(O)/libsp_export.a $(O)/libsp_profile.a $(O)/libsp_base.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_ALL)

ALL_TARGETS := $(O)/spanprof

# Folder fragments add to ALL_TARGETS and TEST_TARGETS.
TEST_TARGETS :=
include $(wildcard src/symbolizer/build.mk lib/spanctx/build.mk \
	examples/build.mk tests/build.mk bench/build.mk tests/fuzz/build.mk \
	deploy/build.mk)

all: $(ALL_TARGETS) $(TEST_TARGETS)

test: all
	O=$(O) bash tests/run.sh

deps:
	bash scripts/deps.sh

# The README's two commands.  Each installs what is missing first.
check: deps
	$(MAKE) -j3 check-build
	O=build SAN_O=build-san bash tests/run.sh

# The three builds of check as one make: the sub-makes share its job slots,
# so the ASan build's long tail overlaps the plain build and the fuzz
# targets.  The fuzz build starts after the plain one: both would generate
# build/gen/ (the fuzz objects compile build/gen/*.pb-c.c).
CHECK_BUILDS := check-build-plain check-build-san check-build-fuzz
.PHONY: $(CHECK_BUILDS)
check-build: $(CHECK_BUILDS)
check-build-plain:
	+$(MAKE) --no-print-directory O=build all
check-build-san:
	+$(MAKE) --no-print-directory SAN=1 O=build-san all
check-build-fuzz: check-build-plain
	+$(MAKE) --no-print-directory O=build fuzz-build

check-san: deps
	bash scripts/san_integration.sh

demo: deps
	$(MAKE) -j2 all
	bash scripts/demo.sh

clean:
	rm -rf build build-san build-fuzz
