# src/symbolizer/build.mk - the spanprof-symbolizer binary and its fixtures.
#
# $(O)/spanprof-symbolizer   main.c + libsp_symbolizer.a + lower layers,
#                            linked with -lstdc++ for __cxa_demangle only
#                            (main.c installs it; the library has a hook
#                            and needs no C++ runtime itself).
# $(O)/gen/sp_flamegraph_html.h  flamegraph.html as a C string (sed), so
#                            the page is written and reviewed as HTML/JS.
# $(O)/fixtures/sym_inline_O2  tests/fixtures/sym_inline.c at -O2 -g with
#                            inlining: what the resolver is compared on
#                            against llvm-symbolizer and eu-addr2line.
# $(O)/fixtures/sym_inline_kmod.ko  the same source compiled -c and linked
#                            as kbuild links a module (ld -r
#                            --build-id=sha1): an ET_REL seed of fuzz_dwarf.

$(O)/gen/sp_flamegraph_html.h: src/symbolizer/flamegraph.html
	@mkdir -p $(@D)
	{ echo 'static const char sp_flamegraph_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

$(O)/obj/src/symbolizer/flamegraph.o: $(O)/gen/sp_flamegraph_html.h

$(O)/spanprof-symbolizer: $(O)/obj/src/symbolizer/main.o \
		$(O)/libsp_symbolizer.a $(O)/libsp_export.a $(O)/libsp_profile.a \
		$(O)/libsp_base.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_ALL) -lstdc++

# the unit test checks demangling through __cxa_demangle too
$(O)/tests/test_symbolizer: LDFLAGS += -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state

SYM_FIXTURE_CFLAGS := -O2 -g -Wl,--build-id -Wall -Werror

$(O)/fixtures/sym_inline_O2: tests/fixtures/sym_inline.c
	@mkdir -p $(@D)
	$(CC) $(SYM_FIXTURE_CFLAGS) -o $@ $<

$(O)/fixtures/sym_inline_kmod.ko: tests/fixtures/sym_inline.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Werror -c -o $@.o $<
	$(LD) -r --build-id=sha1 -o $@ $@.o && rm -f $@.o

ALL_TARGETS += $(O)/spanprof-symbolizer
TEST_TARGETS += $(O)/fixtures/sym_inline_O2 $(O)/fixtures/sym_inline_kmod.ko
