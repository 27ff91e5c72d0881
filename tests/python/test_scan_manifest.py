"""`dk scan` against every `read` case of the shared corpus (issue #4's main proof).

Each case (latest snapshot and every listed version) is read in full with
`dk scan TABLE [--version N] --format jsonl`; dk's rows are converted to the manifest encoding
with dkharness.canon_dk_jsonl (driven by the case's Delta schema) and compared as a multiset
with the expected rows written by Delta-Spark / the golden-table generators.

Cases dk cannot read yet are listed in KNOWN_UNSUPPORTED: for them dk must fail cleanly
(non-zero exit, an "unsupported" message, no crash or sanitizer report).
"""

import pytest

import dkharness as h

# case id -> why dk cannot read it yet (must fail cleanly with "unsupported").
KNOWN_UNSUPPORTED = {
    "delta-golden/spark-variant-checkpoint@latest": "variant values are not decoded yet",
    "delta-kernel-defaults/spark-shredded-variant-preview-delta@latest":
        "variant values (and shredding) are not decoded yet",
}

READ_CASES = [c for c in h.cases("read")]


def _scan_args(case):
    args = ["scan", h.table_path(case), "--format", "jsonl"]
    if case.get("version") is not None:
        args += ["--version", str(case["version"])]
    if case.get("columns", "all") != "all":
        args += ["--columns", ",".join(case["columns"])]
    return args


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("case", READ_CASES, ids=[c["id"] for c in READ_CASES])
def test_scan_reproduces_expected_rows(case):
    rc, out, err = h.run_dk(*_scan_args(case))
    if case["id"] in KNOWN_UNSUPPORTED:
        assert rc != 0 and "unsupported" in err, (rc, err[-2000:])
        pytest.skip(f"unsupported by dk (fails cleanly): {KNOWN_UNSUPPORTED[case['id']]}")
    assert rc == 0, err[-4000:]
    schema = h.case_schema(case)
    if case.get("columns", "all") != "all":
        fields = dict(schema[1])
        schema = ("struct", tuple((c, fields[c]) for c in case["columns"]))
    actual = h.canon_dk_jsonl(out, schema)
    h.assert_rows_equal(actual, h.expected_rows(case))


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("case", READ_CASES, ids=[c["id"] for c in READ_CASES])
def test_scan_threaded_reproduces_expected_rows(case):
    if case["id"] in KNOWN_UNSUPPORTED:
        pytest.skip(KNOWN_UNSUPPORTED[case["id"]])
    rc, out, err = h.run_dk(*_scan_args(case), "--threads", "3", "--batch-size", "7")
    assert rc == 0, err[-4000:]
    schema = h.case_schema(case)
    if case.get("columns", "all") != "all":
        fields = dict(schema[1])
        schema = ("struct", tuple((c, fields[c]) for c in case["columns"]))
    h.assert_rows_equal(h.canon_dk_jsonl(out, schema), h.expected_rows(case))


ERROR_CASES = h.cases("error")


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["id"] for c in ERROR_CASES])
def test_scan_error_cases_fail_cleanly(case):
    rc, out, err = h.run_dk("scan", h.table_path(case))
    assert rc != 0 and out == "", (rc, out[:500])
    assert err.startswith("dk"), err[-2000:]


@pytest.mark.dk_command("scan")
def test_scan_manifest_covers_all_read_cases():
    # the proof is only meaningful if the corpus has its read cases
    assert len(READ_CASES) >= 100
