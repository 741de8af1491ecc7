#!/usr/bin/python3
"""tools/quantize_onnx_int8.py - int8 variants of tools/export_onnx.py's
float32 BERT graph for ONNX Runtime, built with the onnx package alone (the
int8 reference of bench/compare.sh).

    /usr/bin/python3 tools/quantize_onnx_int8.py --model DIR/model.onnx --out DIR
        [--variants tensor,channel,dqmm,qattention] [--heads N]

The weights are bertc quantize's (nn/quantize.c, tensor/qgemm.c): every
MatMul of the encoder whose B is a constant 2-D initializer (K, N) - the 72
Linears of BERT-base, the same ones bertc quantises - gets int8 weights,
symmetric, zero point 0, scale = amax / 127 per output channel (a column of
B; 'tensor': one amax over the whole matrix), q = round-half-even(clamp(w *
(1 / scale), -127, 127)) in float32, as bertc_qgemm_quantize_one. Every
other node stays float32 (embeddings, LayerNorm, softmax, GELU, the attention
products).

The activations are ONNX Runtime's own dynamic quantisation: per tensor,
asymmetric uint8 (DynamicQuantizeLinear: scale = (max(x, 0) - min(x, 0)) /
255 over the whole (B, S, K) input), where bertc quantises per row,
symmetric int8: ORT has no per-row dynamic activation scale, so its int8
rounds the activations more coarsely and the cosines of the two differ.

Variants (DIR/int8-VARIANT.onnx each):
  tensor      DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zp, 0)
              -> Cast -> Mul(x_scale * w_scale): the graph ORT's own
              quantize_dynamic writes (per-tensor weights); ORT fuses it
              into MatMulIntegerToFloat / DynamicQuantizeMatMul at
              'extended' and 'all'. One DynamicQuantizeLinear per input
              tensor (Q, K and V share theirs). The bias Add stays.
  channel     the same with per-output-channel weight scales (a 1-D w_scale
              and w_zero_point of N): bertc's weights.
  dqmm        com.microsoft.DynamicQuantizeMatMul(x, W_q, w_scale, 0, bias)
              directly, per channel, the bias Add folded in.
  qattention  each layer's self-attention (the Q, K, V MatMuls and bias
              Adds, the reshapes, scores, scale, mask, softmax and context)
              becomes one com.microsoft.QAttention on the DynamicQuantize-
              Linear of its input, per-channel weights [Wq | Wk | Wv] and
              bias [bq | bk | bv], mask_index = attention_mask as int32;
              the other MatMuls as 'dqmm'.
Prints one line per variant written:
  variant NAME file PATH int8_matmuls N qattention M
Needs Debian's python3-onnx and numpy (/usr/bin/python3)."""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VARIANTS = ("tensor", "channel", "dqmm", "qattention")


def quantize_weight(w, per_channel):
    """(K, N) float32 -> int8 q and float32 scale ((N,) or scalar): bertc's rounding."""
    w = w.astype(np.float32)
    amax = np.abs(w).max(axis=0) if per_channel else np.array(np.abs(w).max(), np.float32)
    amax = amax.astype(np.float32)
    ok = amax >= np.float32(1e-30)                     # BERTC_QUANT_MIN_AMAX
    scale = np.where(ok, amax / np.float32(127.0), np.float32(1.0)).astype(np.float32)
    inv = np.where(ok, np.float32(1.0) / scale, np.float32(0.0)).astype(np.float32)
    v = np.clip(w * inv, np.float32(-127.0), np.float32(127.0))
    return np.rint(v).astype(np.int8), scale


