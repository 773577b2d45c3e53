#!/usr/bin/env python3
"""Eager references for the special functions of `passes/src/lower/special.rs`: digamma,
polygamma (n = 0..4), Hurwitz zeta, i0/i0e/i1/i1e, erfc/erfcx/log_ndtr, spherical_bessel_j0,
gcd/lcm, logcumsumexp, nextafter, frexp, bessel_j0/j1/y0/y1, the modified Bessel functions, ndtri,
airy_ai, erfinv and signbit.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/special_ops.py:make \\
        -o testdata/cpu/special_ops.pt2

writes special_ops.pt2 and special_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu/mod.rs` (`special_ops_match_eager`) and the tpu model tests compile the archive
and compare. The grids hold the poles (0, -0, negative integers), values just beside them,
negative non-integers, the points where the kernels switch formulas (8 for the Bessel series,
1, 8, 50 and -26.7 for erfc/erfcx, 10 for digamma's recurrence), tiny and huge magnitudes, ±inf
and NaN; gcd/lcm take every integer width with its extremes and consecutive Fibonacci numbers
(Euclid's longest runs).
"""

import torch

FIB = [0, 1]
while FIB[-1] < 2**63:
    FIB.append(FIB[-1] + FIB[-2])


class SpecialOps(torch.nn.Module):
    def forward(self, x, zx, zq, e, big, g64a, g64b, g32a, g32b, g16a, g16b, g8a, g8b, u8a, u8b, c, na, nb, da, db, p, ai, ev):
        outs = [torch.digamma(x)]
        outs += [torch.polygamma(n, x) for n in range(1, 5)]
        outs += [torch.special.zeta(zx, zq), torch.special.zeta(zx, 2.5), torch.special.zeta(3.0, zq)]
        outs += [torch.i0(big), torch.special.i0e(big), torch.special.i1(big), torch.special.i1e(big)]
        outs += [torch.erfc(e), torch.special.erfcx(e), torch.special.log_ndtr(e)]
        outs += [torch.special.spherical_bessel_j0(x)]
        for a, b in ((g64a, g64b), (g32a, g32b), (g16a, g16b), (g8a, g8b), (u8a, u8b)):
            outs += [torch.gcd(a, b)]
            # torch's int32/int64 lcm divides MIN by gcd(MIN, x), which can be -1, and traps.
            if a.dtype in (torch.int64, torch.int32):
                low = torch.iinfo(a.dtype).min + 1
                a, b = torch.clamp(a, min=low), torch.clamp(b, min=low)
            outs += [torch.lcm(a, b)]
        outs += [torch.logcumsumexp(c, 0), torch.logcumsumexp(c, 1), torch.digamma(x.double())]
        outs += [torch.nextafter(na, nb), *torch.frexp(na), torch.nextafter(da, db), *torch.frexp(da)]
        outs += [torch.special.bessel_j0(x), torch.special.bessel_j1(x), torch.special.bessel_y0(x),
                 torch.special.bessel_y1(x), torch.special.ndtri(p)]
        outs += [f(x) for f in (torch.special.modified_bessel_i0, torch.special.modified_bessel_i1,
                                torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
                                torch.special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k1)]
        outs += [torch.special.airy_ai(ai), torch.erfinv(ev)]
        outs += [torch.signbit(na), torch.signbit(-na), torch.signbit(da), torch.signbit(g8a)]
        return tuple(outs)


def ints(dtype, fib):
    info = torch.iinfo(dtype)
    vals = [0, 1, -1, 2, -2, 6, -9, 12, 18, 35, 49, info.max, info.min, info.max - 1, info.min + 1]
    vals = [v for v in vals if info.min <= v <= info.max]
    a = torch.tensor(vals, dtype=dtype)
    a, b = a.repeat_interleave(len(vals)), a.repeat(len(vals))
    f = [v for v in fib if v <= info.max]
    fa = torch.tensor(f[1:] + f[-2:0:-1], dtype=dtype)
    fb = torch.tensor(f[:-1] + f[-1:1:-1], dtype=dtype)
    return torch.cat([a, fa]), torch.cat([b, fb])


