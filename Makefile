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

.PHONY: all deps build install test test-c test-fuzz fuzz test-python test-s3 test-interop \
        test-cdf-oracle test-spark test-tsan test-packaging demo bench clean

all: build

deps:
	@scripts/bootstrap.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

# The Spark connector suite runs on the plain build only. Under SANITIZE=1 libdk.a is
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

# ThreadSanitizer over the C unit tests (the executor's threads: commit parsing, checkpoint
# decoding, stats read-ahead), in build-tsan/. setarch -R: TSan needs the classic address
# layout on kernels with high-entropy mmap randomisation.
test-tsan: deps
	@cmake -S . -B build-tsan -G Ninja -DDK_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@ninja -C build-tsan -j $(JOBS) dk_unit
	TSAN_OPTIONS=halt_on_error=1 setarch -R build-tsan/dk_unit

# ctest (CMakeLists.txt): label unit = dk_unit, tools/check_symbols.sh, the header
# self-containment test; label fuzz = the replay of every committed fuzz corpus.
test-c:
	@ctest --test-dir $(BUILD) -L unit --output-on-failure

test-fuzz:
	@ctest --test-dir $(BUILD) -L fuzz --output-on-failure

# The fuzz campaign (README "Fuzzing"; on demand, not part of make test): libFuzzer targets built
# with clang in build-fuzz/ (libdk instrumented too), each run FUZZ_SECONDS from its committed
# corpus, new inputs merged back minimized; crashes land in fuzz/artifacts/.
FUZZ_SECONDS ?= 3600
FUZZ_TARGETS ?= split dv checkpoint sql
fuzz: deps
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DDK_BUILD_FUZZERS=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	  >/dev/null
	@ninja -C build-fuzz -j $(JOBS) $(FUZZ_TARGETS:%=%_fuzzer)
	@scripts/fuzz_campaign.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Installs libdk (libdk.so.N, libdk.a), the headers, dk.pc, the CMake package, the dk CLI and
# its man page under PREFIX (default /usr/local).
# (After `make build`, or any CMake configure of $(BUILD).)
PREFIX ?= /usr/local
install:
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)
	@cmake --install $(BUILD) --prefix $(PREFIX)

# The binding is built against this build's libdk.a (python/CMakeLists.txt, DK_BUILD_DIR: the
# CMake package of the build tree, sanitizer flags included), incrementally in $(BUILD)/python.
# The distribution was named "dk" before it became dk-delta: a venv holding that one drops it.
# pytest exits 5 when it collects nothing; that is not a failure while a suite is empty.
test-python:
	@$(PY) -m pip show -q dk >/dev/null 2>&1 && $(PY) -m pip uninstall -q -y dk || true
	@$(PY) -m pip install -q --no-build-isolation -C cmake.define.DK_BUILD_DIR=$(abspath $(BUILD)) \
	  -C build-dir=$(abspath $(BUILD))/python ./python
	@DK_BUILD=$(BUILD) $(PY) -m pytest -q tests/python; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no Python tests collected"; rc=0; fi; exit $$rc

# The S3 backend and every engine over it against a real S3 server (SeaweedFS from
# scripts/s3_server.sh, built once per machine into ~/.cache/dk/tools; one server per pytest
# session): also part of test-python; this runs it alone. DK_S3_FULL=1 runs every corpus case
# through dk scan and dk sql too (by default a third of them).
test-s3: build
	DK_BUILD=$(BUILD) $(PY) -m pytest -q tests/python/test_s3_storage.py tests/python/test_s3_faults.py \
	  tests/python/test_s3_tables.py tests/python/test_s3_scan.py tests/python/test_s3_write.py \
	  tests/python/test_py_s3.py tests/python/test_py_s3_txn.py

# Spark + delta-rs interop oracle (tests/interop/README.md): installs pyspark/delta-spark, writes
# the tables once into $(DK_INTEROP_DIR) (default build/interop), checks the oracle's consistency
# and dk against Spark at every version. .ci/run runs it once, on the release build.
test-interop: build
	scripts/install_spark.sh
	scripts/interop_tables.sh
	DK_BUILD=$(BUILD) $(PY) -m pytest -q -m interop tests/interop

# Change-data-feed / streaming-source oracle (issue #19, tests/interop/cdf_oracle.py): tables
# with delta.enableChangeDataFeed written by Spark (and delta-rs), Spark's table_changes for a
# sample of ranges (DK_CDF_ALL_RANGES=1: every range) and its streaming source batch by
# batch, built once into build/interop_cdf (scripts/cdf_tables.sh, cached by content); then
# the oracle's self-checks, delta-rs / polars-deltalake against it and dk's change data feed
# and streams against it (tests/interop/test_cdf_dk.py: every range, every stream batch by
# batch, resumes from every offset). test-interop runs these checks only once the oracle is
# built (they skip otherwise); CI runs this target (.ci/run), building the oracle once and
# reusing it while its generator is unchanged.
test-cdf-oracle: build
	scripts/install_spark.sh
	scripts/cdf_tables.sh
	@$(PY) -m pip install -q --no-build-isolation -C cmake.define.DK_BUILD_DIR=$(abspath $(BUILD)) \
	  -C build-dir=$(abspath $(BUILD))/python ./python
	DK_CDF_ORACLE=1 DK_BUILD=$(BUILD) $(PY) -m pytest -q -m interop tests/interop/test_cdf_oracle.py \
	  tests/interop/test_cdf_dk.py

# Spark connector (connectors/spark): libdk.a, the jar (Maven, dependencies from Maven
# Central into ~/.m2 on first use), pyspark/delta-spark (scripts/install_spark.sh), the interop
# tables (built once per content into $(DK_INTEROP_DIR), shared with test-interop), then the
# pyspark suite comparing format("dk") with delta-spark in one SparkSession.
# The Spark connector suite (tests/spark): one local[2] SparkSession with delta-spark beside the
# connector. `make test` runs the big matrices sampled; the full runs are on demand:
#   DK_DML_CASES=all        every DML case (test_spark_dml.py: 24 instead of 8, and the Spark SQL
#                           DELETE / UPDATE variants on all of them)
#   DK_SPARK_WRITE_FULL=1   delta-spark reads every version of every write test (else the latest)
#   DK_SPARK_STREAM_ALL=1   every streaming / CDF comparison with delta-spark (else a sample)
# delta-spark's side of the DML cases is built once per machine and reused by later runs and
# clean clones (~/.cache/dk/dml_oracle/<fingerprint of its inputs>; DK_DML_ORACLE_DIR to move
# it); the interop tables are cached by content in build/interop (scripts/interop_tables.sh).
test-spark: build
	@scripts/install_spark.sh
	@cd connectors/spark && mvn -q -B package -Ddk.build=$(abspath $(BUILD))
	@scripts/interop_tables.sh >/dev/null
	@$(PY) -m pytest -q tests/spark

# Packaging from a clean clone of the committed tree: the Python wheel (tests/packaging/
# check_wheel.sh) and the C install (check_install.sh: make install, then a tiny program built
# against dk.pc and one against find_package(dk)).
test-packaging: build
	@tests/packaging/check_install.sh
	@tests/packaging/check_wheel.sh

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	$(PY) bench/run.py

clean:
	rm -rf build build-asan
