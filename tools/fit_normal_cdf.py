#!/usr/bin/env python3
"""tools/fit_normal_cdf.py — the coefficient table of bertc_normal_cdf
(tensor/vmath.c, tensor/vmath_internal.h): Q(a) = Phi(-a) = erfc(a/sqrt2)/2,
the upper tail of the standard normal, for a = |x| in [0, 8), as 16
polynomials of degree 6, one per interval [j/2, (j + 1)/2):

    Q(a) = p_j(t),  j = floor(2a),  t = 2a - (j + 0.5)  in [-0.5, 0.5)

2a and t are exact in float, so every target evaluates the same t. Each p_j
is fitted to minimise the largest *relative* error on 400 Chebyshev points
(Lawson's iteratively reweighted least squares, Q from mpmath at 30 digits),
its coefficients rounded to float. The script then evaluates the float
algorithm (Horner with one rounding per step, as an FMA does) on a dense grid
and prints the errors that tensor/vmath.c quotes, then the C table.

Needs python3-numpy and python3-mpmath (Debian packages):
    python3 tools/fit_normal_cdf.py
"""
import numpy as np
import mpmath as mp

mp.mp.dps = 30
INTERVALS, DEGREE, K, A_MAX = 16, 6, 2.0, 8.0
f32 = np.float32


def upper_tail(a):
    return float(mp.erfc(mp.mpf(a) / mp.sqrt(2)) / 2)


def fit_interval(j):
    t = 0.5 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    q = np.array([upper_tail((j + 0.5 + ti) / K) for ti in t])
    V = np.vander(t, DEGREE + 1, increasing=True) / q[:, None]   # relative error
    ones = np.ones_like(t)
    w = np.ones_like(t)
    for _ in range(30):
        c, *_ = np.linalg.lstsq(V * w[:, None], ones * w, rcond=None)
        e = np.abs(V @ c - ones)
        w = w * np.sqrt(e / e.max() + 1e-30)
        w /= w.max()
    return c.astype(f32)


def fma(a, b, c):   # one rounding: the float64 product of two floats is exact
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def tail_float(coef, a):
    a = f32(a)
    if not a < f32(A_MAX):
        return f32(0.0)
    s = f32(a * f32(K))
    j = int(s)
    t = f32(s - f32(j + 0.5))
    p = coef[DEGREE][j]
    for k in range(DEGREE - 1, -1, -1):
        p = fma(p, t, coef[k][j])
    return p


def c_float(v):
    """A float's exact C hex literal, e.g. 0x1.9aecbap-2f."""
    if v == 0:
        return "0.0f"
    mant, exp = float(v).hex().split("p")
    return f"{mant.rstrip('0').rstrip('.')}p{exp}f"


def main():
    coef = np.array([fit_interval(j) for j in range(INTERVALS)]).T   # [k][j]
    print("/* relative error of Q(a) (float evaluation, 3000 points per unit):")
    for lo in range(8):
        worst = 0.0
        for a in np.linspace(lo, lo + 1, 3001)[:-1]:
            q, want = tail_float(coef, a), upper_tail(float(f32(a)))
            worst = max(worst, abs(float(q) - want) / want)
        print(f" *   a in [{lo}, {lo + 1}): {worst:.2g}")
    worst = 0.0
    for a in np.linspace(0, A_MAX, 24001):
        p, want = f32(f32(1.0) - tail_float(coef, a)), 1.0 - upper_tail(float(f32(a)))
        worst = max(worst, abs(float(p) - want) / want)
    print(f" * relative error of Phi(a) = 1 - Q(a), a >= 0: {worst:.2g} */")
    print(f"static const float NORMAL_TAIL[{DEGREE + 1}][{INTERVALS}] = {{")
    for k in range(DEGREE + 1):
        row = ", ".join(c_float(v) for v in coef[k])
        print(f"    {{{row}}},")
    print("};")


if __name__ == "__main__":
    main()
