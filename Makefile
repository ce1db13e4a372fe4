# SPDX-License-Identifier: BSD-3-Clause
# A thin front for CMake: the two commands (make demo, make test) and a few
# conveniences. The build itself is CMakeLists.txt.
# Only deps, demo and test install system packages (scripts/deps.sh, as
# root, Debian); build, install and the others use what is there: run
# `make deps` first for the sanitizer, fuzz and bench targets.
BUILD      ?= build
GENERATOR  ?= Ninja
CMAKE_ARGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# ON: a component whose packages are missing fails the configure instead of
# being skipped (docs/BUILDING.md). make test sets it.
REQUIRE_ALL ?= OFF

.PHONY: all deps build demo test test-fast test-asan test-tsan test-fuzz bench bench-redis install deb clean

all: build

deps:
	@scripts/deps.sh

build:
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DBG_WERROR=ON -DBG_BUILD_BENCH=ON \
	  -DBG_REQUIRE_ALL=$(REQUIRE_ALL) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# The cache-penetration demo: the products service over SQLite with 10^6
# products under load, without and with the filter (examples/products/demo.sh;
# DEMO_ARGS="--db postgres", "--cache redis", "--scenario seen", ...).
demo: deps
	$(MAKE) --no-print-directory build
	examples/products/demo.sh $(BUILD) $(DEMO_ARGS)

# Every suite through ctest, then the unit, CLI, remote-client, guard, store and
# products-service tests again under ASan+UBSan,
# the concurrency tests under TSan, and the parsers of untrusted bytes under libFuzzer, each
# in its own build tree. Every component is built (REQUIRE_ALL=ON).
test: deps
	$(MAKE) --no-print-directory build REQUIRE_ALL=ON
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan test-tsan test-fuzz REQUIRE_ALL=ON

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE long

test-asan:
	cmake -S . -B $(BUILD)-asan -G "$(GENERATOR)" -DBG_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DBG_SANITIZE=address,undefined -DBG_BUILD_REDIS=OFF -DBG_BUILD_BENCH=OFF \
	  -DBG_REQUIRE_ALL=$(REQUIRE_ALL) \
	  -DBG_TEST_MODULE=$(if $(wildcard $(BUILD)/src/redis_module/bloomgate.so),$(abspath $(BUILD)/src/redis_module/bloomgate.so))
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) \
	  -L "unit|cli|remote|guard|store|products" -LE demo

test-tsan:
	cmake -S . -B $(BUILD)-tsan -G "$(GENERATOR)" -DBG_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DBG_SANITIZE=thread -DBG_BUILD_EXAMPLES=OFF -DBG_BUILD_REDIS=OFF -DBG_BUILD_BENCH=OFF \
	  -DBG_REQUIRE_ALL=$(REQUIRE_ALL)
	cmake --build $(BUILD)-tsan -j $(JOBS)
	ctest --test-dir $(BUILD)-tsan --output-on-failure -L concurrency

# The parsers of untrusted bytes under libFuzzer (clang, ASan+UBSan): filter
# files, BF.LOADCHUNK chunks, the products service's requests, the CLI's
# URLs and the remote client's server replies (tests/fuzz/): every seed
# once, then FUZZ_SECONDS (default 60) of fuzzing
# each; a crash leaves its input in
# $(BUILD)-fuzz/fuzz-artifacts/.
test-fuzz:
	cmake -S . -B $(BUILD)-fuzz -G "$(GENERATOR)" -DCMAKE_C_COMPILER=clang -DBG_WERROR=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBG_FUZZ=ON -DBG_SANITIZE=address,undefined \
	  -DBG_BUILD_TESTS=OFF -DBG_BUILD_CLI=OFF -DBG_BUILD_EXAMPLES=OFF -DBG_BUILD_REDIS=OFF \
	  -DBG_BUILD_BENCH=OFF -DBG_REQUIRE_ALL=$(REQUIRE_ALL) -DBG_FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60)
	cmake --build $(BUILD)-fuzz -j $(JOBS)
	ctest --test-dir $(BUILD)-fuzz --output-on-failure --no-tests=error -L fuzz

bench:
	cmake -S . -B $(BUILD)-bench -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release -DBG_BUILD_BENCH=ON \
	  -DBG_BUILD_TESTS=OFF -DBG_BUILD_EXAMPLES=OFF
	cmake --build $(BUILD)-bench -j $(JOBS)
	@test -x $(BUILD)-bench/bench/bloomgate-bench || \
	  { echo "bench: the benchmark was not built: it needs libbloom-dev (make deps)" >&2; exit 1; }
	$(BUILD)-bench/bench/bloomgate-bench $(BENCH_ARGS)

# The Redis module's server time per call and per item against GETBIT and
# RedisBloom's figures, and its memory (bench/redis_bench.py; a quiet
# machine, under 10 minutes; BENCH_ARGS=--quick for a smoke run).
bench-redis:
	/usr/bin/python3 bench/redis_bench.py $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# The Debian packages (debian/): libbloomgate3, libbloomgate-dev, bloomgate,
# bloomgate-redis-module and bloomgate-doc, built by dpkg-buildpackage in a
# copy of the source tree (the files git knows, committed or not) under
# DEB_DIR, where the .debs land. Needs debian/control's Build-Depends and the module's
# redismodule.h (make deps, or REDISMODULE_H=PATH).
DEB_DIR       ?= $(BUILD)-deb
REDISMODULE_H ?= .deps/redis/redismodule.h
deb:
	@test -f "$(REDISMODULE_H)" || \
	  { echo "deb: $(REDISMODULE_H) not found: run make deps, or give REDISMODULE_H=PATH" >&2; exit 1; }
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/bloomgate/.deps/redis
	{ git ls-files -z --cached --others --exclude-standard 2>/dev/null || \
	  find . \( -path './build*' -o -path ./.deps -o -path ./.git \) -prune -o -type f -print0; } | \
	  tar --null -T - --ignore-failed-read -cf - | tar -xf - -C $(DEB_DIR)/bloomgate
	cp "$(REDISMODULE_H)" $(DEB_DIR)/bloomgate/.deps/redis/redismodule.h
	cd $(DEB_DIR)/bloomgate && dpkg-buildpackage -b -us -uc -j$(JOBS)
	@echo "deb: the packages are in $(abspath $(DEB_DIR)):" && ls -1 $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-bench $(BUILD)-fuzz $(BUILD)-deb
