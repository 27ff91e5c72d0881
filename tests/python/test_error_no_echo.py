"""Hardening (issue 18, item 2): error messages never echo bytes of the file they complain about.

A deletion-vector descriptor may point at any file and offset; when a message printed the size
or checksum it found there, every surface that shows errors (CLI, dk sql, Python, Spark) read
4 bytes of that file per query. Each case damages the DV file of a copy of the corpus table
``basic-dv-no-checkpoint`` with chosen bytes (printable, so they would show as text as well as
numbers), and checks that ``dk scan`` fails, names the file, and shows the chosen
bytes in no form: text, decimal or hex, in either byte order. Before the fix the size and
checksum cases printed the stored value.
"""

import struct
import zlib

import pytest

import dkharness

CASE = "delta-kernel-defaults/basic-dv-no-checkpoint"


def forms(raw: bytes):
    """Every way a message could show the 4 bytes `raw`."""
    out = {raw.decode("latin-1"), raw[::-1].decode("latin-1")}
    for fmt in (">I", "<I", ">i", "<i"):
        v = struct.unpack(fmt, raw)[0]
        out |= {str(v), f"{v & 0xffffffff:x}", f"{v & 0xffffffff:X}", f"{v & 0xffffffff:08x}"}
    return out


def dv_file(table):
    (p,) = table.glob("deletion_vector_*.bin")
    return p


def damage(data: bytearray, name: str) -> list[bytes]:
    """Writes chosen bytes into the DV file image; returns the 4-byte values to look for."""
    size = struct.unpack(">I", data[1:5])[0]
    if name == "size":
        data[1:5] = b"ABCD"
        return [b"ABCD"]
    if name == "checksum":
        data[5 + size:9 + size] = b"WXYZ"
        return [b"WXYZ", struct.pack(">I", zlib.crc32(bytes(data[5:5 + size])))]
    if name == "magic":  # a bitmap that is not one, with a matching checksum
        data[5:9] = b"MAGI"
        data[5 + size:9 + size] = struct.pack(">I", zlib.crc32(bytes(data[5:5 + size])))
        return [b"MAGI"]
    if name == "version":
        data[0] = ord("Q")
        return [b"Q"]
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["size", "checksum", "magic", "version"])
def test_dv_errors_do_not_echo_file_bytes(dk, tmp_path, name):
    t = dkharness.copy_table(CASE, tmp_path)
    rc, _, err = dk("scan", t)
    assert rc == 0, err
    p = dv_file(t)
    data = bytearray(p.read_bytes())
    secrets = damage(data, name)
    p.write_bytes(bytes(data))
    rc, out, err = dk("scan", t)
    assert rc == 1, (rc, out, err)
    assert p.name in err, err
    msg = err.replace(str(t), "<table>").replace(p.name, "<dv>")
    for raw in secrets:
        if len(raw) == 1:
            assert f"version {raw[0]}" not in msg and f"version {raw.decode()}" not in msg, msg
            continue
        for f in forms(raw):
            assert f not in msg, (f, msg)
