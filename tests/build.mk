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

# go_fake.c also as the Go >= 1.24 layout (sorted-slice labels); both
# non-PIE like Go's own executables (tests read nm addresses as is).
$(O)/fixtures/go_fake: FIXTURE_CFLAGS += -no-pie
$(O)/fixtures/go_fake_slice: tests/fixtures/go_fake.c
	@mkdir -p $(@D)
	$(FIXTURE_CC) $(FIXTURE_CFLAGS) -no-pie -DGO_FAKE_MINOR=24 -o $@ $< -lpthread

TEST_TARGETS += $(UNIT_BINS) $(FIXTURE_BINS) $(O)/fixtures/go_fake_slice

# Go fixtures: tests/fixtures/go/NAME/main.go -> $(O)/fixtures/go/NAME (with
# DWARF) and $(O)/fixtures/go/NAME.stripped (-ldflags=-s -w, as release
# builds are); GO_ENV (Makefile) builds them offline.
GO_FIXTURES := $(patsubst tests/fixtures/go/%/main.go,%,$(wildcard tests/fixtures/go/*/main.go))
GO_FIXTURE_BINS := $(foreach f,$(GO_FIXTURES),$(O)/fixtures/go/$(f) $(O)/fixtures/go/$(f).stripped)

$(O)/fixtures/go/%.stripped: tests/fixtures/go/%/main.go
	@mkdir -p $(@D)
	cd tests/fixtures/go/$* && $(GO_ENV) $(GO) build -ldflags='-s -w' -o $(abspath $@) main.go

$(O)/fixtures/go/%: tests/fixtures/go/%/main.go
	@mkdir -p $(@D)
	cd tests/fixtures/go/$* && $(GO_ENV) $(GO) build -o $(abspath $@) main.go

TEST_TARGETS += $(GO_FIXTURE_BINS)
