# perfsh - build, test, install.  `make help` lists the targets.

VERSION := 0.1.0
PREFIX  ?= /usr/local
CC      ?= cc
PKGS    := lua5.4 libelf libdw libedit

# Debian packages the project needs to build and test (make deps); libpapi-dev only for bench/marker.
DEBS := build-essential pkg-config lua5.4 liblua5.4-dev libpfm4-dev libelf-dev \
        libdw-dev libedit-dev libiberty-dev liblapacke-dev zlib1g-dev lua-busted lua-dkjson lua-check lua-argparse luarocks g++ valgrind \
        procps binutils clang libclang-rt-dev libzydis-dev \
        systemtap-sdt-dev tmux groff-base libpapi-dev rustc

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -DPS_VERSION='"$(VERSION)"'
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libelf libdw 2>/dev/null)
LUA_LIBS   := $(shell pkg-config --libs lua5.4 2>/dev/null)
EDIT_LIBS  := $(shell pkg-config --libs libedit 2>/dev/null)
CORE_LIBS  := $(PKG_LIBS) -lpfm -liberty -llapacke -lZydis -lz -lm

ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
B := build-san
else
B := build
endif

# core/ is in rooms, one concept a folder (core/README.md); every room's headers are on the include path.
CORE_SRC := $(sort $(shell find core -name '*.c'))
CORE_INC := $(addprefix -I,$(sort $(shell find core -type d)))
HOST_SRC := lua/main.c lua/repl.c lua/host.c
BIND_SRC := $(sort $(filter-out $(HOST_SRC),$(wildcard lua/*.c)))
TEST_SRC := $(sort $(wildcard tests/c/*.c))
EX_SRC   := $(sort $(wildcard examples/*.c examples/*.cpp))
BENCH_SRC := $(sort $(filter-out bench/hit_target.c,$(wildcard bench/*.c)))

CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
BIND_OBJ := $(BIND_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)

# Fuzz targets: every tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput; its corpus (with
# each crash found, kept as a regression input) is tests/fuzz/corpus/NAME/. `make check` replays
# every corpus through a plain build of each target; `make fuzz` runs each under libFuzzer.
FUZZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
REPLAYS    := $(FUZZ_NAMES:%=$(B)/tests/fuzz/replay_%)
.SECONDARY: $(FUZZ_NAMES:%=$(B)/tests/fuzz/fuzz_%.o) $(B)/tests/fuzz/replay.o \
            $(FUZZ_NAMES:%=build-fuzz/tests/fuzz/fuzz_%.o) $(CORE_SRC:%.c=build-fuzz/%.o)

EXAMPLES := $(patsubst %.c,%,$(filter %.c,$(EX_SRC))) $(patsubst %.cpp,%,$(filter %.cpp,$(EX_SRC))) \
            examples/sum-nopie examples/sum-stripped examples/marker_loop-off
# The Rust examples are built where rustc is (make deps installs Debian's).
RUSTC    ?= $(shell command -v rustc 2>/dev/null)
ifneq ($(RUSTC),)
EXAMPLES += $(patsubst %.rs,%,$(wildcard examples/*.rs))
endif
BENCHES  := $(patsubst %.c,%,$(BENCH_SRC))

ifeq ($(SAN),1)
.PHONY: perfsh
endif
# The house plan: core/'s rooms from the bottom up (core/README.md), no call up the layers, no
# catcher calling another, no file over 600 lines or function over 80, no files calling each other
# in a loop. The checker is the project's shared tool beside the clone (../shared/tools).
.DEFAULT_GOAL := all
LAYERS := core/base,core/binary,core/events,core/records,core/hitpath,core/proc,core/catch,core/session
structure:
	python3 ../shared/tools/structure.py --strict --layers $(LAYERS) --apart core/catch core lua marker

.PHONY: structure docs all check test-c test-lua bench install uninstall deps clean lint help examples fuzz fuzz-merge

SO := $(B)/lib/perfsh/core.so

# The marker library (marker/): for the programs measured, with the core objects it uses; only
# ps_marker_* is exported (perfsh/marker.h).
MARKER_OBJ := $(patsubst %.c,$(B)/%.o,$(sort $(wildcard marker/*.c))) $(patsubst %,$(B)/core/%.o,base/error events/events \
              events/group base/outfile events/pmu records/psnap_write records/psnap_regions hitpath/ring base/suggest \
              events/sysfs_pmu events/tracepoint)
MARKER_A   := $(B)/lib/libperfsh-marker.a
MARKER_SO  := $(B)/lib/libperfsh-marker.so
MARKER     := $(MARKER_A) $(MARKER_SO)
MARKER_LIBS := -lpfm -lz -lpthread
# perfsh-marker.pc of a prefix the dynamic loader does not search (any but /usr) links the
# program with an rpath to its lib/, so it runs without LD_LIBRARY_PATH.
comma := ,
MARKER_RPATH = $(if $(filter /usr /usr/,$(PREFIX)),,-Wl$(comma)-rpath$(comma)$${libdir} )

# The in-process agent (agent/, --backend inproc): the marker library's sources, the x86
# relocation and trampolines, and the patching; it exports nothing (it is LD_PRELOADed). Built
# without sanitizers even with SAN=1: it is preloaded into programs that are not. No sibling
# calls: every call it makes returns into its own code, by which the entry hook knows a call of
# a library's function as the agent's own, not the program's (agent/agent_libs.c).
AGENT_SRC := $(sort $(wildcard agent/*.c) $(wildcard marker/*.c)) $(patsubst %,core/%.c,base/error events/events \
             events/group base/outfile events/pmu records/psnap_write records/psnap_regions hitpath/ring base/suggest \
             events/sysfs_pmu events/tracepoint binary/x86/x86reloc binary/x86/x86insn binary/x86/x86tramp)
AGENT_OBJ := $(AGENT_SRC:%.c=$(B)/agent-o/%.o)
AGENT_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=% -fno-omit-frame-pointer,$(CFLAGS)) \
                -fno-optimize-sibling-calls
AGENT_SO  := $(B)/lib/libperfsh-agent.so

all: perfsh $(SO) $(MARKER) $(AGENT_SO) examples

help:
	@echo "make            build perfsh, perfsh/core.so and the examples"
	@echo "make check      C unit tests and busted specs; ends with 'N passed, N failed'"
	@echo "make SAN=1 check  the same under ASan and UBSan"
	@echo "make bench      benchmarks (print figures)"
	@echo "make structure  the house plan: layers of core/, catchers apart, sizes, no loops"
	@echo "make fuzz [FUZZ_SECONDS=60]  each libFuzzer target (tests/fuzz/fuzz_*.c) for that long"
	@echo "make fuzz-merge add what the last 'make fuzz' found to tests/fuzz/corpus/ (minimised)"
	@echo "make deps       apt-get the Debian packages the project needs"
	@echo "make docs       doc/lua-api.md from the help topics (doc/perfsh.1 is the man page)"
	@echo "make install PREFIX=DIR"

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(CORE_INC) -MMD -MP -c $< -o $@

# The executable is built in $(B); a plain build copies it to ./perfsh (a SAN build leaves
# ./perfsh alone and is run as build-san/perfsh).
$(B)/perfsh: $(HOST_SRC:%.c=$(B)/%.o) $(BIND_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LUA_LIBS) $(EDIT_LIBS) $(CORE_LIBS) -ldl

ifeq ($(SAN),1)
perfsh: $(B)/perfsh
else
perfsh: $(B)/perfsh
	cp -f $< $@
endif

$(SO): $(BIND_OBJ) $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -o $@ $^ $(CORE_LIBS)

$(B)/marker/%.o: CFLAGS += -Imarker/include
$(MARKER_SO): $(MARKER_OBJ) marker/exports.map
	$(CC) $(LDFLAGS) -shared -Wl,--version-script=marker/exports.map -Wl,-soname,libperfsh-marker.so \
		-o $@ $(MARKER_OBJ) $(MARKER_LIBS)
$(B)/agent-o/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_CFLAGS) $(PKG_CFLAGS) $(CORE_INC) -Imarker -Imarker/include -MMD -MP -c $< -o $@
$(AGENT_SO): $(AGENT_OBJ) agent/exports.map
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize=%,$(LDFLAGS)) -shared -Wl,--version-script=agent/exports.map \
		-Wl,-soname,libperfsh-agent.so -o $@ $(AGENT_OBJ) $(MARKER_LIBS) -lZydis
$(MARKER_A): $(MARKER_OBJ)
	@mkdir -p $(dir $@)
	$(LD) -r -o $(B)/marker/all.o $(MARKER_OBJ)
	objcopy --wildcard --keep-global-symbol='ps_marker_*' $(B)/marker/all.o
	rm -f $@ && $(AR) rcs $@ $(B)/marker/all.o
examples/marker_loop: examples/marker_loop.c $(MARKER_A)
	$(CC) -O2 -g -Imarker/include -o $@ $< $(LDFLAGS) $(MARKER_A) $(MARKER_LIBS)
examples/epoll_server: examples/epoll_server.c $(MARKER_A)
	$(CC) -O2 -g -Imarker/include -o $@ $< $(LDFLAGS) $(MARKER_A) $(MARKER_LIBS)
examples/marker_loop-off: examples/marker_loop.c
	$(CC) -O2 -g -Imarker/include -DPERFSH_MARKER_OFF -o $@ $< -lpthread

$(B)/tests/c/run: $(TEST_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LIBS) -lpthread

# A corpus replayer: one fuzz target and tests/fuzz/replay.c's main(), built like the tests.
$(B)/tests/fuzz/replay_%: $(B)/tests/fuzz/fuzz_%.o $(B)/tests/fuzz/replay.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

# libFuzzer builds (clang) in build-fuzz/: the core instrumented, ASan and UBSan on.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FB           := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: the snapshot reader accepts any checksum, so mutations reach it.
FUZZ_CFLAGS  := -O1 -g -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -DPS_VERSION='"$(VERSION)"' $(FUZZ_SAN) \
                -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZERS      := $(FUZZ_NAMES:%=$(FB)/fuzz_%)

$(FB)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) $(CORE_INC) -MMD -MP -c $< -o $@

$(FB)/fuzz_%: $(FB)/tests/fuzz/fuzz_%.o $(CORE_SRC:%.c=$(FB)/%.o)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(CORE_LIBS)

# New inputs go to build-fuzz/corpus/NAME (make fuzz-merge keeps those that reach new edges); a crash is
# written to tests/fuzz/corpus/NAME/crash-* and fails the run: commit it as a regression input.
# FUZZ_ARTIFACTS=DIR writes crashes to DIR/NAME/ instead (CI keeps them out of the replayed corpus).
FUZZ_ARTIFACTS ?= tests/fuzz/corpus
fuzz: $(FUZZERS)
	@for n in $(FUZZ_NAMES); do \
		echo "== fuzz $$n ($(FUZZ_SECONDS) s)"; \
		mkdir -p $(FB)/corpus/$$n tests/fuzz/corpus/$$n $(FUZZ_ARTIFACTS)/$$n; \
		$(FB)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_ARTIFACTS)/$$n/ $(FB)/corpus/$$n tests/fuzz/corpus/$$n \
			>$(FB)/fuzz_$$n.log 2>&1 || { tail -n 60 $(FB)/fuzz_$$n.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^stat::new_units_added' $(FB)/fuzz_$$n.log; \
	done

fuzz-merge: $(FUZZERS)
	@for n in $(FUZZ_NAMES); do \
		$(FB)/fuzz_$$n -merge=1 -use_counters=0 tests/fuzz/corpus/$$n $(FB)/corpus/$$n 2>&1 | tail -n 1; \
	done

examples: $(EXAMPLES)

# Examples are built as a user would build a benchmark: -O2 -g, PIE (Debian's default).
# sum-nopie is the same source linked non-PIE; sum-stripped has no symbols.
examples/sum-nopie: examples/sum.c
	$(CC) -O2 -g -no-pie -o $@ $<
examples/sum-stripped: examples/sum.c
	$(CC) -O2 -s -o $@ $<
examples/%: examples/%.c
	$(CC) -O2 -g -o $@ $< -lpthread
examples/%: examples/%.cpp
	g++ -O2 -g -o $@ $<
examples/%: examples/%.rs
	$(RUSTC) -O -g -o $@ $<

bench/hit_target: bench/hit_target.c
	$(CC) -O2 -g -fcf-protection=full -o $@ $<

# bench/default_path's C++ and Rust targets, built as a user would (-O2 / -O, -g, PIE). Rust is
# built where make finds rustc (RUSTC, as for the examples); without one, or where it fails,
# bench/default_path says the program is not built and skips its rows.
BENCH_TARGETS := bench/hit_target bench/hit_cxx $(if $(RUSTC),bench/hit_rs)
bench/hit_cxx: bench/hit_cxx.cpp
	g++ -O2 -g -fcf-protection=none -o $@ $<
bench/hit_rs: bench/hit_rs.rs
	$(RUSTC) -O -g -o $@ $< || { rm -f $@; echo "bench/hit_rs: $(RUSTC) failed; its rows are skipped"; }

# bench/marker also measures PAPI's read (libpapi-dev); nothing else links PAPI.
bench/marker: bench/marker.c $(MARKER_A) $(CORE_OBJ)
	$(CC) $(CFLAGS) -Imarker/include $(CORE_INC) -o $@ $< $(LDFLAGS) $(MARKER_A) $(CORE_OBJ) $(CORE_LIBS) -lpapi

bench/%: bench/%.c $(wildcard bench/*.h) $(CORE_OBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(CORE_INC) -o $@ $(filter-out %.h,$^) $(LDFLAGS) $(CORE_LIBS)

check: all $(B)/tests/c/run $(REPLAYS)
	@PERFSH=$(B)/perfsh B=$(B) sh tests/run.sh

bench: all $(BENCHES) $(BENCH_TARGETS)
	@for b in $(BENCHES); do echo "== $$b"; ./$$b || exit 1; done

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEBS)

install: perfsh $(SO) $(MARKER) $(AGENT_SO)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh \
	           $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh $(DESTDIR)$(PREFIX)/share/perfsh/scripts \
	           $(DESTDIR)$(PREFIX)/include/perfsh $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	           $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 marker/include/perfsh/marker.h $(DESTDIR)$(PREFIX)/include/perfsh/
	install -m 644 $(MARKER_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(MARKER_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(AGENT_SO) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@RPATH@|$(MARKER_RPATH)|' \
		marker/perfsh-marker.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/perfsh-marker.pc
	install -m 755 perfsh $(DESTDIR)$(PREFIX)/bin/perfsh
	install -m 644 lua/perfsh/*.lua $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh/
	install -m 755 $(SO) $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh/core.so
	install -m 644 scripts/*.lua $(DESTDIR)$(PREFIX)/share/perfsh/scripts/
	install -m 644 doc/perfsh.1 $(DESTDIR)$(PREFIX)/share/man/man1/perfsh.1

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/bin/perfsh $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh \
	       $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh $(DESTDIR)$(PREFIX)/share/perfsh \
	       $(DESTDIR)$(PREFIX)/include/perfsh/marker.h $(DESTDIR)$(PREFIX)/lib/libperfsh-marker.* \
	       $(DESTDIR)$(PREFIX)/lib/libperfsh-agent.so \
	       $(DESTDIR)$(PREFIX)/lib/pkgconfig/perfsh-marker.pc $(DESTDIR)$(PREFIX)/share/man/man1/perfsh.1

# The Lua API reference, from the REPL's help topics (tests/21-docs_spec.lua checks it is current).
docs: perfsh
	./perfsh doc/gen-api.lua > doc/lua-api.md

lint:
	clang-format --dry-run --Werror $(shell find core -name '*.[ch]') lua/*.c marker/*.c marker/*.h marker/include/perfsh/*.h agent/*.c agent/*.h
	@command -v luacheck >/dev/null && luacheck lua scripts tests || echo "luacheck not installed; skipped"

clean:
	rm -rf build build-san build-fuzz perfsh $(EXAMPLES) $(BENCHES) bench/hit_target bench/hit_cxx bench/hit_rs

-include $(shell find $(B) $(FB) -name '*.d' 2>/dev/null)
