# Makefile - the one build of tjit.
#
#   make              build/libtjit.a, build/libtjit.so, build/tjit (with build/libtjit_bench.a),
#                     build/libtjit_rt.{a,so} (the runtime without LLVM: exported models, docs/export.md)
#   make test         install deps if missing, check-layers, loc, build, check the public
#                     headers compile alone (check-headers), run every cmocka suite
#   make check-layers the include arrows of docs/architecture.md's layer table hold
#   make loc          lines of C per directory and file; fails on a file over 1,200 lines
#   make check-oom    the allocation-failure sweep (part of make test): every n-th
#                     allocation of tests/oom/driver.c fails in turn
#   make asan         the same suites under -fsanitize=address,undefined
#   make bench        install deps if missing, build, run the benchmark suite
#   make bench-compare  the suite against PyTorch eager (BENCH_ARGS="P1 --threads 2")
#   make example      build and run examples/mymodel.c (a user's model) and examples/train.c
#                     (a compiled training loop) against libtjit.a
#   make docs         regenerate docs/ops.md from ir/ops.def
#   make callsites    regenerate include/tjit_callsites.h, tjit.h's call-site macros (done by every build)
#   make deps         scripts/install-deps.sh
#   make fuzz         fuzz the text IR parser (clang, libFuzzer) for FUZZ_TIME seconds
#   make fuzz-programs random programs compiled against eager: PROGRAMS per mode from PROGRAMS_SEED
#   make install      lib/libtjit.so.N (+ .a), lib/libtjit_rt.{so,a}, include/, bin/tjit, lib/pkgconfig/tjit.pc,
#                     share/doc/tjit under $(DESTDIR)$(PREFIX) (PREFIX=/usr/local)
#   make uninstall    removes what install put there
#
# Variables: LLVM_CONFIG (default: llvm-config-19 or /usr/lib/llvm-19/bin/llvm-config),
# BUILD (output dir), CC (gcc; clang-19 works too), EXTRA_CFLAGS, EXTRA_LDFLAGS,
# PREFIX, DESTDIR. Builds run on every CPU (-j$(nproc)) unless a -j is given.

LLVM_CONFIG ?= $(firstword $(wildcard /usr/bin/llvm-config-19 /usr/lib/llvm-19/bin/llvm-config) llvm-config-19)
BUILD ?= build
CC ?= gcc

LLVM_CFLAGS := $(shell $(LLVM_CONFIG) --cflags 2>/dev/null | sed 's/-std=[^ ]*//')
LLVM_LDFLAGS := $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) \
                $(shell $(LLVM_CONFIG) --libs 2>/dev/null) \
                -Wl,-rpath,$(shell $(LLVM_CONFIG) --libdir 2>/dev/null)

# gcc's -Wshadow=local has no clang spelling; clang gets its own shadow warning.
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -q clang && echo 1)
WARN := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter \
        $(if $(CC_IS_CLANG),-Wshadow-uncaptured-local,-Wshadow=local)
OPT ?= -O3 -g
# -fno-math-errno lets sqrt and rounding vectorize; -fno-trapping-math (clang's
# default) lets gcc if-convert the selects of ir/vmath.h, so loops calling
# it vectorize (FP exception flags are not part of our semantics); no
# -ffast-math: NaN and Inf semantics are kept. -fwrapv: integer kernels wrap on
# overflow like PyTorch's (and like the JIT's bitcode), instead of being UB.
# Kernels with target_clones get AVX-512 with 512-bit vectors.
# -fvisibility=hidden: only what include/ declares is exported from libtjit.so.
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -fvisibility=hidden \
              -fno-math-errno -fno-trapping-math -fwrapv \
              -mprefer-vector-width=512 -pthread -Iinclude $(EXTRA_CFLAGS)
LDLIBS := $(LLVM_LDFLAGS) -lm -ldl -pthread $(EXTRA_LDFLAGS)

