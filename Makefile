# A thin front for CMake: the two commands (make demo, make test) and a few
# conveniences. The build itself is CMakeLists.txt.
BUILD      ?= build
GENERATOR  ?= Ninja
CMAKE_ARGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo test test-fast test-asan test-tsan bench install clean

all: build

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DBG_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# The library's self-demo (the cache-penetration service demo comes later).
demo: build
	$(BUILD)/examples/bloomgate-demo

# Every suite through ctest, then the unit tests again under ASan+UBSan and
# the concurrency tests under TSan, each in its own build tree.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan test-tsan

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE long

test-asan: deps
	cmake -S . -B $(BUILD)-asan -G "$(GENERATOR)" -DBG_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DBG_SANITIZE=address,undefined -DBG_BUILD_EXAMPLES=OFF
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -L unit

test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -G "$(GENERATOR)" -DBG_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DBG_SANITIZE=thread -DBG_BUILD_EXAMPLES=OFF
	cmake --build $(BUILD)-tsan -j $(JOBS)
	ctest --test-dir $(BUILD)-tsan --output-on-failure -L concurrency

bench: deps
	cmake -S . -B $(BUILD)-bench -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release -DBG_BUILD_BENCH=ON \
	  -DBG_BUILD_TESTS=OFF -DBG_BUILD_EXAMPLES=OFF
	cmake --build $(BUILD)-bench -j $(JOBS)
	$(BUILD)-bench/bench/bloomgate-bench $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-bench
