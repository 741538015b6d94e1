# VRAM Planner: the two commands of the README are `make serve` and `make test`.
# Both install what is missing (Debian packages, npm ci), build incrementally
# and are safe to run again.

SHELL := /bin/bash
BUILD ?= build
WASM_BUILD ?= build-wasm
# ASan + UBSan build of every native target and the libFuzzer targets (clang-14).
ASAN_BUILD ?= build-asan
# `make fuzz`: seconds in total, shared by the targets (tests/fuzz).
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
PORT ?= 8000
# Debian's emscripten needs its node modules (acorn) on NODE_PATH.
export NODE_PATH := /usr/share/nodejs
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

DEB_PACKAGES := cmake g++ make nlohmann-json3-dev libgtest-dev googletest libbenchmark-dev \
  emscripten node-acorn nodejs chromium clang-format clang-14 libclang-rt-14-dev \
  libyaml-cpp-dev pybind11-dev python3-dev python3-pytest python3-venv python3-setuptools python3-wheel \
  python3-torch ccache

CXX_SOURCES = $(shell git ls-files --cached --others --exclude-standard '*.cpp' '*.h' 2>/dev/null | grep -v '^site/')

.PHONY: all deps native wasm site space serve test test-native test-site test-e2e format format-check \
  validate validate-check corpus fields fields-check check-native check-web bench clean \
  sanitize test-sanitize fuzz fuzz-seeds check-sanitize

all: native site

# ---- dependencies -------------------------------------------------------------
deps: .deps/debian site/node_modules/.package-lock.json

.deps/debian:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@# npm ships with some Node installs and as a Debian package with others.
	@command -v npm >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq npm; }
	@mkdir -p .deps && touch $@

site/node_modules/.package-lock.json: site/package-lock.json site/package.json
	cd site && npm ci --no-audit --no-fund
	@touch $@

# ---- builds -------------------------------------------------------------------
$(BUILD)/CMakeCache.txt: | .deps/debian
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

native: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

$(WASM_BUILD)/CMakeCache.txt: | .deps/debian
	emcmake cmake -S . -B $(WASM_BUILD) -DCMAKE_BUILD_TYPE=Release

# Writes site/src/wasm/{vram_core,vram_plan,vram_io}.{mjs,wasm}, vram.js and vram.d.ts.
wasm: $(WASM_BUILD)/CMakeCache.txt
	cmake --build $(WASM_BUILD) -j$(JOBS)

site: wasm deps
	cd site && npm run build

# The Hugging Face Space's files: the same build plus the Space README
# (site/space/README.md), checked for absolute URLs and missing assets
# (site/scripts/space.mjs); .github/workflows/space.yml uploads $(BUILD)/space.
space: site
	cd site && node scripts/space.mjs dist ../$(BUILD)/space

serve: native site
	@echo "VRAM Planner on http://localhost:$(PORT)"
	cd site && npx vite preview --port $(PORT) --strictPort --host 127.0.0.1

# ---- tests --------------------------------------------------------------------
# `make test` is the three CI jobs in a row: .github/workflows/native.yml runs
# `make check-native`, web.yml `make check-web`, sanitize.yml `make
# check-sanitize` (about 6 to 7 min more with a warm ccache; README "Testing").
# The sequence is written here only.
test: check-native check-web check-sanitize
	@echo "all tests passed"

check-native: format-check test-native validate-check fields-check

check-web: test-site test-e2e space

# .github/workflows/sanitize.yml: the suite under ASan + UBSan, then a short fuzz run.
check-sanitize: test-sanitize fuzz

test-native: native
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# Vitest: page components and WASM parity/facade tests against the real module
# and the native vram-probe.
test-site: native wasm deps
	cd site && npx vitest run

test-e2e: native site
	cd site && npm run test:e2e

# ---- sanitizers and fuzzing (README "Fuzzing and sanitizers") ------------------
$(ASAN_BUILD)/CMakeCache.txt: | .deps/debian
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DVRAM_SANITIZE=ON -DVRAM_BUILD_FUZZ=ON -DVRAM_BUILD_BENCHMARKS=OFF -DVRAM_BUILD_PYTHON=OFF

sanitize: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# The whole ctest suite, ASan + UBSan instrumented; the first report fails it.
test-sanitize: sanitize
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS)

