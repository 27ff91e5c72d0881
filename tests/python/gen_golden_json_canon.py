#!/usr/bin/env python3
"""Generates tests/unit/data/golden_json_canon.txt: CPython's reading of every line of every
JSON commit file (_delta_log/*.json) of the shared corpus, as an oracle for dk's JSON parser.

Each line is "<path relative to testdata> <line number from 1> <byte length> <fnv1a64 hex>"
of the canonical text of the value as CPython's json module decodes it:
  objects  {"k":v,...}  in source order, duplicate keys kept (object_pairs_hook)
  arrays   [v,...]
  strings  json.dumps(s, ensure_ascii=False)  (\\" \\\\ \\b \\f \\n \\r \\t, other controls \\u00xx)
  ints     decimal digits;  floats  repr(float) (json.loads gives float for any '.', 'e', 'E')
  true/false/null
The C test (test_json_golden.c) builds the same text from dk's DOM and compares.
Run once with the project venv:  .venv/bin/python tests/python/gen_golden_json_canon.py
"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DK_TESTDATA", os.path.join(HERE, "..", "..", "..", "shared", "testdata"))
OUT = os.path.join(HERE, "..", "unit", "data", "golden_json_canon.txt")


class Pairs(list):
    pass


def canon(v):
    if isinstance(v, Pairs):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    return repr(v)


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for c in b:
        h ^= c
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main(out_path=OUT):
    data = os.path.realpath(DATA)
    files = sorted(glob.glob(os.path.join(data, "**", "_delta_log", "*.json"), recursive=True))
    out = []
    for f in files:
        rel = os.path.relpath(f, data)
        if " " in rel:
            continue
        with open(f, "rb") as fh:
            lines = fh.read().split(b"\n")
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            v = json.loads(line.decode("utf-8"), object_pairs_hook=Pairs)
            c = canon(v).encode("utf-8")
            out.append("%s %d %d %016x" % (rel, i, len(c), fnv1a64(c)))
    with open(out_path, "w") as fh:
        fh.write("\n".join(out) + "\n")
    print(len(out), "lines from", len(files), "files written to", out_path)


if __name__ == "__main__":
    main()
