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

# bench/fp_floor.bpf.c + bench/fp_floor.c -> $(O)/bench/fp_floor: the floor
# probes of bench/bpf_floor.py (BPF built like bpf/*.bpf.c, its own
# skeleton; not part of spanprof).
$(O)/bench/fp_floor.bpf.o: bench/fp_floor.bpf.c include/spanprof/abi.h $(O)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(O)/bench/fp_floor.skel.h: $(O)/bench/fp_floor.bpf.o
	$(BPFTOOL) gen skeleton $< name fp_floor_bpf > $@.tmp && mv $@.tmp $@

$(O)/obj/bench/fp_floor.o: bench/fp_floor.c $(O)/bench/fp_floor.skel.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(O)/bench -MMD -MP -c $< -o $@

$(O)/bench/fp_floor: $(O)/obj/bench/fp_floor.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_BPF)

ALL_TARGETS += $(O)/bench/fp_floor
