# src/symbolizer/build.mk - the spanprof-symbolizer binary and its fixtures.
#
# $(O)/spanprof-symbolizer   main.c + libsp_symbolizer.a + lower layers.
#                            Linked with libstdc++ only for __cxa_demangle
#                            (a weak reference in resolve.c: the library
#                            itself works without it, names stay mangled).
# $(O)/fixtures/sym_inline_O2  tests/fixtures/sym_inline.c at -O2 -g with
#                            inlining: what the resolver is compared on
#                            against llvm-symbolizer and eu-addr2line.

SYMBOLIZER_LIBS := -ldw -lelf -ldebuginfod -lprotobuf-c -lz -lpthread -lm \
	-lstdc++

$(O)/spanprof-symbolizer: $(O)/obj/src/symbolizer/main.o \
		$(O)/libsp_symbolizer.a $(O)/libsp_export.a $(O)/libsp_profile.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_ALL) -lstdc++

# unit tests of this folder also demangle
$(O)/tests/test_symbolizer $(O)/tests/test_debuginfo: LDFLAGS += -lstdc++

SYM_FIXTURE_CFLAGS := -O2 -g -Wl,--build-id -Wall -Werror

$(O)/fixtures/sym_inline_O2: tests/fixtures/sym_inline.c
	@mkdir -p $(@D)
	$(CC) $(SYM_FIXTURE_CFLAGS) -o $@ $<

# (added with main.c) ALL_TARGETS += $(O)/spanprof-symbolizer
TEST_TARGETS += $(O)/fixtures/sym_inline_O2