LIB_DIRS := ir runtime passes codegen sched frontend
LIB_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
TOOL_SRCS := $(wildcard tools/*.c)
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_UTIL := $(wildcard tests/util*.c)
BENCH_SRCS := $(wildcard benchmarks/*.c)

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

# ---- libtjit_rt: the runtime without LLVM (docs/export.md) -----------------
# What an exported model needs to run: the IR (op table, shape rules, text
# form), the runtime (tensors, allocator, pool, eager kernels, BLAS bridge,
# errors, npy), the passes (the executor decomposes DCOMP nodes), and of
# sched/ and codegen/ the files that run a built plan (no LLVM: a kernel step
# is a function address). libtjit links the same objects, plus the compiler
# (frontend, codegen, the plan builder, ORC JIT): one build of each object.
RT_SRCS := $(wildcard ir/*.c runtime/*.c passes/*.c) sched/exec.c sched/run.c sched/mem.c \
           sched/block.c sched/prof.c sched/pair.c sched/aot_load.c codegen/kernel.c codegen/lower.c
RT_OBJS := $(RT_SRCS:%.c=$(BUILD)/obj/%.o)
RT_LDLIBS := -lm -ldl -pthread $(EXTRA_LDFLAGS)

# libtjit_dist's files, when mpicc is found (the rules are further down; the
# names are set here, before `all` and `install` use them).
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LDFLAGS := $(shell $(MPICC) --showme:link 2>/dev/null)
DIST_SRCS := $(wildcard dist/*.c)
DIST_OBJS := $(DIST_SRCS:%.c=$(BUILD)/obj/%.o)
DIST_LIBS := $(BUILD)/libtjit_dist.a $(BUILD)/libtjit_dist.so
DIST_TESTS := $(BUILD)/tests/dist/ddp_check
DIST_BENCH := $(BUILD)/benchmarks/dist/ddp_bench
endif
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL_OBJS := $(TEST_UTIL:%.c=$(BUILD)/obj/%.o)

# ---- packaging: version, shared library names, install dirs ----------------
# The version is written once, in include/tjit.h (TJ_VERSION_MAJOR/MINOR/PATCH).
tj_ver = $(shell sed -n 's/^\#define TJ_VERSION_$(1) \([0-9]*\).*/\1/p' include/tjit.h)
VERSION := $(call tj_ver,MAJOR).$(call tj_ver,MINOR).$(call tj_ver,PATCH)
SO_NAME := libtjit.so.$(call tj_ver,MAJOR)
SO_REAL := libtjit.so.$(VERSION)
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
DOCDIR ?= $(PREFIX)/share/doc/tjit
PUBLIC_HEADERS := $(wildcard include/*.h)
# Parallel by default: -j(number of CPUs) unless the command line gave a -j
# (make 4.3 lets a command-line -j win; sub-makes share the top one's jobs).
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

.SECONDARY:
.PHONY: dist bench-dist all test asan bench bench-compare example docs deps clean check-tests check-headers golden \
        check-layers loc callsites
all: $(BUILD)/libtjit.a $(BUILD)/libtjit.so $(BUILD)/tjit $(DIST_LIBS) $(BUILD)/libtjit_rt.a $(BUILD)/libtjit_rt.so

$(BUILD)/obj/%.o: %.c | $(BUILD)/callsites.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(if $(filter codegen/%,$<),$(LLVM_CFLAGS)) -MMD -MP -c $< -o $@

# The library itself calls its entry points without the call-site macros of
# include/tjit.h (which record the user's line); those macros are generated
# from the header's declarations, refreshed before anything is compiled, so a
# new entry point gets one (make test checks the header is up to date).
$(LIB_OBJS): CFLAGS_ALL += -DTJ_NO_CALLSITE
$(BUILD)/callsites.stamp: $(wildcard include/tjit.h include/tjit_*.h) scripts/callsites.sh
	@mkdir -p $(dir $@)
	@bash scripts/callsites.sh --update include/tjit.h && touch $@
callsites:
	@bash scripts/callsites.sh --update include/tjit.h

# The pointwise formulas as LLVM bitcode for the JIT (codegen/formulas/pw.c says
# why and how), embedded by codegen/bitcode.c. Needs clang-19 and llvm-extract-19 (scripts/install-deps.sh);
# without it the library still builds, and compiled graphs run on the eager executor.
# -fno-slp-vectorize: a formula must reach the kernel scalar; SLP's <2 x double>
# pieces (digamma's sum of eight reciprocals) stop the kernel loop's vectorizer,
# and the JIT's own O3 pipeline runs SLP after it anyway.
# The bitcode is embedded in parts, one per compute dtype (the formula
# names' suffix, tj_pw_<op>_<PART>, codegen/emit.c's dt_suffix), cut from
# pw.bc by llvm-extract (package llvm-19, which llvm-19-dev pulls in): a
# kernel reads only the parts it calls, where reading all 721 functions'
# headers cost each kernel's compile about a tenth of its instructions
# (docs/perf.md, "Cold compile: the formula bitcode in parts, LSR off").
CLANG_BC ?= $(firstword $(wildcard /usr/bin/clang-19 /usr/lib/llvm-19/bin/clang))
LLVM_EXTRACT ?= $(firstword $(wildcard /usr/bin/llvm-extract-19 /usr/lib/llvm-19/bin/llvm-extract))
BC_FLAGS := -std=c11 -O2 -fno-math-errno -ffp-contract=off -fwrapv -fno-slp-vectorize -w -emit-llvm
PW_PARTS := F32 F64 I32 I64 U8 I8 I16 BOOL
ifneq ($(and $(CLANG_BC),$(LLVM_EXTRACT)),)
$(BUILD)/codegen/pw.bc: codegen/formulas/pw.c
	@mkdir -p $(dir $@) $(BUILD)/obj/codegen
	$(CLANG_BC) $(BC_FLAGS) -MMD -MP -MT $@ -MF $(BUILD)/obj/codegen/pw.bc.d -c $< -o $@
$(BUILD)/codegen/pw_%.bc: $(BUILD)/codegen/pw.bc Makefile   # the cut's options are here
	$(LLVM_EXTRACT) --recursive --rfunc='^tj_pw_.*_$*$$' --rglob='.*' $< -o $@
$(BUILD)/obj/codegen/bitcode.o: $(PW_PARTS:%=$(BUILD)/codegen/pw_%.bc)
$(BUILD)/obj/codegen/bitcode.o: CFLAGS_ALL += -DCG_BITCODE_DIR='"$(BUILD)/codegen"' \
	-DCG_PW_PARTS='$(foreach p,$(PW_PARTS),X($(p)))'
endif

# What the code generator is built from, hashed into every kernel cache key
# (codegen/cache.h): a kernel cached by other codegen sources is never reused,
# with no version number to remember to bump. Rewritten only when it changes.
CG_SOURCES := $(sort $(wildcard codegen/*.c codegen/*.h codegen/formulas/*.c) ir/vmath.h ir/vmath_prims.h \
                     ir/half.h ir/ops.def ir/dtypes.def)
$(BUILD)/gen/cg_source_hash.h: $(CG_SOURCES)
	@mkdir -p $(dir $@)
	@printf '#define CG_SOURCE_HASH "%s"\n' $$(cat $^ | sha256sum | cut -c1-64) > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@
$(BUILD)/obj/codegen/cache.o: $(BUILD)/gen/cg_source_hash.h
$(BUILD)/obj/codegen/cache.o: CFLAGS_ALL += -I$(BUILD)/gen

$(BUILD)/libtjit.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Exports: what include/ declares (TJ_API_BEGIN); the anonymous version script
# also keeps the linker's own symbols (_end, _edata, __bss_start) local.
$(BUILD)/$(SO_REAL): $(LIB_OBJS)
	@printf '{ global: tj_*; local: *; };\n' > $(BUILD)/libtjit.map
	$(CC) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=$(BUILD)/libtjit.map -o $@ $^ $(LDLIBS)

$(BUILD)/libtjit.so: $(BUILD)/$(SO_REAL)
	ln -sf $(SO_REAL) $(BUILD)/$(SO_NAME) && ln -sf $(SO_NAME) $@

# libtjit_rt (above): --no-undefined proves it needs nothing of libtjit or LLVM.
$(BUILD)/libtjit_rt.a: $(RT_OBJS)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libtjit_rt.so: $(RT_OBJS)
	@printf '{ global: tj_*; local: *; };\n' > $(BUILD)/libtjit_rt.map
	$(CC) -shared -Wl,-soname,libtjit_rt.so -Wl,--no-undefined -Wl,--version-script=$(BUILD)/libtjit_rt.map \
	    -o $@ $^ $(RT_LDLIBS)

# The benchmark suite, on the public API only; the tool links it.
$(BUILD)/libtjit_bench.a: $(BENCH_OBJS)
	rm -f $@ && ar rcs $@ $^

# The whole library, its API exported: `tjit explain LIB.so` loads a user's
# model built without libtjit (docs/cli.md), which calls the tool's tj_ functions.
$(BUILD)/tjit: $(TOOL_OBJS) $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a
	$(CC) -rdynamic -o $@ $(TOOL_OBJS) $(BUILD)/libtjit_bench.a \
	    -Wl,--whole-archive $(BUILD)/libtjit.a -Wl,--no-whole-archive $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_UTIL_OBJS) $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TEST_UTIL_OBJS) $(BUILD)/libtjit.a $(LDLIBS) -lcmocka

deps:
	@bash scripts/install-deps.sh

# libtjit_dist (dist/, docs/distributed.md): data parallelism over MPI, a
# library of its own so that libtjit never depends on MPI. Built when mpicc
# is found (scripts/install-deps.sh installs Open MPI); without it everything
# else still builds and the distributed tests are skipped.
ifneq ($(MPICC),)
$(DIST_OBJS): CFLAGS_ALL += $(MPI_CFLAGS) -DTJ_NO_CALLSITE
$(BUILD)/obj/tests/dist/%.o: CFLAGS_ALL += $(MPI_CFLAGS)
$(BUILD)/libtjit_dist.a: $(DIST_OBJS)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libtjit_dist.so: $(DIST_OBJS) $(BUILD)/libtjit.so
	@printf '{ global: tj_*; local: *; };\n' > $(BUILD)/libtjit_dist.map
	$(CC) -shared -Wl,-soname,libtjit_dist.so -Wl,--version-script=$(BUILD)/libtjit_dist.map -o $@ \
	    $(DIST_OBJS) -L$(BUILD) -ltjit $(MPI_LDFLAGS)
$(BUILD)/obj/benchmarks/dist/%.o: CFLAGS_ALL += $(MPI_CFLAGS)
$(BUILD)/tests/dist/%: $(BUILD)/obj/tests/dist/%.o $(BUILD)/libtjit_dist.a $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(BUILD)/libtjit_dist.a $(BUILD)/libtjit.a $(LDLIBS) $(MPI_LDFLAGS)
$(BUILD)/benchmarks/dist/%: $(BUILD)/obj/benchmarks/dist/%.o $(BUILD)/libtjit_dist.a $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(BUILD)/libtjit_dist.a $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a $(LDLIBS) $(MPI_LDFLAGS)
endif
# Data parallelism: the library, its mpirun test program and benchmark.
dist: $(DIST_LIBS) $(DIST_TESTS) $(DIST_BENCH)
# The distributed benchmark (docs/distributed.md): P7 and P8 at 1 and 2 ranks
# over shared memory and TCP, allreduce time against size.
bench-dist: dist
	@BUILD=$(BUILD) bash scripts/bench-dist.sh

# Each public header, copied alone with the other public headers into an empty
# directory, compiles as the only include of a strict C11 translation unit:
# the headers need nothing but the standard library (part of `make test`).
PUB_HEADERS := $(wildcard include/*.h)
HEADER_CFLAGS := -std=c11 -pedantic -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes
$(BUILD)/check/%.ok: include/%.h $(PUB_HEADERS)
	@rm -rf $(BUILD)/check/$*.d && mkdir -p $(BUILD)/check/$*.d
	@cp $(PUB_HEADERS) $(BUILD)/check/$*.d/
	@printf '#include <%s.h>\nint tj_header_check_%s(void);\nint tj_header_check_%s(void) { return 0; }\n' \
	    $* $* $* > $(BUILD)/check/$*.d/tu.c
	$(CC) $(HEADER_CFLAGS) -I$(BUILD)/check/$*.d -c $(BUILD)/check/$*.d/tu.c -o $(BUILD)/check/$*.d/tu.o
	@touch $@

check-headers: $(PUB_HEADERS:include/%.h=$(BUILD)/check/%.ok)

# The README's test command: set up, check the layers, build, run every
# suite, one summary line.
test: deps
	@$(MAKE) --no-print-directory check-layers
	@bash scripts/callsites.sh --check include/tjit.h
	@bash scripts/loc.sh --check
	@$(MAKE) --no-print-directory check-tests

# Lines of C per directory and per file; a source file over the limit
# (scripts/loc.sh) fails, here and in make test.
loc:
	@bash scripts/loc.sh

# No #include against the layer table of docs/architecture.md (and the
# script's own check that it catches one).
check-layers:
	@out=$$(bash scripts/check-layers.sh --self-test) || { echo "$$out"; exit 1; }
	@bash scripts/check-layers.sh

# The allocation-failure sweep (scripts/check-oom.sh, docs/testing.md): an
# LD_PRELOAD allocator that fails the n-th allocation, over a driver program.
OOM_BINS := $(BUILD)/tests/oom/liboomshim.so $(BUILD)/tests/oom/driver
$(BUILD)/tests/oom/liboomshim.so: tests/oom/shim.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden $< -o $@ -ldl -pthread
$(BUILD)/tests/oom/driver: $(BUILD)/obj/tests/oom/driver.o $(BUILD)/libtjit.a
	$(CC) -o $@ $< $(BUILD)/libtjit.a $(LDLIBS)

.PHONY: check-oom
check-oom: all $(OOM_BINS)
	@TJ_BUILD=$(BUILD) bash scripts/check-oom.sh

# Script suites (TAP) run after the cmocka ones; asan has none.
SCRIPT_SUITES ?= scripts/test-install.sh scripts/check-oom.sh scripts/test-dist.sh scripts/test-export.sh
check-tests: all check-headers $(TEST_BINS) $(if $(SCRIPT_SUITES),$(OOM_BINS) $(DIST_TESTS))
	@TJ_BUILD=$(BUILD) bash scripts/run-tests.sh $(TEST_BINS) $(SCRIPT_SUITES)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined" SCRIPT_SUITES= check-tests

# A quiet build (errors still show), then the suite: progress on stderr, the
# table on stdout (make bench > table.txt).
bench: deps
	@$(MAKE) --no-print-directory -s all
	@$(BUILD)/tjit bench

# tjit eager vs PyTorch eager, side by side (markdown on stdout, for docs/perf.md).
bench-compare: deps all
	@BUILD=$(BUILD) bash scripts/bench-compare.sh $(BENCH_ARGS)

# ---- conv kernels per shape (issue 13): the measurement behind the conv2d
# kernel choice (benchmarks/probes/conv_shapes.c; docs/perf.md, Convolution).
.PHONY: bench-conv
bench-conv: deps $(BUILD)/bench/conv_shapes
	@$(BUILD)/bench/conv_shapes $(BENCH_ARGS)

$(BUILD)/bench/conv_shapes: benchmarks/probes/conv_shapes.c $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libtjit.a $(LDLIBS)

# ---- a training step eager and compiled two ways, calls interleaved in one
# process (benchmarks/probes/train_paired.c; docs/perf.md, Inter-op parallelism).
.PHONY: bench-train-paired
bench-train-paired: deps $(BUILD)/bench/train_paired
	@$(BUILD)/bench/train_paired $(BENCH_ARGS)

$(BUILD)/bench/train_paired: benchmarks/probes/train_paired.c $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a $(LDLIBS)

# ---- two cases compiled, calls interleaved in one process (issue 18: B4 vs P4,
# A6 vs P6; benchmarks/probes/cases_paired.c; docs/perf.md).
.PHONY: bench-cases-paired
bench-cases-paired: deps $(BUILD)/bench/cases_paired
	@$(BUILD)/bench/cases_paired $(BENCH_ARGS)

$(BUILD)/bench/cases_paired: benchmarks/probes/cases_paired.c $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libtjit_bench.a $(BUILD)/libtjit.a $(LDLIBS)

# ---- bench-backward: an MLP's forward + backward, eager vs a compiled call ----
# (benchmarks/backward/mlp.c; docs/training.md). BENCH_ARGS: --threads N --cpu-time ...
# bench-backward-conv: the same for a ResNet basic block (benchmarks/backward/convblock.c);
# bench-backward-penalty: a WGAN-GP critic's step, gradients of gradients (penalty.c);
# bench-backward-checkpoint: residual MLP blocks with and without tj_checkpoint (checkpoint.c);
# bench-backward-amp: an MLP's AdamW step in f32, bf16 and f16 autocast, with a gradient scaler (amp.c).
.PHONY: bench-backward bench-backward-conv bench-backward-penalty bench-backward-checkpoint bench-backward-amp
bench-backward: $(BUILD)/bench-backward
	$(BUILD)/bench-backward $(BENCH_ARGS)

bench-backward-conv: $(BUILD)/bench-backward-conv
	$(BUILD)/bench-backward-conv $(BENCH_ARGS)

$(BUILD)/bench-backward: benchmarks/backward/mlp.c benchmarks/backward/timing.h include/tjit.h $(BUILD)/libtjit.a
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude $< -o $@ $(BUILD)/libtjit.a $(LDLIBS)

bench-backward-penalty: $(BUILD)/bench-backward-penalty
	$(BUILD)/bench-backward-penalty $(BENCH_ARGS)

bench-backward-checkpoint: $(BUILD)/bench-backward-checkpoint
	$(BUILD)/bench-backward-checkpoint $(BENCH_ARGS)

bench-backward-amp: $(BUILD)/bench-backward-amp
	$(BUILD)/bench-backward-amp $(BENCH_ARGS)

$(BUILD)/bench-backward-conv: benchmarks/backward/convblock.c benchmarks/backward/timing.h include/tjit.h $(BUILD)/libtjit.a
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude $< -o $@ $(BUILD)/libtjit.a $(LDLIBS)

$(BUILD)/bench-backward-penalty $(BUILD)/bench-backward-checkpoint $(BUILD)/bench-backward-amp: $(BUILD)/bench-backward-%: benchmarks/backward/%.c \
		benchmarks/backward/timing.h include/tjit.h $(BUILD)/libtjit.a
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude $< -o $@ $(BUILD)/libtjit.a $(LDLIBS)
# ---- end bench-backward ----

# A user's own model (examples/mymodel.c), built the way a user would: public
# header, build/libtjit.a, strict warnings; then run (exit 1 on a mismatch).
example: $(BUILD)/examples/mymodel $(BUILD)/examples/train
	$(BUILD)/examples/mymodel
	$(BUILD)/examples/train

$(BUILD)/examples/%: examples/%.c include/tjit.h $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude $< -o $@ $(BUILD)/libtjit.a $(LDLIBS)

# ---- explain LIB.so: a user's model as a shared object (examples/explain_model.c) ----
# No libtjit linked in: tjit, which loads it, provides the API.
$(BUILD)/examples/explain_model.so: examples/explain_model.c include/tjit.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fPIC -shared -Iinclude $< -o $@
check-tests: $(BUILD)/examples/explain_model.so
# ---- end explain LIB.so ----

docs: $(BUILD)/tjit
	$(BUILD)/tjit ops --markdown --samples tests/golden/opinfo > docs/ops.md

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Regenerates tests/golden/ with PyTorch (Debian's python3-torch); not run by CI.
golden:
	@for f in scripts/golden/[a-z]*.py; do \
	    case $$f in */common.py) continue;; esac; /usr/bin/python3 $$f || exit 1; done

# Fuzzes the text IR parser: clang + libFuzzer with ASan and UBSan, built from
# the ir/ sources alone, seeded with tests/ir/*.tir and a dictionary made from
# ops.def and dtypes.def. Runs FUZZ_TIME seconds; crash inputs go to $(BUILD)/fuzz/.
.PHONY: fuzz
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Wno-unused-parameter -Iinclude \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
IR_SRCS := $(wildcard ir/*.c)

$(BUILD)/fuzz/parse_fuzz: fuzz/parse_fuzz.c $(IR_SRCS) $(wildcard ir/*.h ir/*.def include/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) fuzz/parse_fuzz.c $(IR_SRCS) -o $@ -lm

$(BUILD)/fuzz/tir.dict: ir/ops.def ir/dtypes.def
	@mkdir -p $(dir $@)
	@{ for w in graph return param weak none true false inf -inf nan s0 s1 s0-1 s1+2 '//'; do \
	    echo "\"$$w\""; done; \
	  sed -n 's/^\(UNARY\|BINARY\|OP\)(\([a-z0-9_]*\),.*/"\2"/p' ir/ops.def; \
	  grep -o 'A([a-z_]*' ir/ops.def | sed 's/A(\(.*\)/"\1="/' | sort -u; \
	  sed -n 's/^DTYPE([A-Z0-9]*, *\([a-z0-9]*\),.*/"\1"/p' ir/dtypes.def; } > $@

# The ONNX reader's fuzzer: its sources built with libFuzzer's instrumentation,
# the rest of the library from $(BUILD)/libtjit.a.
ONNX_SRCS := $(wildcard frontend/onnx_*.c)
$(BUILD)/fuzz/onnx_fuzz: fuzz/onnx_fuzz.c $(ONNX_SRCS) $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DTJ_NO_CALLSITE fuzz/onnx_fuzz.c $(ONNX_SRCS) $(BUILD)/libtjit.a -o $@ $(LDLIBS)

.PHONY: fuzz-onnx
fuzz-onnx: $(BUILD)/fuzz/onnx_fuzz
	@mkdir -p $(BUILD)/fuzz/onnx-corpus
	$(BUILD)/fuzz/onnx_fuzz -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
	    -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/onnx-corpus tests/golden/onnx

# A campaign of tests/test_programs.c: PROGRAMS random programs per mode,
# from seed PROGRAMS_SEED (make test runs 40-80 per mode from seed 1).
PROGRAMS ?= 2000
PROGRAMS_SEED ?= 1000
.PHONY: fuzz-programs
fuzz-programs: $(BUILD)/tests/test_programs
	TJ_PROGRAMS=$(PROGRAMS) TJ_PROGRAMS_SEED=$(PROGRAMS_SEED) $(BUILD)/tests/test_programs

fuzz: $(BUILD)/fuzz/parse_fuzz $(BUILD)/fuzz/tir.dict
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/parse_fuzz -max_total_time=$(FUZZ_TIME) -dict=$(BUILD)/fuzz/tir.dict \
	    -max_len=8192 -timeout=10 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ \
	    $(BUILD)/fuzz/corpus tests/ir

# ---- install / uninstall (C library conventions) ---------------------------
# DESTDIR stages the tree (packagers, scripts/test-install.sh); the .pc file
# names PREFIX, the final location. Static users: pkg-config --static.
.PHONY: install uninstall check-install $(BUILD)/tjit.pc
$(BUILD)/tjit.pc: Makefile include/tjit.h
	@mkdir -p $(dir $@)
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(patsubst $(PREFIX)%,$${prefix}%,$(LIBDIR))' \
	    'includedir=$(patsubst $(PREFIX)%,$${prefix}%,$(INCLUDEDIR))' '' \
	    'Name: tjit' 'Description: tracing JIT compiler for tensor programs' \
	    'Version: $(VERSION)' \
	    'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -ltjit' \
	    'Libs.private: $(strip $(LDLIBS))' > $@

install: all $(BUILD)/tjit.pc
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(BUILD)/$(SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SO_REAL) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libtjit.so
	install -m 644 $(BUILD)/libtjit.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/libtjit_rt.so $(DESTDIR)$(LIBDIR)/
	install -m 644 $(BUILD)/libtjit_rt.a $(DESTDIR)$(LIBDIR)/
	$(if $(DIST_LIBS),install -m 644 $(DIST_LIBS) $(DESTDIR)$(LIBDIR)/)
	install -m 644 $(BUILD)/tjit.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(BUILD)/tjit $(DESTDIR)$(BINDIR)/
	install -m 644 README.md LICENSE CHANGELOG.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/docs && install -m 644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(SO_REAL) $(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/libtjit.so \
	    $(DESTDIR)$(LIBDIR)/libtjit.a $(DESTDIR)$(LIBDIR)/pkgconfig/tjit.pc $(DESTDIR)$(BINDIR)/tjit \
	    $(DESTDIR)$(LIBDIR)/libtjit_rt.so $(DESTDIR)$(LIBDIR)/libtjit_rt.a \
	    $(DESTDIR)$(LIBDIR)/libtjit_dist.a $(DESTDIR)$(LIBDIR)/libtjit_dist.so \
	    $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(notdir $(PUBLIC_HEADERS)))
	rm -rf $(DESTDIR)$(DOCDIR)

# Installs into a temporary DESTDIR, checks the exports, builds and runs the
# README's example against that copy alone (run by make test).
check-install: all
	@BUILD=$(BUILD) bash scripts/test-install.sh

# ---- GEMM kernels (runtime/gemm*.c) ------------------------------------------
# GFLOP/s of tjit's own GEMMs (f32, bf16, u8s8) against OpenBLAS's sgemm:
# make gemm-bench GEMM_ARGS="--threads 1 --cpu-time 2048x2048x2048"
# (--peak first: the FMA loop's and the AVX2 f32 micro-kernel's rates per thread)
.PHONY: gemm-bench gemm-compare
$(BUILD)/gemm_bench: tests/gemm_bench.c $(BUILD)/libtjit.a
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude -DTJ_NO_CALLSITE $< -o $@ \
	    $(BUILD)/libtjit.a $(LDLIBS)
gemm-bench: $(BUILD)/gemm_bench
	$(BUILD)/gemm_bench $(GEMM_ARGS)
# tjit's GEMM and conv2d in bf16 and f16 against f32, calls interleaved (issue 18,
# tests/gemm_half.c): make gemm-half GEMM_ARGS="1 11" (threads, calls)
.PHONY: gemm-half
$(BUILD)/gemm_half: tests/gemm_half.c $(BUILD)/libtjit.a
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude -DTJ_NO_CALLSITE $< -o $@ \
	    $(BUILD)/libtjit.a $(LDLIBS)
gemm-half: $(BUILD)/gemm_half
	$(BUILD)/gemm_half $(GEMM_ARGS)
# tjit's GEMMs, then PyTorch's f32, bf16 and int8-dynamic rates on the same shapes
gemm-compare: $(BUILD)/gemm_bench
	$(BUILD)/gemm_bench $(GEMM_ARGS)
	/usr/bin/python3 benchmarks/pytorch/gemm.py $(GEMM_ARGS)
