#!/usr/bin/env python3
"""Generates tests/unit/data/doubles_repr.txt: the oracle for dk__json_write_double/_float.

Each line is "<kind> <hex bits> <Python repr of the value>", where kind is
  d  a double given by its 64-bit IEEE pattern, expected text repr(x);
  f  a float32 given by its 32-bit pattern, expected the Python repr of the shortest decimal
     that reads back (through float32 rounding) as the same float32: what Spark, DuckDB and
     Arrow print for a FLOAT column (0.234, not 0.23399999737739563). Candidates of p digits
     are the correctly rounded one and its neighbour towards x (as for doubles).
Non-finite values are skipped (they are strings in our JSON). The output is produced by
CPython's float repr (David Gay's shortest round-trip algorithm), not by our code.
Run once with the project venv:  .venv/bin/python tests/python/gen_doubles_repr.py
"""
import math
import os
import random
import struct

OUT = os.path.join(os.path.dirname(__file__), "..", "unit", "data", "doubles_repr.txt")


def d_from_bits(u):
    return struct.unpack("<d", struct.pack("<Q", u))[0]


def f_from_bits(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def f32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # rounds past FLT_MAX: not a candidate
        return math.nan


def shortest_f32(x):
    """Shortest decimal whose float32 rounding is x, by CPython's decimal arithmetic."""
    from decimal import Decimal, ROUND_HALF_EVEN, Context
    dx = Decimal(x)
    for p in range(1, 10):
        q = Context(prec=p, rounding=ROUND_HALF_EVEN).plus(dx)
        if f32(float(q)) == x:
            return float(q)
        ulp = Decimal(1).scaleb(q.adjusted() - p + 1)
        nb = q + ulp if q < dx else q - ulp
        if f32(float(nb)) == x:
            return float(nb)
    return x


def main(out_path=OUT):
    rng = random.Random(20261129)
    dbits = []
    # uniformly random bit patterns: every exponent, long digit strings
    dbits += [rng.getrandbits(64) for _ in range(4000)]
    # every power of two (normal and subnormal) and its neighbours: the asymmetric
    # rounding-interval cases
    for e in range(-1074, 1024):
        u = struct.unpack("<Q", struct.pack("<d", math.ldexp(1.0, e)))[0]
        dbits += [u, u + 1, u - 1]
    # subnormals
    dbits += [rng.getrandbits(52) for _ in range(800)]
    dbits += list(range(1, 40))
    # "human" values: short decimals, integers, both signs, around the format switch points
    human = []
    for _ in range(1200):
        k = rng.randint(0, 8)
        human.append(round(rng.uniform(-1e6, 1e6), k))
        human.append(float(rng.randint(-10**17, 10**17)))
        human.append(rng.random() * 10 ** rng.randint(-8, 20))
    for e in range(-8, 24):
        for m in (1.0, 1.5, 9.999999999999998, 9.5, 1.0000000000000002):
            human.append(m * 10.0**e)
    human += [0.1, 0.2, 0.3, 0.1 + 0.2, 1 / 3, 2 / 3, math.pi, math.e, 1e16, 1e15, 1e-4, 1e-5,
              123456789012345678.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
              0.0, -0.0, 1.0, -1.0, 100.0, 0.001, 1e22, 1e23]
    dbits += [struct.unpack("<Q", struct.pack("<d", x))[0] for x in human]
    fbits = [rng.getrandbits(32) for _ in range(3000)]
    fbits += [struct.unpack("<I", struct.pack("<f", x))[0]
              for x in (0.234, 0.1, 1.0, 3.4028234663852886e38, 1e-45, 1.17549435e-38, 16777217.0,
                        0.3, 2.5, 1e10, 1e-10)]
    fbits += [rng.getrandbits(23) for _ in range(200)]  # float subnormals
    lines = []
    seen = set()
    for u in dbits:
        u &= (1 << 64) - 1
        if ("d", u) in seen:
            continue
        seen.add(("d", u))
        x = d_from_bits(u)
        if math.isfinite(x):
            lines.append("d %016x %r" % (u, x))
    for u in fbits:
        u &= (1 << 32) - 1
        if ("f", u) in seen:
            continue
        seen.add(("f", u))
        x = f_from_bits(u)
        if math.isfinite(x):
            lines.append("f %08x %r" % (u, shortest_f32(x)))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(len(lines), "values written to", out_path)


if __name__ == "__main__":
    main()
