# tests/fuzz/build.mk - libFuzzer targets for every parser of outside input.
#
# Built with clang (-fsanitize=fuzzer,address,undefined) into $(FUZZ_O),
# from the same sources as the product, compiled separately: gcc's ASan
# objects cannot be linked with clang's libFuzzer runtime.
#
#   make fuzz-build                the targets and make_seeds (a plain `make`
#                                  builds no target; fuzz-targets: only them)
#   make fuzz                      long campaign (FUZZ_SECONDS per target, 600)
#   tests/integration/test_fuzz_smoke.sh   the bounded CI run: builds the
#                                  targets (make fuzz-targets), then every
#                                  target for FUZZ_SECONDS (3), FUZZ_JOBS
#                                  at once (one per core)

FUZZ_O ?= build-fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-Iinclude -Isrc -I$(O)/gen
FUZZ_LIB_SRCS := $(wildcard src/base/*.c src/profile/*.c) \
	src/collector/tracectx/process_ctx.c src/collector/tracectx/tls_elf.c \
	src/collector/tracectx/ctx_attrs.c src/collector/procs/otel_env.c \
	src/collector/procs/jitdump.c \
	src/collector/unwind/cfi_extract.c src/collector/unwind/unwind_table.c \
	src/collector/tracectx/go_binary.c src/collector/tracectx/go_offsets.c \
	src/export/http_parse.c src/export/otlp_response.c src/symbolizer/kallsyms.c \
	src/symbolizer/resolve.c src/symbolizer/debuginfo.c src/symbolizer/dwarf_line.c \
	src/symbolizer/dwarf_src.c src/symbolizer/res_cache.c src/symbolizer/strpool.c \
	src/symbolizer/addr_index.c src/symbolizer/die_reader.c src/symbolizer/gopcln_src.c \
	src/symbolizer/plt.c src/symbolizer/perf_map.c src/symbolizer/relobj.c \
	src/symbolizer/ktree.c
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_O)/obj/%.o,$(FUZZ_LIB_SRCS)) \
	$(patsubst $(O)/gen/%.c,$(FUZZ_O)/gen/%.o,$(PB_C))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_O)/%,$(FUZZ_SRCS))

$(FUZZ_O)/obj/%.o: %.c $(PB_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_O)/gen/%.o: $(O)/gen/%.c $(PB_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-unused-parameter -MMD -MP -c $< -o $@

# Header dependencies: an object built against an older header would be
# linked with one built against the new (a layout mismatch ASan reports
# as an overflow in code that is right).
-include $(shell find $(FUZZ_O) -name '*.d' 2>/dev/null)

$(FUZZ_O)/libfuzzcore.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_O)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_O)/libfuzzcore.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer $< $(FUZZ_O)/libfuzzcore.a \
		-lprotobuf-c -ldw -ldebuginfod -lelf -lxxhash -lz -o $@

$(O)/tests/make_seeds: tests/fuzz/make_seeds.c $(O)/libsp_profile.a $(O)/libsp_base.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(O)/libsp_profile.a $(O)/libsp_base.a $(LIBS_ALL)

.PHONY: fuzz fuzz-build fuzz-targets
fuzz-targets: $(FUZZ_BINS)
fuzz-build: fuzz-targets $(O)/tests/make_seeds

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) O=$(O) FUZZ_O=$(FUZZ_O) bash tests/fuzz/run.sh

# make_seeds is a plain program (seeds for the fuzzers and valgrind.sh);
# the libFuzzer targets are built only by fuzz-build.
TEST_TARGETS += $(O)/tests/make_seeds
