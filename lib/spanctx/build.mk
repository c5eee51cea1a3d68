# lib/spanctx/build.mk - libspanctx, the client library applications link.
#
#   $(O)/libspanctx.so (+ the soname link libspanctx.so.1) and
#   $(O)/libspanctx.a, from the same objects: -fPIC, -mtls-dialect=gnu2 (the
#   TLS pointer otel_thread_ctx_v1 is reached by TLSDESC), frame pointers,
#   hidden visibility + version script (only spanctx_* and otel_thread_ctx_v1
#   are exported).  Objects live in $(O)/spanctx/, apart from $(O)/obj/, so
#   their flags and dependencies stay independent of the core layers.
#
#   tests/unit/test_spanctx*.c and test_abi_compat.c get explicit rules here (they win over the
#   generic pattern in tests/build.mk): they link libspanctx.a, the protobuf-c
#   code of the three protos they decode with, and cmocka -- not the core
#   layers -- and export otel_thread_ctx_v1 from the executable the way the
#   header tells static users to.

SPANCTX_DIR := lib/spanctx
SPANCTX_SRCS := $(wildcard $(SPANCTX_DIR)/*.c)
SPANCTX_OBJS := $(patsubst $(SPANCTX_DIR)/%.c,$(O)/spanctx/%.o,$(SPANCTX_SRCS))
SPANCTX_HDRS := $(wildcard $(SPANCTX_DIR)/*.h)
SPANCTX_CFLAGS := $(CFLAGS_COMMON) -fPIC -mtls-dialect=gnu2 \
	-fvisibility=hidden -I$(SPANCTX_DIR)
SPANCTX_SONAME := libspanctx.so.1

$(O)/spanctx/%.o: $(SPANCTX_DIR)/%.c $(SPANCTX_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SPANCTX_CFLAGS) -MMD -MP -c $< -o $@

$(O)/libspanctx.so: $(SPANCTX_OBJS) $(SPANCTX_DIR)/spanctx.map
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -fPIC -Wl,-soname,$(SPANCTX_SONAME) \
		-Wl,--version-script=$(SPANCTX_DIR)/spanctx.map \
		-Wl,--build-id -Wl,-z,now \
		-o $@ $(SPANCTX_OBJS) -lpthread

$(O)/$(SPANCTX_SONAME): $(O)/libspanctx.so
	ln -sf libspanctx.so $@

$(O)/libspanctx.a: $(SPANCTX_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# ---------------------------------------------------------------- tests
# test_abi_compat reads a record libspanctx published with BPF's layout.
SPANCTX_TEST_SRCS := $(wildcard tests/unit/test_spanctx*.c) tests/unit/test_abi_compat.c
SPANCTX_TEST_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(SPANCTX_TEST_SRCS))
SPANCTX_TEST_PB := $(O)/gen/otlp_common.pb-c.o $(O)/gen/otlp_resource.pb-c.o \
	$(O)/gen/otel_process_context.pb-c.o

# Generated code includes the headers of the protos it imports.
$(O)/gen/otlp_resource.pb-c.o: $(O)/gen/otlp_common.pb-c.h
$(O)/gen/otel_process_context.pb-c.o: $(O)/gen/otlp_common.pb-c.h \
	$(O)/gen/otlp_resource.pb-c.h

$(O)/spanctx/tests/%.o: tests/unit/%.c $(SPANCTX_HDRS) $(SPANCTX_TEST_PB:.o=.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(SPANCTX_DIR) -MMD -MP -c $< -o $@

$(SPANCTX_TEST_BINS): $(O)/tests/%: $(O)/spanctx/tests/%.o $(O)/libspanctx.a \
		$(SPANCTX_TEST_PB) $(O)/libspanctx.so $(O)/$(SPANCTX_SONAME)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 \
		-o $@ $< $(O)/libspanctx.a $(SPANCTX_TEST_PB) \
		-lcmocka -lprotobuf-c -lpthread -ldl

-include $(wildcard $(O)/spanctx/*.d $(O)/spanctx/tests/*.d)

ALL_TARGETS += $(O)/libspanctx.so $(O)/$(SPANCTX_SONAME) $(O)/libspanctx.a
