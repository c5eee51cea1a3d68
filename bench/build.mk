# bench/build.mk - micro-benchmarks (plain programs, no cmocka).
#
# bench/bench_NAME.c -> $(O)/bench/bench_NAME, linked with the collector
# layer and the layers below it.

BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_BINS := $(patsubst bench/%.c,$(O)/bench/%,$(BENCH_SRCS))

$(O)/bench/%: $(O)/obj/bench/%.o $(O)/libsp_collector.a $(O)/libsp_export.a \
		$(O)/libsp_profile.a $(O)/libsp_base.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_ALL)

ALL_TARGETS += $(BENCH_BINS)
