-- perfsh as a LuaRocks package: `luarocks --lua-version 5.4 make --tree DIR` in a checkout builds
-- the perfsh executable and the C module perfsh.core with the project's Makefile, against the
-- system libraries (Debian: make deps), and installs into the tree DIR/bin/perfsh, the modules
-- (DIR/share/lua/5.4/perfsh/), perfsh.core (DIR/lib/lua/5.4/perfsh/core.so) and the recipes,
-- which the executable finds beside its modules (DIR/share/lua/5.4/perfsh/recipes/).
-- tests/05-install_spec.lua builds it into a temporary tree and runs `perfsh stat` from there.
rockspec_format = "3.0"
package = "perfsh"
version = "0.1.0-1"
source = {
   -- built from a checkout (luarocks make); no release archive is published
   url = "git+file://.",
}
description = {
   summary = "A scriptable profiling shell: hardware counters for exactly the code you care about",
   detailed = [[
perfsh counts one function or one source-line range of an unmodified ELF binary, per thread and
per hit, with perf event groups, and lets a Lua 5.4 script decide what to measure and what to do
with the numbers. The perfsh executable is the shell and runs the recipes (perfsh stat, tail,
report, check, compare, ...); require "perfsh" loads the same library in a plain lua5.4.
]],
   license = "MIT",
   labels = {"profiling", "perf", "linux"},
}
supported_platforms = {"linux"}
dependencies = {
   "lua >= 5.4, < 5.5",
}
-- Checked before the build; Debian's packages in parentheses (make deps installs them all).
external_dependencies = {
   LIBPFM = {header = "perfmon/pfmlib_perf_event.h"}, -- libpfm4-dev
   LIBELF = {header = "libelf.h"},                    -- libelf-dev
   LIBDW = {header = "elfutils/libdw.h"},             -- libdw-dev
   ZYDIS = {header = "Zydis/Zydis.h"},                -- libzydis-dev
   LAPACKE = {header = "lapacke.h"},                  -- liblapacke-dev
   LIBIBERTY = {header = "libiberty/demangle.h"},     -- libiberty-dev
   LIBEDIT = {header = "editline/readline.h"},        -- libedit-dev
   ZLIB = {header = "zlib.h"},                        -- zlib1g-dev
}
build = {
   type = "make",
   -- the executable (perfsh.core built in) and perfsh/core.so for a plain lua5.4; the Makefile
   -- sets its own flags (C11, warnings, pkg-config for lua5.4, libelf, libdw, libedit). LuaRocks
   -- warns that CFLAGS is not passed: passed on make's command line, it would replace them.
   build_target = "perfsh build/lib/perfsh/core.so",
   install_pass = false,
   install = {
      bin = {perfsh = "perfsh"},
      lib = {["perfsh.core"] = "build/lib/perfsh/core.so"},
      -- every module of lua/perfsh/ and every recipe of scripts/ (tests/05-install_spec.lua
      -- checks that none is left out)
      lua = {
      ["perfsh.attribute"] = "lua/perfsh/attribute.lua",
      ["perfsh.baseline"] = "lua/perfsh/baseline.lua",
      ["perfsh.callgrind"] = "lua/perfsh/callgrind.lua",
      ["perfsh.cli"] = "lua/perfsh/cli.lua",
      ["perfsh.complete"] = "lua/perfsh/complete.lua",
      ["perfsh.csv"] = "lua/perfsh/csv.lua",
      ["perfsh.defaults"] = "lua/perfsh/defaults.lua",
      ["perfsh.export"] = "lua/perfsh/export.lua",
      ["perfsh.fail"] = "lua/perfsh/fail.lua",
      ["perfsh.gate"] = "lua/perfsh/gate.lua",
      ["perfsh.help"] = "lua/perfsh/help.lua",
      ["perfsh.hitgate"] = "lua/perfsh/hitgate.lua",
      ["perfsh.init"] = "lua/perfsh/init.lua",
      ["perfsh.metrics"] = "lua/perfsh/metrics.lua",
      ["perfsh.outfile"] = "lua/perfsh/outfile.lua",
      ["perfsh.presets"] = "lua/perfsh/presets.lua",
      ["perfsh.region"] = "lua/perfsh/region.lua",
      ["perfsh.repl"] = "lua/perfsh/repl.lua",
      ["perfsh.replenv"] = "lua/perfsh/replenv.lua",
      ["perfsh.report"] = "lua/perfsh/report.lua",
      ["perfsh.snapfile"] = "lua/perfsh/snapfile.lua",
      ["perfsh.tail"] = "lua/perfsh/tail.lua",
      ["perfsh.topology"] = "lua/perfsh/topology.lua",
      ["perfsh.tracee"] = "lua/perfsh/tracee.lua",
      ["perfsh.recipes.attribute"] = "scripts/attribute.lua",
      ["perfsh.recipes.check"] = "scripts/check.lua",
      ["perfsh.recipes.compare"] = "scripts/compare.lua",
      ["perfsh.recipes.count"] = "scripts/count.lua",
      ["perfsh.recipes.ipc"] = "scripts/ipc.lua",
      ["perfsh.recipes.kinds"] = "scripts/kinds.lua",
      ["perfsh.recipes.report"] = "scripts/report.lua",
      ["perfsh.recipes.stat"] = "scripts/stat.lua",
      ["perfsh.recipes.tail"] = "scripts/tail.lua",
      },
   },
   copy_directories = {"doc"},
}
