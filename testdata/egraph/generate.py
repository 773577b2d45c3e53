"""Writes one `testdata/egraph/<rule>.mlir` case per e-graph rule (run from anywhere).

Each case is a small `ten` function whose body is the rule's left-hand side; its snapshot shows
the trace (which rules fired) and the extracted, partitioned result.
"""
import pathlib

OUT = pathlib.Path(__file__).parent


class F:
    def __init__(self, args):
        self.lines, self.n, self.args = [], 0, args

    def op(self, name, operands, in_types, out_type, attrs=""):
        v = f"%{self.n}"
        self.n += 1
        a = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'  {v} = "{name}"({", ".join(operands)}){a} : ({", ".join(in_types)}) -> {out_type}')
        return v

    def const(self, value, t, dtype="f32"):
        shape = t[len("tensor<"):-1].rsplit("x", 1)[0].replace("x", ", ") if "x" in t else ""
        return self.op("ten.constant", [], [], t, f"dtype = {dtype}, shape = array<i64: {shape}>, value = {value}")

    def text(self, ret, ret_t, rule):
        sig = ", ".join(f"%{n}: {t}" for n, t in self.args)
        body = "\n".join(self.lines)
        return f"// RUN: opt %s --passes=fuse --trace\n// rule: {rule}\nfunc.func @main({sig}) -> ({ret_t}) {{\n{body}\n  return {ret} : {ret_t}\n}}\n"


T, R, V = "tensor<4x8xf32>", "tensor<4xf32>", "tensor<8xf32>"


def unary_chain(rule, build):
    f = F([("x", T)])
    y = build(f, "%x")
    z = f.op("ten.exp", [y], [T], T)
    return f.text(z, T, rule)


cases = {}
for rule, opn, c, order in [("mul-one", "ten.mul", "1.0", 0), ("one-mul", "ten.mul", "1.0", 1), ("add-zero", "ten.add", "0.0", 0),
                            ("zero-add", "ten.add", "0.0", 1), ("sub-zero", "ten.sub", "0.0", 0), ("div-one", "ten.div", "1.0", 0)]:
    def b(f, x, opn=opn, c=c, order=order):
        k = f.const(c, T)
        return f.op(opn, [x, k] if order == 0 else [k, x], [T, T], T)
    cases[rule] = unary_chain(rule, b)
cases["neg-neg"] = unary_chain("neg-neg", lambda f, x: f.op("ten.neg", [f.op("ten.neg", [x], [T], T)], [T], T))
for rule, opn in [("fold-add", "ten.add"), ("fold-sub", "ten.sub"), ("fold-mul", "ten.mul"), ("fold-div", "ten.div")]:
    def b(f, x, opn=opn):
        k = f.op(opn, [f.const("3.0", T), f.const("2.0", T)], [T, T], T)
        return f.op("ten.mul", [x, k], [T, T], T)
    cases[rule] = unary_chain(rule, b)
for rule, opn in [("fold-neg", "ten.neg"), ("fold-sqrt", "ten.sqrt"), ("fold-rsqrt", "ten.rsqrt")]:
    cases[rule] = unary_chain(rule, lambda f, x, opn=opn: f.op("ten.add", [x, f.op(opn, [f.const("4.0", T)], [T], T)], [T, T], T))
cases["mul-const-const"] = unary_chain("mul-const-const", lambda f, x: f.op("ten.mul", [f.op("ten.mul", [x, f.const("3.0", T)], [T, T], T), f.const("0.5", T)], [T, T], T))
D = "tensor<4x8xf64>"
cases["convert-round-trip"] = unary_chain("convert-round-trip", lambda f, x: f.op("ten.convert", [f.op("ten.convert", [x], [T], D, "dtype = f64")], [D], T, "dtype = f32"))

TT = "tensor<8x4xf32>"
cases["transpose-transpose"] = unary_chain("transpose-transpose", lambda f, x: f.op("ten.transpose", [f.op("ten.transpose", [x], [T], TT, "dims = array<i64: 1, 0>")], [TT], T, "dims = array<i64: 1, 0>"))
F32 = "tensor<32xf32>"
def rr(f, x):
    y = f.op("ten.reshape", [f.op("ten.reshape", [x], [T], F32, "shape = array<i64: 32>")], [F32], TT, "shape = array<i64: 8, 4>")
    return f.op("ten.transpose", [y], [TT], T, "dims = array<i64: 1, 0>")
