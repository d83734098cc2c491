#!/usr/bin/env python3
"""Fits `P` in erfc(a) = t exp(P(t) - a^2), t = 1 / (1 + a / 2), a >= 0: the one-piece
erfc of tang's exact GELU (`GELU_ERFC` in tang-expr/src/op/special.rs).

P(t) = ln(erfc(a) exp(a^2) / t) is smooth on [0, 1] (its limit at t = 0 is
-ln(2 sqrt(pi))). The fit interpolates it at the Chebyshev nodes of [0, 1] (degree 9),
converts to powers of t exactly, rounds to f32, and reports the worst errors of the
GELU and its derivative computed in f32 (unfused, the worst case) against double
precision on [-14, 14]. Needs only the standard library:

    python3 scripts/fit-gelu-erfc.py [degree]
"""
import math
import struct
import sys
from fractions import Fraction


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def scaled_erfc(a):
    """erfc(a) exp(a^2), by the continued fraction past 2.5 (no underflow)."""
    if a < 2.5:
        return math.erfc(a) * math.exp(a * a)
    f = a
    for k in range(60, 0, -1):
        f = a + (k / 2.0) / f
    return 1.0 / (math.sqrt(math.pi) * f)


def target(t):
    if t == 0:
        return -math.log(2 * math.sqrt(math.pi))
    return math.log(scaled_erfc(2.0 / t - 2.0) / t)


def fit(degree):
    m = degree + 1
    us = [math.cos(math.pi * (k + 0.5) / m) for k in range(m)]
    fs = [target((u + 1) / 2) for u in us]
    cheb = [2.0 / m * sum(fs[k] * math.cos(math.pi * j * (k + 0.5) / m) for k in range(m))
            for j in range(m)]
    cheb[0] /= 2
    # T_j(u) in powers of u, then u = 2 t - 1, exactly.
    ts = [[Fraction(1)], [Fraction(0), Fraction(1)]]
    for j in range(2, m):
        a = [Fraction(0)] + [2 * x for x in ts[j - 1]]
        b = ts[j - 2] + [Fraction(0)] * (len(a) - len(ts[j - 2]))
        ts.append([x - y for x, y in zip(a, b)])
    in_u = [Fraction(0)] * m
    for j in range(m):
        for i, x in enumerate(ts[j]):
            in_u[i] += Fraction(cheb[j]) * x
    in_t = [Fraction(0)] * m
    for i, c in enumerate(in_u):
        for k in range(i + 1):
            in_t[k] += c * math.comb(i, k) * 2**k * (-1) ** (i - k)
    return [f32(float(x)) for x in in_t]


def horner(cs, t):
    acc = 0.0
    for k in reversed(cs):
        acc = f32(f32(acc * t) + k)
    return acc


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    cs = fit(degree)
    c = f32(-1 / math.sqrt(2))
    k = f32(1 / math.sqrt(2 * math.pi))

    def parts(x):
        z = f32(x * c)
        a = abs(z)
        t = f32(1.0 / f32(1.0 + f32(0.5 * a)))
        return z, a, t, horner(cs, t)

    def gelu(x):
        z, a, t, p = parts(x)
        y = f32(t * f32(math.exp(f32(p - f32(a * a)))))
        return f32(f32(0.5 * x) * (y if z >= 0 else f32(2.0 - y)))

    def grad(x):
        z, a, t, p = parts(x)
        e = f32(math.exp(-f32(a * a)))
        y = f32(f32(t * e) * f32(math.exp(p)))
        return f32(f32(0.5 * (y if z >= 0 else f32(2.0 - y))) + f32(x * f32(e * k)))

    worst = [0.0, 0.0, 0.0]
    for i in range(-140000, 140001):
        x = f32(i * 1e-4)
        z = x * c
        want = 0.5 * x * math.erfc(z)
        want_d = 0.5 * math.erfc(z) + x * math.exp(-z * z) / math.sqrt(2 * math.pi)
        worst[0] = max(worst[0], abs(gelu(x) - want))
        worst[1] = max(worst[1], abs(grad(x) - want_d))
        if abs(x) < 13:
            _, _, t, p = parts(x)
            worst[2] = max(worst[2], abs(p - target(t)))
    print(f"degree {degree}: |P error| (erfc's relative error) {worst[2]:.2e}, "
          f"GELU {worst[0]:.2e}, derivative {worst[1]:.2e} (absolute)")
    print("pub(crate) const GELU_ERFC: [f32; %d] = [" % len(cs))
    for x in cs:
        print(f"    {x!r},")
    print("];")


if __name__ == "__main__":
    main()
