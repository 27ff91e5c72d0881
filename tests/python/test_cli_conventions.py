"""The dk CLI's conventions (docs/cli.md, docs/dk.1): help, version, exit status, stable --json.

Exit status: 0 success, 1 runtime error, 2 usage error. Before this was settled `dk COMMAND
--help` was an unknown option (exit 2 with a usage line on stderr), there was no
`dk --version` nor `dk help COMMAND`, and a corrupt file exited 3.
"""

import json
import re
from pathlib import Path

import pytest

import dkharness

TABLE = "delta-golden/basic-decimal-table"
COMMANDS = ["describe", "history", "files", "scan", "parquet", "sql", "create", "vacuum",
            "restore", "checkpoint", "version", "help"]
REPO = Path(__file__).resolve().parents[2]


def table():
    return dkharness.table_path(TABLE)


def test_top_level_help(dk):
    for argv in (["--help"], ["-h"], ["help"]):
        rc, out, err = dk(*argv)
        assert rc == 0 and err == "", (argv, err)
        for c in COMMANDS:
            assert re.search(rf"^  {c} ", out, re.M), (c, out)
        assert "Exit status" in out


def test_no_command_is_a_usage_error(dk):
    rc, out, err = dk()
    assert rc == 2 and out == "" and "usage: dk COMMAND" in err


@pytest.mark.parametrize("cmd", [c for c in COMMANDS])
def test_command_help_three_ways(dk, cmd):
    rc, want, err = dk("help", cmd)
    assert rc == 0 and err == "" and want.startswith(f"usage: dk {cmd}"), (want, err)
    if cmd in ("version", "help"):
        return
    for argv in ([cmd, "--help"], [cmd, "-h"], [cmd, str(table()), "--help"]):
        rc, out, err = dk(*argv)
        assert rc == 0 and err == "" and out == want, argv


def test_help_lists_every_option_the_commands_accept(dk):
    """Each --option the sources of a command parse appears in its help."""
    src = {"describe": ["cmd_describe.c"], "files": ["cmd_describe.c", "cmd_files.c"],
           "scan": ["cmd_scan.c"], "parquet": ["cmd_parquet.c"], "sql": ["cmd_sql.c"],
           "history": []}
    for cmd, files in src.items():
        _, text, _ = dk("help", cmd)
        opts = set()
        for f in files:
            opts |= set(re.findall(r'strcmp\((?:argv\[i\]|a), "(--[a-z-]+)"\)',
                                   (REPO / "tools" / "cli" / f).read_text()))
        opts -= {"--help"}
        if cmd in ("describe", "files"):  # the shared parser of cmd_describe.c
            opts -= {"--limit"} | ({"--where"} if cmd == "describe" else set())
        if cmd == "scan":
            opts -= {"--via-splits", "--split-size", "--dump-splits"}  # test and fuzz hooks
        missing = sorted(o for o in opts if o not in text)
        assert not missing, (cmd, missing)
    # the writing commands share cmd_txn.c: together their helps name every option it parses
    text = "".join(dk("help", c)[1] for c in ("create", "write", "vacuum", "restore", "checkpoint"))
    opts = set(re.findall(r'strcmp\(argv\[i\], "(--[a-z-]+)"\)',
                          (REPO / "tools" / "cli" / "cmd_txn.c").read_text()))
    assert opts and not sorted(o for o in opts if o not in text)


def test_version(dk):
    for argv in (["--version"], ["version"]):
        rc, out, err = dk(*argv)
        assert rc == 0 and re.fullmatch(r"dk \d+\.\d+\.\d+\n", out), out
    common = (REPO / "include/dk/common.h").read_text()
    v = [re.search(rf"#define DK_VERSION_{p} (\d+)", common).group(1)
         for p in ("MAJOR", "MINOR", "PATCH")]
    assert out.strip() == "dk " + ".".join(v)


@pytest.mark.parametrize("argv", [
    ["bogus"],
    ["help", "bogus"],
    ["describe"],
    ["describe", "{t}", "--bogus"],
    ["describe", "{t}", "extra"],
    ["describe", "{t}", "--version", "x"],
    ["describe", "{t}", "--timestamp", "yesterday"],
    ["files", "{t}", "--threads", "-1"],
    ["history"],
    ["scan"],
    ["scan", "{t}", "--format", "xml"],
    ["scan", "{t}", "--limit", "-3"],
    ["scan", "{t}", "--where", "part >"],
    ["files", "{t}", "--where", "(("],
    ["parquet"],
    ["parquet", "bogus", "x.parquet"],
    ["parquet", "cat", "x.parquet", "--format", "xml"],
    ["sql"],
    ["sql", "SELECT 1", "--format", "xml"],
    ["sql", "SELECT 1", "SELECT 2"],
])
def test_usage_errors_exit_2(dk, argv):
    argv = [a.format(t=table()) for a in argv]
    rc, out, err = dk(*argv)
    assert rc == 2, (argv, rc, out, err)
    assert out == "" and err.strip(), (argv, out, err)


@pytest.mark.parametrize("argv", [
    ["describe", "/nonexistent/dk-table"],
    ["scan", "/nonexistent/dk-table"],
    ["files", "{t}", "--version", "99"],
    ["history", "/nonexistent/dk-table"],
    ["parquet", "schema", "/nonexistent/x.parquet"],
    ["parquet", "cat", "{corrupt}"],
    ["scan", "{t}", "--columns", "nosuchcolumn"],
    ["sql", "SELECT * FROM nosuchtable"],
])
def test_runtime_errors_exit_1(dk, tmp_path, argv):
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    argv = [a.format(t=table(), corrupt=corrupt) for a in argv]
    rc, out, err = dk(*argv)
    assert rc == 1, (argv, rc, out, err)
    assert err.startswith("dk"), err


def test_describe_json_keys(dk):
    rc, out, _ = dk("describe", table(), "--json")
    assert rc == 0
    d = json.loads(out)
    for k in ("table", "version", "timestamp", "schema", "partition_columns", "protocol", "id",
              "name", "description", "format", "created_time", "properties",
              "app_transactions", "num_tombstones", "num_files", "size_bytes"):
        assert k in d, k
    assert d["schema"]["type"] == "struct" and d["partition_columns"] == ["part"]
    assert d["protocol"]["minReaderVersion"] == 1 and d["num_files"] == 4


def test_files_and_history_json(dk):
    rc, out, _ = dk("files", table(), "--json")
    d = json.loads(out)
    assert d["version"] == 0 and len(d["files"]) == 4
    for f in d["files"]:
        assert {"path", "size", "modification_time", "partition_values"} <= set(f)
        json.loads(f["stats"])
    rc, out, _ = dk("files", table(), "--where", "part > 0", "--json")
    d = json.loads(out)
    assert set(d) >= {"files", "skipped", "residual"}
    assert {s["reason"] for s in d["skipped"]} == {"partition"}
    rc, out, _ = dk("history", table(), "--json")
    h = json.loads(out)
    assert [set(x) for x in h] == [{"version", "timestamp", "commitInfo"}]
    assert h[0]["commitInfo"]["operation"] == "WRITE"


def test_man_page_is_valid_roff():
    text = (REPO / "docs" / "dk.1").read_text()
    assert text.count(".TH DK 1") == 1
    for c in COMMANDS:
        assert re.search(rf"^\.(TP|B|BI)?.*\b{c}\b", text, re.M), c
    assert ".SH EXIT STATUS" in text
