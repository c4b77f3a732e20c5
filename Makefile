# zerofleet: the two set-up commands of the README.
#   make demo   installs what is missing, builds, and runs the main job
#   make test   the same, then every test (ctest minus `gpu`, the thread-safety analysis, and
#               the LibTorch-free unit tests under ASan+UBSan)
BUILD ?= build
BUILD_ASAN ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
# ccache hits across checkouts (CI builds a fresh clone): paths relative to the repository,
# and the build directory left out of the hash even though we build with -g.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all bootstrap configure build demo test test-ctest test-thread-safety test-asan clean

all: build

bootstrap:
	@scripts/bootstrap

configure: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	@scripts/demo $(BUILD)/cli/zf

test: build
	@$(MAKE) --no-print-directory test-ctest test-thread-safety test-asan

test-ctest:
	@ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j$(JOBS)

test-thread-safety:
	@scripts/check-thread-safety $(BUILD)

test-asan:
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DZF_SANITIZE=address,undefined \
	  -DZF_BUILD_TOOLS=OFF -DZF_WITH_TORCH=OFF >/dev/null
	@cmake --build $(BUILD_ASAN) -j$(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_ASAN) -L unit --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