cases["reshape-reshape"] = unary_chain("reshape-reshape", rr)
cases["reshape-noop"] = unary_chain("reshape-noop", lambda f, x: f.op("ten.reshape", [x], [T], T, "shape = array<i64: 4, 8>"))
cases["broadcast-noop"] = unary_chain("broadcast-noop", lambda f, x: f.op("ten.broadcast", [x], [T], T, "dims = array<i64: 0, 1>, shape = array<i64: 4, 8>"))
def ts(f, x):
    y = f.op("ten.transpose", [f.op("ten.mul", [x, f.const("3.0", T)], [T, T], T)], [T], TT, "dims = array<i64: 1, 0>")
    return f.op("ten.transpose", [y], [TT], T, "dims = array<i64: 1, 0>")
cases["transpose-scale"] = unary_chain("transpose-scale", ts)
def tu(f, x):
    y = f.op("ten.exp", [f.op("ten.transpose", [x], [T], TT, "dims = array<i64: 1, 0>")], [TT], TT)
    return f.op("ten.transpose", [y], [TT], T, "dims = array<i64: 1, 0>")
cases["transpose-unary"] = unary_chain("transpose-unary", tu)
def bc(f, x):
    c = f.const("2.0", V)
    b = f.op("ten.broadcast", [c], [V], T, "dims = array<i64: 1>, shape = array<i64: 4, 8>")
    return f.op("ten.mul", [x, b], [T, T], T)
cases["broadcast-const"] = unary_chain("broadcast-const", bc)


def rs(f, x):
    y = f.op("ten.reshape", [f.op("ten.mul", [x, f.const("3.0", T)], [T, T], T)], [T], F32, "shape = array<i64: 32>")
    return f.op("ten.reshape", [y], [F32], T, "shape = array<i64: 4, 8>")
cases["reshape-scale"] = unary_chain("reshape-scale", rs)
W = "tensor<8x16xf32>"
O = "tensor<4x16xf32>"
DOT = "lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>"
for rule, side in [("dot-scale-lhs", 0), ("dot-scale-rhs", 1)]:
    f = F([("x", T), ("w", W)])
    if side == 0:
        a, b = f.op("ten.mul", ["%x", f.const("0.5", T)], [T, T], T), "%w"
    else:
        a, b = "%x", f.op("ten.mul", ["%w", f.const("0.5", W)], [W, W], W)
    cases[rule] = f.text(f.op("ten.dot_general", [a, b], [T, W], O, DOT), O, rule)


def softmax(f, x, t, rt, dims_b):
    r = len(t[7:-1].split("x")) - 1
    m = f.op("ten.reduce", [x], [t], rt, f'dims = array<i64: {r - 1}>, kind = "max"')
    shape = ", ".join(t[7:-1].split("x")[:-1])
    mb = f.op("ten.broadcast", [m], [rt], t, f"dims = array<i64: {dims_b}>, shape = array<i64: {shape}>")
    e = f.op("ten.exp", [f.op("ten.sub", [x, mb], [t, t], t)], [t], t)
    s = f.op("ten.reduce", [e], [t], rt, f'dims = array<i64: {r - 1}>, kind = "sum"')
    sb = f.op("ten.broadcast", [s], [rt], t, f"dims = array<i64: {dims_b}>, shape = array<i64: {shape}>")
    return f.op("ten.div", [e, sb], [t, t], t)


f = F([("x", T)])
cases["softmax"] = f.text(softmax(f, "%x", T, R, "0"), T, "softmax")


def ln_core(f, x):
    n = f.const("8.0", R)
    mean = f.op("ten.div", [f.op("ten.reduce", [x], [T], R, 'dims = array<i64: 1>, kind = "sum"'), n], [R, R], R)
    d = f.op("ten.sub", [x, f.op("ten.broadcast", [mean], [R], T, "dims = array<i64: 0>, shape = array<i64: 4, 8>")], [T, T], T)
    var = f.op("ten.div", [f.op("ten.reduce", [f.op("ten.mul", [d, d], [T, T], T)], [T], R, 'dims = array<i64: 1>, kind = "sum"'), n], [R, R], R)
    r = f.op("ten.rsqrt", [f.op("ten.add", [var, f.const("1.0e-5", R)], [R, R], R)], [R], R)
    return f.op("ten.mul", [d, f.op("ten.broadcast", [r], [R], T, "dims = array<i64: 0>, shape = array<i64: 4, 8>")], [T, T], T)


