# dk — top-level entry points. The two set-up commands of README are `make demo` and
# `make test`. `make test SANITIZE=1` builds and tests under ASan+UBSan in build-asan/.
SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build-asan
CMAKE_FLAGS += -DDK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
else
BUILD ?= build
endif
JOBS ?= $(shell nproc)
PY := .venv/bin/python

.PHONY: all deps build test test-c test-fuzz test-python test-interop test-spark test-tsan demo bench clean

all: build

deps:
	@scripts/bootstrap.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

# The Spark connector suite runs on the plain build only. Under SANITIZE=1 libdk_static.a is
# compiled with -fsanitize=address,undefined, so libdk_jni.so would need the ASan runtime inside a
# JVM that was not started with it (ASan must be loaded first: LD_PRELOAD into java), and the
# JVM's own tricks (SIGSEGV-based safepoints and null checks, huge reserved heaps, threads
# that never exit) make ASan abort or flood its report. The native code under it is libdk,
# which test-c, test-fuzz and test-python already check under ASan+UBSan; the JNI glue's
# memory is checked by tests/spark through its counting allocator (DkDebug).
test: build
	@$(MAKE) --no-print-directory test-c test-fuzz test-python BUILD=$(BUILD) SANITIZE=$(SANITIZE)
ifneq ($(SANITIZE),1)
	@$(MAKE) --no-print-directory test-spark BUILD=$(BUILD)
endif

# ThreadSanitizer over the C unit tests (log replay's helper threads: commit parsing, checkpoint
# decoding, stats read-ahead), in build-tsan/. setarch -R: TSan needs the classic address
# layout on kernels with high-entropy mmap randomisation.
test-tsan: deps
	@cmake -S . -B build-tsan -G Ninja -DDK_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@ninja -C build-tsan -j $(JOBS) dk_unit
	TSAN_OPTIONS=halt_on_error=1 setarch -R build-tsan/dk_unit

test-c:
	$(BUILD)/dk_unit
	tools/check_symbols.sh $(BUILD)/libdk.so
	tools/check_layers.sh
	tools/check_io.sh

test-fuzz:
	@for r in $(BUILD)/*_fuzzer_replay; do \
	  [ -x "$$r" ] || continue; n=$$(basename $$r _fuzzer_replay); \
	  echo "replay $$n"; $$r fuzz/corpora/$$n || exit 1; done

# pytest exits 5 when it collects nothing; that is not a failure while a suite is empty.
test-python:
	@DK_BUILD=$(BUILD) $(PY) -m pip install -q ./python
	@DK_BUILD=$(BUILD) $(PY) -m pytest -q tests/python; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no Python tests collected"; rc=0; fi; exit $$rc

# Spark + delta-rs interop oracle (tests/interop/README.md): installs pyspark/delta-spark, writes
# the tables once into $(DK_INTEROP_DIR) (default build/interop), checks the oracle's consistency
# and dk against Spark at every version. .ci/run runs it once, on the release build.
test-interop: build
	scripts/install_spark.sh
	scripts/interop_tables.sh
	DK_BUILD=$(BUILD) $(PY) -m pytest -q -m interop tests/interop

# Spark connector (connectors/spark): libdk_static.a, the jar (Maven, dependencies from Maven
# Central into ~/.m2 on first use), pyspark/delta-spark (scripts/install_spark.sh), the interop
# tables (built once per content into $(DK_INTEROP_DIR), shared with test-interop), then the
# pyspark suite comparing format("dk") with delta-spark in one SparkSession.
test-spark: build
	@scripts/install_spark.sh
	@cd connectors/spark && mvn -q -B package -Ddk.build=$(abspath $(BUILD))
	@scripts/interop_tables.sh >/dev/null
	@$(PY) -m pytest -q tests/spark

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	$(PY) bench/run.py

clean:
	rm -rf build build-asan
