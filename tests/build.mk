# tests/build.mk - unit tests (cmocka) and fixture programs.
#
# tests/unit/test_NAME.c  -> $(O)/tests/test_NAME, linked with every layer.
# tests/fixtures/NAME.c   -> $(O)/fixtures/NAME, frame pointers everywhere
#                            (-O1 so calls stay calls) and a GNU build id.

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRCS))

$(O)/tests/%: $(O)/obj/tests/unit/%.o $(CORE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(CORE_LIBS) -lcmocka $(LIBS_ALL)

FIXTURE_SRCS := $(wildcard tests/fixtures/*.c)
FIXTURE_BINS := $(patsubst tests/fixtures/%.c,$(O)/fixtures/%,$(FIXTURE_SRCS))
# clang, because GCC 12 drops the frame pointer of a leaf function that needs
# no stack frame even with -mno-omit-leaf-frame-pointer, which hides the
# leaf's caller from every frame-pointer unwinder (perf's too).
FIXTURE_CC ?= clang
FIXTURE_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-inline -fno-optimize-sibling-calls -Wl,--build-id -Wall -Werror

$(O)/fixtures/%: tests/fixtures/%.c
	@mkdir -p $(@D)
	$(FIXTURE_CC) $(FIXTURE_CFLAGS) -o $@ $< -lpthread

# Unwinding fixtures (tests/fixtures/unwind/): built as distributions build,
# -O2 and no frame pointers (except unw_chain_fp), by GCC and by clang.
UNW_DIR := tests/fixtures/unwind
UNW_DEPS := $(UNW_DIR)/unw_common.h tests/build.mk
# GCC gets -fno-reorder-functions: it would put main in .text.startup, a
# second address range of the compilation unit, and go tool pprof (Go
# 1.19's DWARF reader) only names code in a unit's first range.  Only the
# placement of whole functions changes, not their code or CFI.  Not for
# the C++ fixture: there g++ 12 then loses the landing pad of a catch in a
# .cold part (std::terminate), so main stays unnamed by pprof there.
UNW_CFLAGS := -O2 -g -Wall -Werror -Wl,--build-id -fomit-frame-pointer
UNW_GCC := -fno-reorder-functions
UNW_BINS := $(addprefix $(O)/fixtures/,unw_qsort_gcc unw_qsort_clang unw_sort_cpp unw_chain_fp \
	unw_static unw_dlopen libunw_dl.so unw_offcpu unw_wide unw_misc unw_ends)

$(O)/fixtures/unw_qsort_gcc: $(UNW_DIR)/unw_qsort.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -o $@ $< -lpthread
$(O)/fixtures/unw_qsort_clang: $(UNW_DIR)/unw_qsort.c $(UNW_DEPS)
	@mkdir -p $(@D)
	clang $(UNW_CFLAGS) -o $@ $< -lpthread
$(O)/fixtures/unw_sort_cpp: $(UNW_DIR)/unw_sort.cpp $(UNW_DEPS)
	@mkdir -p $(@D)
	g++ $(UNW_CFLAGS) -o $@ $<
# GCC with frame pointers asked for everywhere: it still omits the frame
# of a leaf that needs none.
$(O)/fixtures/unw_chain_fp: $(UNW_DIR)/unw_chain.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Werror -Wl,--build-id $(UNW_GCC) -fno-omit-frame-pointer \
		-mno-omit-leaf-frame-pointer -o $@ $<
$(O)/fixtures/unw_static: $(UNW_DIR)/unw_chain.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -static -o $@ $<
$(O)/fixtures/unw_dlopen: $(UNW_DIR)/unw_dlopen.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -o $@ $< -ldl
$(O)/fixtures/libunw_dl.so: $(UNW_DIR)/unw_dl_lib.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -shared -fPIC -o $@ $<
$(O)/fixtures/unw_offcpu: $(UNW_DIR)/unw_offcpu.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -o $@ $< -lpthread
$(O)/fixtures/unw_misc: $(UNW_DIR)/unw_misc.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -o $@ $<
# No CFI at all (no .eh_frame rows, and -g0: no .debug_frame either): the
# unwinder steps it by frame pointer (see the source).
$(O)/fixtures/unw_ends: $(UNW_DIR)/unw_ends.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -g0 -fno-asynchronous-unwind-tables -o $@ $<
$(O)/fixtures/unw_wide: $(UNW_DIR)/unw_wide.c $(UNW_DEPS)
	@mkdir -p $(@D)
	gcc $(UNW_CFLAGS) $(UNW_GCC) -o $@ $<

TEST_TARGETS += $(UNIT_BINS) $(FIXTURE_BINS) $(UNW_BINS)
# go_fake.c also as the Go >= 1.24 layout (sorted-slice labels); both
# non-PIE like Go's own executables (tests read nm addresses as is).
$(O)/fixtures/go_fake: FIXTURE_CFLAGS += -no-pie
$(O)/fixtures/go_fake_slice: tests/fixtures/go_fake.c
	@mkdir -p $(@D)
	$(FIXTURE_CC) $(FIXTURE_CFLAGS) -no-pie -DGO_FAKE_MINOR=24 -o $@ $< -lpthread

TEST_TARGETS += $(O)/fixtures/go_fake_slice

# Go fixtures: tests/fixtures/go/NAME/main.go -> $(O)/fixtures/go/NAME (with
# DWARF) and $(O)/fixtures/go/NAME.stripped (-ldflags=-s -w, as release
# builds are); GO_ENV (Makefile) builds them offline.
GO_FIXTURES := $(patsubst tests/fixtures/go/%/main.go,%,$(wildcard tests/fixtures/go/*/main.go))
GO_FIXTURE_BINS := $(foreach f,$(GO_FIXTURES),$(O)/fixtures/go/$(f) $(O)/fixtures/go/$(f).stripped)

# every fixture imports the module's shared packages (truth/: the span log)
GO_FIXTURE_SHARED := tests/fixtures/go/go.mod $(wildcard tests/fixtures/go/truth/*.go)

$(O)/fixtures/go/%.stripped: tests/fixtures/go/%/main.go $(GO_FIXTURE_SHARED)
	@mkdir -p $(@D)
	cd tests/fixtures/go/$* && $(GO_ENV) $(GO) build -ldflags='-s -w' -o $(abspath $@) main.go

$(O)/fixtures/go/%: tests/fixtures/go/%/main.go $(GO_FIXTURE_SHARED)
	@mkdir -p $(@D)
	cd tests/fixtures/go/$* && $(GO_ENV) $(GO) build -o $(abspath $@) main.go

TEST_TARGETS += $(GO_FIXTURE_BINS)
