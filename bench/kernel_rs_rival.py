"""The delta-kernel-rs rival of P1 (bench/snapshot_load.py) and P2/P3 (bench/scan_p2p3.py).

Two ways in, both on the `delta_kernel` crate:
  delta-kernel-rs    bench/kernel_rs/ (src/main.rs): delta_kernel 0.30.1 with its default engine
                     (delta_kernel_default_engine: Arrow, Tokio, object_store), built here with
                     `cargo build --release --locked` from crates.io into
                     bench/cache/kernel_rs-target the first time (several minutes on 2 cores),
                     rebuilt when Cargo.toml, Cargo.lock or main.rs change. "pending" without
                     cargo (rustup's toolchain, or Debian's cargo >= 1.88).
  polars-deltalake   the pinned PyPI package of requirements-dev.txt (delta_kernel 0.30 under a
                     polars engine): scan_delta(...).collect(); P2/P3 only, as it has no file
                     listing of its own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
CRATE = BENCH_DIR / "kernel_rs"
TARGET = BENCH_DIR / "cache" / "kernel_rs-target"
EXE = TARGET / "release" / "bench_kernel_rs"


def _cargo() -> str | None:
    c = shutil.which("cargo")
    if c:
        return c
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "cargo"
    return str(home) if home.exists() else None


def _fingerprint() -> str:
    h = hashlib.sha256()
    for p in (CRATE / "Cargo.toml", CRATE / "Cargo.lock", CRATE / "src" / "main.rs"):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def ensure_kernel_rs() -> tuple[Path | None, str]:
    """The bench_kernel_rs binary, built when missing or stale; (None, why) when it cannot be."""
    stamp = TARGET / ".fingerprint"
    fp = _fingerprint()
    if EXE.exists() and stamp.exists() and stamp.read_text() == fp:
        return EXE, ""
    cargo = _cargo()
    if not cargo:
        return None, "cargo not found (delta-kernel-rs is built from crates.io with cargo)"
    print(f"   building the delta-kernel-rs rival (bench/kernel_rs, cargo --release) into "
          f"{TARGET} ...", flush=True)
    TARGET.mkdir(parents=True, exist_ok=True)
    jobs = os.environ.get("DK_BENCH_CARGO_JOBS", str(os.cpu_count() or 2))
    p = subprocess.run([cargo, "build", "--release", "--locked", "-j", jobs,
                        "--target-dir", str(TARGET)], cwd=CRATE, capture_output=True, text=True)
    if p.returncode != 0 or not EXE.exists():
        return None, "building bench/kernel_rs failed: " + p.stderr.strip()[-400:]
    stamp.write_text(fp)
    return EXE, ""


def have_polars_deltalake() -> tuple[bool, str]:
    import importlib.util
    if importlib.util.find_spec("polars_deltalake") is None:
        return False, "polars-deltalake not installed (requirements-dev.txt)"
    return True, ""
