# Makefile - the one build of tjit.
#
#   make              build/libtjit.a, build/libtjit.so, build/tjit
#   make test         install deps if missing, build, run every cmocka suite
#   make asan         the same suites under -fsanitize=address,undefined
#   make bench        install deps if missing, build, run the benchmark suite
#   make docs         regenerate docs/ops.md from ir/ops.def
#   make deps         scripts/install-deps.sh
#
# Variables: LLVM_CONFIG (default: llvm-config-19 or /usr/lib/llvm-19/bin/llvm-config),
# BUILD (output dir), CC, EXTRA_CFLAGS, EXTRA_LDFLAGS.

LLVM_CONFIG ?= $(firstword $(wildcard /usr/bin/llvm-config-19 /usr/lib/llvm-19/bin/llvm-config) llvm-config-19)
BUILD ?= build
CC ?= gcc

LLVM_CFLAGS := $(shell $(LLVM_CONFIG) --cflags 2>/dev/null | sed 's/-std=[^ ]*//')
LLVM_LDFLAGS := $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) \
                $(shell $(LLVM_CONFIG) --libs 2>/dev/null) \
                -Wl,-rpath,$(shell $(LLVM_CONFIG) --libdir 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wshadow=local \
        -Wno-unused-parameter
OPT ?= -O3 -g
# -fno-math-errno lets sqrt and rounding vectorize; no -ffast-math: NaN and Inf
# semantics are kept. Kernels with target_clones get AVX-512 with 512-bit vectors.
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -fno-math-errno \
              -mprefer-vector-width=512 -pthread -Iinclude $(EXTRA_CFLAGS)
LDLIBS := $(LLVM_LDFLAGS) -lm -ldl -pthread $(EXTRA_LDFLAGS)

LIB_DIRS := ir runtime passes codegen frontend
LIB_SRCS := $(filter-out frontend/tool%.c, $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
TOOL_SRCS := $(wildcard frontend/tool*.c)
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_UTIL := $(wildcard tests/util*.c)
BENCH_SRCS := $(wildcard benchmarks/*.c)

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o) $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL_OBJS := $(TEST_UTIL:%.c=$(BUILD)/obj/%.o)

.PHONY: all test asan bench bench-compare docs deps clean check-tests golden
all: $(BUILD)/libtjit.a $(BUILD)/libtjit.so $(BUILD)/tjit

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(if $(filter codegen/%,$<),$(LLVM_CFLAGS)) -MMD -MP -c $< -o $@

$(BUILD)/libtjit.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libtjit.so: $(LIB_OBJS)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/tjit: $(TOOL_OBJS) $(BUILD)/libtjit.a
	$(CC) -o $@ $(TOOL_OBJS) $(BUILD)/libtjit.a $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_UTIL_OBJS) $(BUILD)/libtjit.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TEST_UTIL_OBJS) $(BUILD)/libtjit.a $(LDLIBS) -lcmocka

deps:
	@bash scripts/install-deps.sh

# The README's test command: set up, build, run every suite, one summary line.
test: deps
	@$(MAKE) --no-print-directory check-tests

check-tests: all $(TEST_BINS)
	@bash scripts/run-tests.sh $(TEST_BINS)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined" check-tests

bench: deps all
	$(BUILD)/tjit bench

docs: $(BUILD)/tjit
	$(BUILD)/tjit ops --markdown > docs/ops.md

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Regenerates tests/golden/ with PyTorch (Debian's python3-torch); not run by CI.
golden:
	@for f in scripts/golden/[a-z]*.py; do \
	    case $$f in */common.py) continue;; esac; /usr/bin/python3 $$f || exit 1; done
