"""bench/scan_p2p3.py: the ratio matrix and target lines of its summary (exact arithmetic on
synthetic results), and its registration with bench/run.py. The benchmark itself never runs
in tests (its input is 6M rows)."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import run as bench_run  # noqa: E402
import scan_p2p3  # noqa: E402


def _res(system, variant, threads, median, cpu):
    r = bench_run.Result(system, variant, threads, "ok")
    r.median_s, r.cpu_median_s = median, cpu
    return r


def test_summary_ratios_and_targets():
    results = [
        _res("dk", "P2 full", 1, 2.0, 1.0),
        _res("duckdb", "P2 full", 1, 3.0, 1.5),
        _res("delta-rs", "P2 full", 1, 3.0, 4.0),
        _res("dk-python", "P2 full", 1, 2.5, 1.25),
        _res("delta-kernel-rs", "P2 full", 1, 4.0, 2.5),
        _res("polars-deltalake", "P2 full", 1, 5.0, 3.0),
        _res("dk", "P3 1%", 1, 0.1, 0.05),
        _res("delta-rs", "P3 1%", 1, 0.5, 0.2),
    ]
    dk_p3 = results[6]
    dk_p3.extra = {"files_selected": 2, "bytes_selected": 10, "row_groups_total": 2,
                   "row_groups_skipped": 0, "rows_decoded": 7}
    prep = bench_run.Prepared(warm_files=[], data={
        "facts": {"p3_min_paths": ["a", "b"], "p3_min_bytes": 10}})
    text = scan_p2p3.summary(results, prep)
    assert ("| P2 full | 1 | dk | 1.50× (1.50×) | — | 1.50× (4.00×) | 2.00× (2.50×) | "
            "2.50× (3.00×) | 1.25× (1.25×) |") in text
    assert ("| P2 full | 1 | dk-python | 1.20× (1.20×) | — | 1.20× (3.20×) | 1.60× (2.00×) | "
            "2.00× (2.40×) | — |") in text
    assert "| P3 1% | 1 | dk | — | — | 5.00× (4.00×) | — | — | — |" in text
    assert "P2 full, 1 thread(s): dk vs duckdb = 1.50× (target ≥ 1.0×) met" in text
    assert "P2 full, 1 thread(s): dk vs delta-rs = 1.50× (target ≥ 2.0×) **missed**" in text
    assert "P3 1%, 1 thread(s): dk vs delta-rs = 5.00× (target ≥ 2.0×) met" in text
    assert ("P3 files/bytes read by dk: 2 files, 10 bytes (row groups read 2, rows decoded 7); "
            "minimum the stats allow: 2 files, 10 bytes") in text


def test_registered_with_the_runner():
    assert "scan_p2p3" in bench_run.BENCHMARKS
    assert scan_p2p3.P3_SQL == "l_orderkey >= 6060001 AND l_orderkey < 6180001"
    # l_orderkey = (row // 4) * 8 + 1: the P3 range is rows [3,030,000, 3,090,000), 1 %
    lo_row = (scan_p2p3.P3_LO - 1) // 8 * 4
    hi_row = (scan_p2p3.P3_HI - 1) // 8 * 4
    assert (hi_row - lo_row) * 100 == scan_p2p3.ROWS