f = F([("x", T)])
cases["layer-norm"] = f.text(ln_core(f, "%x"), T, "layer-norm")
f = F([("x", T), ("w", V), ("b", V)])
y = ln_core(f, "%x")
y = f.op("ten.mul", [y, f.op("ten.broadcast", ["%w"], [V], T, "dims = array<i64: 1>, shape = array<i64: 4, 8>")], [T, T], T)
y = f.op("ten.add", [y, f.op("ten.broadcast", ["%b"], [V], T, "dims = array<i64: 1>, shape = array<i64: 4, 8>")], [T, T], T)
cases["layer-norm-affine"] = f.text(y, T, "layer-norm-affine")

K = "tensor<4x1xf32>"


def rms(f, x, keepdim):
    ms = f.op("ten.div", [f.op("ten.reduce", [f.op("ten.mul", [x, x], [T, T], T)], [T], R, 'dims = array<i64: 1>, kind = "sum"'), f.const("8.0", R)], [R, R], R)
    if keepdim:
        ms = f.op("ten.reshape", [ms], [R], K, "shape = array<i64: 4, 1>")
        r = f.op("ten.rsqrt", [f.op("ten.add", [ms, f.const("1.0e-6", K)], [K, K], K)], [K], K)
        b = f.op("ten.broadcast", [r], [K], T, "dims = array<i64: 0, 1>, shape = array<i64: 4, 8>")
    else:
        r = f.op("ten.rsqrt", [f.op("ten.add", [ms, f.const("1.0e-6", R)], [R, R], R)], [R], R)
        b = f.op("ten.broadcast", [r], [R], T, "dims = array<i64: 0>, shape = array<i64: 4, 8>")
    return f.op("ten.mul", [x, b], [T, T], T)


f = F([("x", T)])
cases["rms-norm"] = f.text(rms(f, "%x", False), T, "rms-norm")
f = F([("x", T)])
cases["rms-norm-keepdim"] = f.text(rms(f, "%x", True), T, "rms-norm-keepdim")
f = F([("x", T), ("w", V)])
y = rms(f, "%x", True)
y = f.op("ten.mul", [f.op("ten.broadcast", ["%w"], [V], T, "dims = array<i64: 1>, shape = array<i64: 4, 8>"), y], [T, T], T)
cases["rms-norm-weight"] = f.text(y, T, "rms-norm-weight")


def gelu_tanh(f, x):
    x3 = f.op("ten.mul", [f.op("ten.mul", [x, x], [T, T], T), x], [T, T], T)
    inner = f.op("ten.add", [x, f.op("ten.mul", [x3, f.const("0.044715", T)], [T, T], T)], [T, T], T)
    t = f.op("ten.tanh", [f.op("ten.mul", [inner, f.const("0.7978845608028654", T)], [T, T], T)], [T], T)
    one = f.op("ten.add", [t, f.const("1.0", T)], [T, T], T)
    return f.op("ten.mul", [f.op("ten.mul", [x, f.const("0.5", T)], [T, T], T), one], [T, T], T)


f = F([("x", T)])
cases["gelu-tanh"] = f.text(gelu_tanh(f, "%x"), T, "gelu-tanh")
f = F([("x", T)])
e = f.op("ten.erf", [f.op("ten.mul", ["%x", f.const("0.7071067811865476", T)], [T, T], T)], [T], T)
y = f.op("ten.mul", [f.op("ten.mul", ["%x", f.const("0.5", T)], [T, T], T), f.op("ten.add", [e, f.const("1.0", T)], [T, T], T)], [T, T], T)
cases["gelu-erf"] = f.text(y, T, "gelu-erf")
f = F([("x", T)])
cases["silu"] = f.text(f.op("ten.mul", ["%x", f.op("ten.sigmoid", ["%x"], [T], T)], [T, T], T), T, "silu")
f = F([("x", T)])
cases["silu-swapped"] = f.text(f.op("ten.mul", [f.op("ten.sigmoid", ["%x"], [T], T), "%x"], [T, T], T), T, "silu-swapped")

