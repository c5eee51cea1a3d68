# examples/build.mk - the instrumented demo service.
#
#   $(O)/spanprof-demo   examples/spanprof_demo.c, -O1 with frame pointers
#                        everywhere (stacks walk with FP), a GNU build id,
#                        linked against $(O)/libspanctx.so with rpath $ORIGIN
#                        so it runs straight from $(O)/.
#   $(O)/spanctx-cxx-example   examples/cxx_example.cc: the header used from
#                        C++ (an RAII scope), proof that the API is C++-clean.
#   $(O)/spanprof-go-demo  examples/go-demo/main.go: the Go service (pprof
#                        labels trace_id/span_id per request), standard
#                        library only, built offline like the Go fixtures
#                        (tests/build.mk: GO_ENV).
#   $(O)/spanctx-hammer  examples/spanctx_hammer.c: switches thread context
#                        as fast as possible with span ids derived from trace
#                        ids, for torn-read tests of readers (BPF).

DEMO_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer \
	-mno-omit-leaf-frame-pointer -Wall -Wextra -Werror -D_GNU_SOURCE \
	-I$(SPANCTX_DIR) $(SANFLAGS)
DEMO_LDFLAGS := $(LDFLAGS) -Wl,--build-id -L$(O) -Wl,-rpath,'$$ORIGIN'

$(O)/spanprof-demo: examples/spanprof_demo.c $(SPANCTX_DIR)/spanctx.h \
		$(O)/libspanctx.so $(O)/$(SPANCTX_SONAME)
	@mkdir -p $(@D)
	$(CC) $(DEMO_CFLAGS) -o $@ $< $(DEMO_LDFLAGS) -lspanctx -lpthread

CXX ?= g++
$(O)/spanctx-cxx-example: examples/cxx_example.cc $(SPANCTX_DIR)/spanctx.h \
		$(O)/libspanctx.so $(O)/$(SPANCTX_SONAME)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-I$(SPANCTX_DIR) $(SANFLAGS) -o $@ $< $(DEMO_LDFLAGS) -lspanctx

$(O)/spanctx-hammer: examples/spanctx_hammer.c $(SPANCTX_DIR)/spanctx.h \
		$(O)/libspanctx.so $(O)/$(SPANCTX_SONAME)
	@mkdir -p $(@D)
	$(CC) $(DEMO_CFLAGS) -O2 -o $@ $< $(DEMO_LDFLAGS) -lspanctx -lpthread

$(O)/spanprof-go-demo: examples/go-demo/main.go
	@mkdir -p $(@D)
	cd examples/go-demo && $(GO_ENV) $(GO) build -o $(abspath $@) main.go

ALL_TARGETS += $(O)/spanprof-demo $(O)/spanctx-cxx-example $(O)/spanctx-hammer \
	$(O)/spanprof-go-demo
