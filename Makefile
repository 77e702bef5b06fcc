# perfsh - build, test, install.  `make help` lists the targets.

VERSION := 0.1.0
PREFIX  ?= /usr/local
CC      ?= cc
PKGS    := lua5.4 libelf libdw libedit

# Debian packages the project needs to build and test (make deps).
DEBS := build-essential pkg-config lua5.4 liblua5.4-dev libpfm4-dev libelf-dev \
        libdw-dev libedit-dev libzydis-dev libiberty-dev liblapacke-dev lua-busted lua-dkjson lua-check g++ valgrind procps binutils

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -DPS_VERSION='"$(VERSION)"'
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libelf libdw 2>/dev/null)
LUA_LIBS   := $(shell pkg-config --libs lua5.4 2>/dev/null)
EDIT_LIBS  := $(shell pkg-config --libs libedit 2>/dev/null)
CORE_LIBS  := $(PKG_LIBS) -lpfm -lZydis -liberty -llapacke -lm

ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
B := build-san
else
B := build
endif

CORE_SRC := $(sort $(wildcard core/*.c))
BIND_SRC := $(sort $(filter-out lua/main.c lua/repl.c,$(wildcard lua/*.c)))
TEST_SRC := $(sort $(wildcard tests/c/*.c))
EX_SRC   := $(sort $(wildcard examples/*.c examples/*.cpp))
BENCH_SRC := $(sort $(filter-out bench/hit_target.c,$(wildcard bench/*.c)))

CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
BIND_OBJ := $(BIND_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)

EXAMPLES := $(patsubst %.c,%,$(filter %.c,$(EX_SRC))) $(patsubst %.cpp,%,$(filter %.cpp,$(EX_SRC))) \
            examples/sum-nopie examples/sum-stripped
BENCHES  := $(patsubst %.c,%,$(BENCH_SRC))

ifeq ($(SAN),1)
.PHONY: perfsh
endif
.PHONY: all check test-c test-lua bench install uninstall deps clean lint help examples

SO := $(B)/lib/perfsh/core.so

all: perfsh $(SO) examples

help:
	@echo "make            build perfsh, perfsh/core.so and the examples"
	@echo "make check      C unit tests and busted specs; ends with 'N passed, N failed'"
	@echo "make SAN=1 check  the same under ASan and UBSan"
	@echo "make bench      benchmarks (print figures)"
	@echo "make deps       apt-get the Debian packages the project needs"
	@echo "make install PREFIX=DIR"

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -MMD -MP -c $< -o $@

# The executable is built in $(B); a plain build copies it to ./perfsh (a SAN build leaves
# ./perfsh alone and is run as build-san/perfsh).
$(B)/perfsh: $(B)/lua/main.o $(B)/lua/repl.o $(BIND_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LUA_LIBS) $(EDIT_LIBS) $(CORE_LIBS) -ldl

ifeq ($(SAN),1)
perfsh: $(B)/perfsh
else
perfsh: $(B)/perfsh
	cp $< $@
endif

$(SO): $(BIND_OBJ) $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -o $@ $^ $(CORE_LIBS)

$(B)/tests/c/run: $(TEST_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LIBS) -lpthread

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

bench/hit_target: bench/hit_target.c
	$(CC) -O2 -g -fcf-protection=full -o $@ $<

bench/%: bench/%.c $(CORE_OBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icore -o $@ $^ $(LDFLAGS) $(CORE_LIBS)

check: all $(B)/tests/c/run
	@PERFSH=$(B)/perfsh B=$(B) sh tests/run.sh

bench: all $(BENCHES) bench/hit_target
	@for b in $(BENCHES); do echo "== $$b"; ./$$b || exit 1; done

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEBS)

install: perfsh $(SO)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh \
	           $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh $(DESTDIR)$(PREFIX)/share/perfsh/scripts
	install -m 755 perfsh $(DESTDIR)$(PREFIX)/bin/perfsh
	install -m 644 lua/perfsh/*.lua $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh/
	install -m 755 $(SO) $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh/core.so
	install -m 644 scripts/*.lua $(DESTDIR)$(PREFIX)/share/perfsh/scripts/

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/bin/perfsh $(DESTDIR)$(PREFIX)/share/lua/5.4/perfsh \
	       $(DESTDIR)$(PREFIX)/lib/lua/5.4/perfsh $(DESTDIR)$(PREFIX)/share/perfsh

lint:
	clang-format --dry-run --Werror core/*.c core/*.h lua/*.c
	@command -v luacheck >/dev/null && luacheck lua scripts tests || echo "luacheck not installed; skipped"

clean:
	rm -rf build build-san perfsh $(EXAMPLES) $(BENCHES) bench/hit_target

-include $(shell find $(B) -name '*.d' 2>/dev/null)