def make():
    torch.manual_seed(0)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, 0.5, -0.5, 1.0, 2.0, -1.0, -2.0, -1.0000001, -0.9999999, 9.0, 10.0,
               9.999999, 10.000001, 1e6, 1e10, 1e17, 1e20, -1e6 - 0.5, float("inf"), float("-inf"), float("nan")]
    x = torch.cat([torch.linspace(-9.5, 12, 1001), torch.tensor(special)])
    zxs = [1.0, 0.5, 2.0, 3.0, 4.0, 4.5, 7.0, 30.0, 1.0001, 200.0, float("inf"), float("nan")]
    zqs = [1.0, 0.5, 2.0, 1e-3, 9.5, 1e6, 0.0, -0.0, -2.0, -0.5, -3.3, -8.48, -25.75, -1e4 - 0.25, float("nan"),
           float("-inf"), float("inf")]
    zx = torch.tensor(zxs).repeat_interleave(len(zqs))
    zq = torch.tensor(zqs).repeat(len(zxs))
    e = torch.cat([torch.linspace(-10, 10, 801), torch.tensor(
        [-30.0, -27.0, -26.6, -6.2, -6.0, -1.0, -0.9999, 0.0, -0.0, 0.9999, 1.0, 1.0001, 7.99, 8.0, 8.01, 26.0, 27.0,
         49.9, 50.0, 50.1, 1e4, 4e7, 6e7, 1e30, float("inf"), float("-inf"), float("nan")])])
    big = torch.cat([torch.linspace(-20, 20, 801), torch.tensor(
        [7.999, 8.0, 8.001, -8.0, 1e-30, -1e-30, 0.0, -0.0, 80.0, 85.0, 89.0, 100.0, 1e4, -1e4, float("inf"),
         float("-inf"), float("nan")])])
    gs = [ints(d, FIB) for d in (torch.int64, torch.int32, torch.int16, torch.int8)]
    u = torch.tensor([0, 1, 2, 6, 9, 12, 18, 35, 128, 200, 250, 255], dtype=torch.uint8)
    u8 = (u.repeat_interleave(len(u)), u.repeat(len(u)))
    c = torch.randn(9, 13) * 5
    c[2, 3] = c[4, 1] = float("-inf")
    c[:, 0] = float("-inf")
    c[5, 7] = float("inf")
    c[6, 9] = float("nan")
    c[7, 2] = 1e4
    c[8, :] = -1e4
    # nextafter/frexp: zeros of both signs, subnormals (the smallest, the largest), the smallest
    # normal, powers of 2 (where the step toward 0 halves), the largest float, ±inf, NaN.
    tiny, sub_max, normal = 1.401298464324817e-45, 1.1754942106924411e-38, 1.1754943508222875e-38
    fmax = 3.4028234663852886e38
    nv = [0.0, -0.0, tiny, -tiny, sub_max, normal, 1.0, 1.0, -1.0, 2.0, 0.75, -8.48, fmax, -fmax, float("inf"),
          float("-inf"), float("nan"), 3.0, 1e-40, 5.0]
    nw = [1.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 2.0, -1.0, 3.6, float("inf"), 0.0, 0.0, 0.0, 1.0,
          float("nan"), -1e-40, 5.0]
    na, nb = torch.tensor(nv), torch.tensor(nw)
    # The same in f64, with f64's subnormals and extremes (an f32 subnormal converted on XLA's
    # CPU is flushed to 0 before an f64 op sees it).
    f64_of = {tiny: 5e-324, -tiny: -5e-324, sub_max: 2.225073858507201e-308, normal: 2.2250738585072014e-308,
              fmax: 1.7976931348623157e308, -fmax: -1.7976931348623157e308, 1e-40: 1e-310}
    da = torch.tensor([f64_of.get(v, v) for v in nv], dtype=torch.float64)
    db = torch.tensor([f64_of.get(v, v) for v in nw], dtype=torch.float64)
    # ndtri: both ends, outside [0, 1], the switches at e^-2, 1 - e^-2 and x = 8 (y = e^-32).
    p = torch.cat([torch.linspace(0, 1, 1001), torch.tensor(
        [1e-30, 1e-20, 1.2664165549e-14, 1e-10, 0.1353352832366127, 0.8646647167633873, 1 - 1e-7, -0.1, 1.1,
         float("inf"), float("nan")])])
    # airy_ai: its switches at -2.09, 2.09, 8.3203353 and 103.892; erfinv: 0.7, ±1, beyond.
    ai = torch.cat([torch.linspace(-30, 110, 1401), torch.tensor(
        [-2.09, -2.0899, 2.0899, 2.09, 8.3203353, 8.33, 103.89, 103.9, float("inf"), float("-inf"), float("nan")])])
    ev = torch.cat([torch.linspace(-1, 1, 1001), torch.tensor(
        [0.7, -0.7, 0.70001, 1 - 1e-7, -1 + 1e-7, 1e-30, -0.0, 1.5, -1.5, float("inf"), float("nan")])])
    args = (x, zx, zq, e, big, *[t for q in gs for t in q], *u8, c, na, nb, da, db, p, ai, ev)
    return SpecialOps().eval(), args