# The import seeds read YAML with the page's npm `yaml` package.
fuzz-seeds: $(ASAN_BUILD)/CMakeCache.txt site/node_modules/.package-lock.json
	node tests/fuzz/seeds.mjs $(ASAN_BUILD)/fuzz

# Every target of $(ASAN_BUILD)/fuzz/targets.txt for FUZZ_SECONDS / (number of
# targets) seconds, from its seeds and the corpus kept in $(ASAN_BUILD)/fuzz/corpus.
# A crash leaves its input in $(ASAN_BUILD)/fuzz/crashes/ and fails the target.
fuzz: sanitize fuzz-seeds
	@targets=$$(cat $(ASAN_BUILD)/fuzz/targets.txt); n=$$(echo $$targets | wc -w); \
	seconds=$$(( $(FUZZ_SECONDS) / n )); [ $$seconds -ge 1 ] || seconds=1; \
	mkdir -p $(ASAN_BUILD)/fuzz/crashes; \
	for t in $$targets; do \
	  mkdir -p $(ASAN_BUILD)/fuzz/corpus/$$t; \
	  echo "fuzz_$$t: $$seconds s"; \
	  $(ASAN_BUILD)/bin/fuzz_$$t -max_total_time=$$seconds -timeout=60 -rss_limit_mb=2048 -max_len=65536 \
	    -print_final_stats=1 -dict=$(ASAN_BUILD)/fuzz/vram.dict \
	    -artifact_prefix=$(ASAN_BUILD)/fuzz/crashes/$$t- \
	    $(ASAN_BUILD)/fuzz/corpus/$$t $(ASAN_BUILD)/fuzz/seeds/$$t 2>$(ASAN_BUILD)/fuzz/$$t.log \
	    || { tail -n 60 $(ASAN_BUILD)/fuzz/$$t.log; exit 1; }; \
	  grep -E "^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|cov:" $(ASAN_BUILD)/fuzz/$$t.log | tail -n 2; \
	done

# ---- validation against published measurements ---------------------------------
validate: native
	$(BUILD)/bin/vram_validate tests/fixtures/measured.json tests/fixtures/validation/requests.json \
	  tests/fixtures docs/validation.md
	$(BUILD)/bin/vram_validate_speed tests/fixtures/throughput.json tests/fixtures docs/throughput.md

# The committed table must match what the estimator gives now.
validate-check: native
	@tmp=$$(mktemp); $(BUILD)/bin/vram_validate tests/fixtures/measured.json \
	  tests/fixtures/validation/requests.json tests/fixtures $$tmp >/dev/null && \
	  diff -u docs/validation.md $$tmp && rm -f $$tmp && echo "docs/validation.md is current"
	@tmp=$$(mktemp); $(BUILD)/bin/vram_validate_speed tests/fixtures/throughput.json tests/fixtures $$tmp >/dev/null && \
	  diff -u docs/throughput.md $$tmp && rm -f $$tmp && echo "docs/throughput.md is current"

# ---- the request corpus whose answers a speed-only change keeps (tests/corpus) ---
# Rewrites the digests Corpus.EveryAnswerMatchesItsDigest checks: only after a
# change meant to move estimates (say so, with the validation before/after).
corpus: native
	$(BUILD)/bin/vram_corpus digests tests/fixtures/corpus/digests.json

# ---- the request fields the page reads (site/src/lib/fields.js) -----------------
fields: native
	$(BUILD)/bin/vram-probe fields --json > site/src/lib/fields.json

# The committed table must be the core's table now.
fields-check: native
	@tmp=$$(mktemp); $(BUILD)/bin/vram-probe fields --json > $$tmp && \
	  diff -u site/src/lib/fields.json $$tmp && rm -f $$tmp && echo "site/src/lib/fields.json is current"

bench: native wasm
	$(BUILD)/bin/vram_bench
	node wasm/bench/bench.mjs

# ---- formatting ---------------------------------------------------------------
format: deps
	clang-format -i $(CXX_SOURCES)
	cd site && npm run format

# An empty list would pass vacuously (git ls-files fails in a checkout git does
# not trust, e.g. a CI container's): refuse it.
format-check: deps
	@[ -n "$(strip $(CXX_SOURCES))" ] || { echo "format-check: git ls-files found no C++ sources" >&2; exit 1; }
	clang-format --dry-run --Werror $(CXX_SOURCES)
	cd site && npm run format:check

clean:
	rm -rf $(BUILD) $(WASM_BUILD) $(ASAN_BUILD) site/dist site/src/wasm .deps