# bmm on heads flattened into the batch: both operands are [2, 3, ...] merged into [6, ...].
A4, B4D, A3, B3D, O3 = "tensor<2x3x4x8xf32>", "tensor<2x3x8x5xf32>", "tensor<6x4x8xf32>", "tensor<6x8x5xf32>", "tensor<6x4x5xf32>"
f = F([("a", A4), ("b", B4D)])
ra = f.op("ten.reshape", ["%a"], [A4], A3, "shape = array<i64: 6, 4, 8>")
rb = f.op("ten.reshape", ["%b"], [B4D], B3D, "shape = array<i64: 6, 8, 5>")
dot = f.op("ten.dot_general", [ra, rb], [A3, B3D], O3, "lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>")
cases["dot-unflatten-batch"] = f.text(f.op("ten.reshape", [dot], [O3], "tensor<2x3x4x5xf32>", "shape = array<i64: 2, 3, 4, 5>"), "tensor<2x3x4x5xf32>", "dot-unflatten-batch")

Q, S, SR = "tensor<2x8x16xf32>", "tensor<2x8x8xf32>", "tensor<2x8xf32>"
B1 = "lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>"
B2 = "lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>"
for rule, masked in [("attention", True), ("attention-unmasked", False)]:
    args = [("q", Q), ("k", Q), ("v", Q)] + ([("mask", S)] if masked else [])
    f = F(args)
    s = f.op("ten.mul", [f.op("ten.dot_general", ["%q", "%k"], [Q, Q], S, B1), f.const("0.25", S)], [S, S], S)
    if masked:
        s = f.op("ten.add", [s, "%mask"], [S, S], S)
    p = softmax(f, s, S, SR, "0, 1")
    cases[rule] = f.text(f.op("ten.dot_general", [p, "%v"], [S, Q], Q, B2), Q, rule)

# torch.export's SDPA decomposition: matmuls on flattened batch dims [B*H, T, D], a
# pre-transposed k, the mask and torch's _safe_softmax on [B, H, T, T].
Q3, S4, S3, R4, R4K = "tensor<4x8x16xf32>", "tensor<2x2x8x8xf32>", "tensor<4x8x8xf32>", "tensor<2x2x8xf32>", "tensor<2x2x8x1xi1>"
KT, B4, B3 = "tensor<4x16x8xf32>", "tensor<2x2x8x8xi1>", "tensor<2x2x8xi1>"
BT = "lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>"
f = F([("q", Q3), ("kt", KT), ("v", Q3), ("mask", S4)])
d = f.op("ten.reshape", [f.op("ten.dot_general", ["%q", "%kt"], [Q3, KT], S3, BT)], [S3], S4, "shape = array<i64: 2, 2, 8, 8>")
s4 = f.op("ten.add", [f.op("ten.mul", [d, f.const("0.25", S4)], [S4, S4], S4), "%mask"], [S4, S4], S4)
sm = softmax(f, s4, S4, R4, "0, 1, 2")
eq = f.op("ten.compare", [s4, f.const("0xFFF0000000000000 : f64", S4)], [S4, S4], B4, 'direction = "EQ"')
anyv = f.op("ten.reduce", [f.op("ten.not", [eq], [B4], B4)], [B4], B3, 'dims = array<i64: 3>, kind = "or"')
guard = f.op("ten.not", [f.op("ten.reshape", [anyv], [B3], R4K, "shape = array<i64: 2, 2, 8, 1>")], [R4K], R4K)
g4 = f.op("ten.broadcast", [guard], [R4K], B4, "dims = array<i64: 0, 1, 2, 3>, shape = array<i64: 2, 2, 8, 8>")
safe = f.op("ten.select", [g4, f.const("0.0", S4), sm], [B4, S4, S4], S4)
p3 = f.op("ten.reshape", [safe], [S4], S3, "shape = array<i64: 4, 8, 8>")
out = f.op("ten.dot_general", [p3, "%v"], [S3, Q3], Q3, BT)
cases["safe-softmax"] = f.text(out, Q3, "safe-softmax")

for rule, text in cases.items():
    (OUT / f"{rule}.mlir").write_text(text)
print(f"wrote {len(cases)} cases")