class Graph:
    """The model's graph with name lookups, rebuilt into a new node list."""

    def __init__(self, model):
        self.model = model
        self.g = model.graph
        self.inits = {i.name: i for i in self.g.initializer}
        self.consts = {}               # Constant nodes' outputs -> numpy
        for n in self.g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
        self.producer = {o: n for n in self.g.node for o in n.output}
        self.consumers = {}
        for n in self.g.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.new_inits = []
        self.added = []                # nodes to insert, in order
        self.removed = set()           # id() of nodes to drop
        self.dql = {}                  # input name -> (q, scale, zp)
        self.uid = 0

    def value(self, name):
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        return self.consts.get(name)

    def name(self, base):
        self.uid += 1
        return "%s_q8_%d" % (base, self.uid)

    def init(self, base, arr):
        n = self.name(base)
        self.new_inits.append(numpy_helper.from_array(arr, n))
        return n

    def only_consumer(self, name):
        c = self.consumers.get(name, [])
        return c[0] if len(c) == 1 and name not in [o.name for o in self.g.output] else None

    def quantize_input(self, x):
        """DynamicQuantizeLinear of tensor x, once per tensor."""
        if x not in self.dql:
            q, s, z = self.name(x + "_u8"), self.name(x + "_scale"), self.name(x + "_zp")
            self.added.append(helper.make_node("DynamicQuantizeLinear", [x], [q, s, z],
                                               name=self.name("DynamicQuantizeLinear")))
            self.dql[x] = (q, s, z)
        return self.dql[x]

    def weight_matmuls(self):
        """MatMul nodes whose B is a constant 2-D float initializer."""
        out = []
        for n in self.g.node:
            if n.op_type == "MatMul" and n.input[1] in self.inits:
                w = self.inits[n.input[1]]
                if len(w.dims) == 2 and w.data_type == TensorProto.FLOAT:
                    out.append(n)
        return out

    def bias_add(self, mm):
        """The Add after MatMul mm with a 1-D constant of N: (add node, bias name)."""
        add = self.only_consumer(mm.output[0])
        if add is None or add.op_type != "Add":
            return None, None
        other = add.input[0] if add.input[1] == mm.output[0] else add.input[1]
        b = self.value(other)
        n_out = self.inits[mm.input[1]].dims[1]
        if other in self.inits and b is not None and b.ndim == 1 and b.shape[0] == n_out:
            return add, other
        return None, None

    def integer_matmul(self, mm, per_channel):
        """DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul in place of mm."""
        w = numpy_helper.to_array(self.inits[mm.input[1]])
        q, scale = quantize_weight(w, per_channel)
        zp = np.zeros(scale.shape, np.int8)
        xq, xs, xz = self.quantize_input(mm.input[0])
        wq = self.init(mm.input[1] + "_int8", q)
        ws = self.init(mm.input[1] + "_scale", scale)
        wz = self.init(mm.input[1] + "_zp", zp)
        acc, f, s = self.name("acc"), self.name("accf"), self.name("scale")
        base = mm.name or mm.output[0]
        self.added += [
            helper.make_node("MatMulInteger", [xq, wq, xz, wz], [acc], name=base + "_int8"),
            helper.make_node("Cast", [acc], [f], to=TensorProto.FLOAT, name=base + "_cast"),
            helper.make_node("Mul", [xs, ws], [s], name=base + "_scale_mul"),
            helper.make_node("Mul", [f, s], [mm.output[0]], name=base + "_dequant"),
        ]
        self.removed.add(id(mm))

    def dq_matmul(self, mm):
        """com.microsoft.DynamicQuantizeMatMul (per channel, bias folded) in place of mm."""
        w = numpy_helper.to_array(self.inits[mm.input[1]])
        q, scale = quantize_weight(w, True)
        wq = self.init(mm.input[1] + "_int8", q)
        ws = self.init(mm.input[1] + "_scale", scale)
        wz = self.init(mm.input[1] + "_zp", np.zeros(scale.shape, np.int8))
        add, bias = self.bias_add(mm)
        ins, out = [mm.input[0], wq, ws, wz], mm.output[0]
        if add is not None:
            ins.append(bias)
            out = add.output[0]
            self.removed.add(id(add))
        self.added.append(helper.make_node("DynamicQuantizeMatMul", ins, [out],
                                           domain="com.microsoft",
                                           name=(mm.name or out) + "_dqmm"))
        self.removed.add(id(mm))

    def attention(self, softmax, heads, mask_i32):
        """One self-attention block around softmax -> QAttention, or None
        (the pattern is not tools/bert_ref.py's export)."""
        def prod(name, op):
            n = self.producer.get(name)
            return n if n is not None and n.op_type == op else None

        def projection(t_name):
            """Transpose <- Reshape <- Add(bias) <- MatMul(x, W): (x, W, b, nodes)."""
            tr = prod(t_name, "Transpose")
            rs = tr and prod(tr.input[0], "Reshape")
            add = rs and prod(rs.input[0], "Add")
            if add is None:
                return None
            for mi, bi in ((0, 1), (1, 0)):
                mm = prod(add.input[mi], "MatMul")
                if mm is not None and mm.input[1] in self.inits and add.input[bi] in self.inits:
                    return mm.input[0], mm.input[1], add.input[bi], [tr, rs, add, mm]
            return None

        madd = prod(softmax.input[0], "Add")
        if madd is None:
            return None
        div = prod(madd.input[0], "Div") or prod(madd.input[1], "Div")
        if div is None:
            return None
        scores = prod(div.input[0], "MatMul")
        ctx_mm = self.only_consumer(softmax.output[0])
        if scores is None or ctx_mm is None or ctx_mm.op_type != "MatMul":
            return None
        ctx_tr = self.only_consumer(ctx_mm.output[0])
        # the context's Reshape; the export's other consumers of the
        # Transpose (Shape -> Gather, the Reshape's dynamic shape) go dead
        reshapes = [c for c in self.consumers.get(ctx_tr.output[0], []) if c.op_type == "Reshape"] \
            if ctx_tr is not None else []
        ctx_rs = reshapes[0] if len(reshapes) == 1 else None
        if ctx_tr is None or ctx_tr.op_type != "Transpose" or ctx_rs is None or \
                ctx_rs.op_type != "Reshape":
            return None
        q, k, v = projection(scores.input[0]), projection(scores.input[1]), \
            projection(ctx_mm.input[1])
        if not (q and k and v) or not (q[0] == k[0] == v[0]):
            return None
        x = q[0]
        w = np.concatenate([numpy_helper.to_array(self.inits[p[1]]) for p in (q, k, v)], axis=1)
        b = np.concatenate([numpy_helper.to_array(self.inits[p[2]]) for p in (q, k, v)])
        hidden = w.shape[1] // 3
        heads = heads or max(hidden // 64, 1)
        d = self.value(div.input[1])
        head = hidden // heads
        if d is None or abs(float(np.asarray(d).reshape(-1)[0]) - np.sqrt(head)) > 1e-3:
            return None                # QAttention scales by 1 / sqrt(head size)
        wq, scale = quantize_weight(w, True)
        xq, xs, xz = self.quantize_input(x)
        ins = [xq, self.init("qkv_int8", wq), self.init("qkv_bias", b.astype(np.float32)), xs,
               self.init("qkv_scale", scale), mask_i32, xz,
               self.init("qkv_zp", np.zeros(scale.shape, np.int8))]
        self.added.append(helper.make_node("QAttention", ins, [ctx_rs.output[0]],
                                           domain="com.microsoft", num_heads=heads,
                                           name=(softmax.name or "attn") + "_qattention"))
        for n in [madd, div, scores, softmax, ctx_mm, ctx_tr, ctx_rs] + q[3] + k[3] + v[3]:
            self.removed.add(id(n))
        return True

    def finish(self):
        """The new node list (added nodes before their first consumer, so
        topologically sorted), dead nodes and unused initializers dropped."""
        keep = [n for n in self.g.node if id(n) not in self.removed]
        nodes = topo_sort(keep + self.added, self.g)
        nodes = drop_dead(nodes, self.g)
        used = {i for n in nodes for i in n.input} | {o.name for o in self.g.output}
        inits = [i for i in list(self.g.initializer) + self.new_inits if i.name in used]
        del self.g.node[:]
        self.g.node.extend(nodes)
        del self.g.initializer[:]
        self.g.initializer.extend(inits)
        if not any(o.domain == "com.microsoft" for o in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def topo_sort(nodes, g):
    have = {i.name for i in g.input} | {i.name for i in g.initializer} | {""}
    have |= {o for n in nodes for o in n.output if n.op_type == "Constant"}
    out, pending = [], list(nodes)
    # initializers added by this tool are named in inputs too: treat any name
    # no node produces as available
    produced = {o for n in nodes for o in n.output}
    while pending:
        rest = []
        for n in pending:
            if all(i in have or i not in produced for i in n.input):
                out.append(n)
                have.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            sys.exit("quantize_onnx_int8.py: the rewritten graph has a cycle or a missing input")
        pending = rest
    return out


def drop_dead(nodes, g):
    need = {o.name for o in g.output}
    out = []
    for n in reversed(nodes):
        if any(o in need for o in n.output):
            out.append(n)
            need.update(n.input)
    return list(reversed(out))


def build(path, variant, heads):
    model = onnx.load(path)
    G = Graph(model)
    n_attn = 0
    if variant == "qattention":
        mask = G.name("attention_mask_i32")
        G.added.append(helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32,
                                        name="attention_mask_cast_i32"))
        for n in list(G.g.node):
            if n.op_type == "Softmax" and G.attention(n, heads, mask):
                n_attn += 1
        if n_attn == 0:
            sys.exit("quantize_onnx_int8.py: no self-attention block matched tools/export_onnx.py's")
    n_mm = 0
    for mm in G.weight_matmuls():
        if id(mm) in G.removed:
            continue
        if variant in ("dqmm", "qattention"):
            G.dq_matmul(mm)
        else:
            G.integer_matmul(mm, variant == "channel")
        n_mm += 1
    G.finish()
    return model, n_mm + 3 * n_attn, n_attn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="tools/export_onnx.py's model.onnx")
    ap.add_argument("--out", required=True, help="directory for int8-VARIANT.onnx")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--heads", type=int, default=0, help="attention heads (default hidden / 64)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for v in a.variants.split(","):
        if v not in VARIANTS:
            sys.exit("quantize_onnx_int8.py: unknown variant %s (%s)" % (v, ", ".join(VARIANTS)))
        model, n_mm, n_attn = build(a.model, v, a.heads)
        onnx.checker.check_model(model)
        out = os.path.join(a.out, "int8-%s.onnx" % v)
        onnx.save(model, out)
        print("variant %s file %s int8_matmuls %d qattention %d onnx %s"
              % (v, out, n_mm, n_attn, onnx.__version__))


if __name__ == "__main__":
    main()
