# zerofleet: the two set-up commands of the README.
#   make demo   installs what is missing, builds, and runs the main job
#   make test   the same, then every test (ctest minus `gpu`, the thread-safety analysis, the
#               LibTorch-free unit tests under ASan+UBSan, and every fuzz target for a few seconds;
#               one sanitizer build, clang-14's, serves both of the last two)
#   make fuzz   every libFuzzer target for FUZZ_SECONDS each (default 300)
#   make images the container images, compiled inside them (scripts/images; needs dockerd)
BUILD ?= build
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 300
TEST_FUZZ_SECONDS ?= 5
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
# ccache hits across checkouts (CI builds a fresh clone): paths relative to the repository,
# and the build directory left out of the hash even though we build with -g.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all bootstrap configure build demo test test-ctest test-thread-safety test-asan \
        build-sanitize build-fuzz fuzz test-fuzz images clean

all: build

bootstrap:
	@scripts/bootstrap

configure: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null

# Quiet unless it fails (one progress line on a terminal; BUILD/build.log has it all;
# VERBOSE=1 prints everything).
build: configure
	@scripts/quiet-build $(BUILD) $(JOBS)

demo: build
	@scripts/demo $(BUILD)/cli/zf

test: build
	@$(MAKE) --no-print-directory test-ctest test-thread-safety test-asan test-fuzz

test-ctest:
	@ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j$(JOBS)

test-thread-safety:
	@scripts/check-thread-safety $(BUILD)

# One build for the sanitizers: clang-14, ASan+UBSan, every library with libFuzzer's coverage
# instrumentation; the LibTorch-free libraries, their unit tests and the fuzz targets. (Two
# builds, gcc's for the tests and clang's for the fuzzers, compiled the same libraries twice.)
build-sanitize: bootstrap
	@cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
	  -DCMAKE_CXX_COMPILER=clang++-14 -DZF_FUZZ=ON -DZF_SANITIZE=address,undefined \
	  -DZF_WITH_TORCH=OFF -DZF_BUILD_TOOLS=OFF -DZF_WERROR=OFF >/dev/null
	@scripts/quiet-build $(BUILD_FUZZ) $(JOBS)

build-fuzz: build-sanitize

test-asan: build-sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_FUZZ) -L unit --output-on-failure -j$(JOBS)

fuzz: build-sanitize
	@scripts/fuzz $(BUILD_FUZZ) $(FUZZ_SECONDS)

test-fuzz: build-sanitize
	@scripts/fuzz $(BUILD_FUZZ) $(TEST_FUZZ_SECONDS)

images: bootstrap
	@scripts/images

clean:
	rm -rf $(BUILD) $(BUILD_FUZZ)
