"""netgraph: a small layer-graph builder that writes ordo-model/1 profiles.

Each layer call appends one op (in forward topological order) with the parameters it reads,
tracks the output shape of every op, and costs the op with a roofline model:

    fwd_us = overhead_us + max(flops / throughput, bytes_moved / memory_bandwidth)
    bwd_us = 2 * fwd_us

FLOPs count a multiply-add as two (conv, linear); elementwise ops, pooling and batch norm
count a few FLOPs per element and are in practice bound by the bytes they move (activations
are float32 and scale with the batch; weights do not). Python standard library only.
"""

import json
import math

DTYPE_BYTES = 4  # float32 activations and parameters


class Cost:
    """The device model: effective FLOP/s, effective memory bytes/s and launch overhead."""

    def __init__(self, tflops, mem_gbps, overhead_us):
        self.flops_per_us = tflops * 1e6
        self.bytes_per_us = mem_gbps * 1e3
        self.overhead_us = overhead_us

    def fwd_us(self, flops, bytes_moved):
        return self.overhead_us + max(flops / self.flops_per_us, bytes_moved / self.bytes_per_us)


class T:
    """An op's output: the op's name and the per-sample shape (C, H, W) or (N,)."""

    def __init__(self, op, shape):
        self.op = op
        self.shape = tuple(shape)

    def numel(self):
        return math.prod(self.shape)


def _out_size(size, k, stride, pad, ceil_mode=False):
    span = size + 2 * pad - k
    if ceil_mode:
        out = -(-span // stride) + 1
        # PyTorch: the last window must start inside the input or the left padding.
        if (out - 1) * stride >= size + pad:
            out -= 1
    else:
        out = span // stride + 1
    if out < 1:
        raise ValueError("layer leaves no output (size %d, kernel %d)" % (size, k))
    return out


class Graph:
    """Builds one model: params in creation order, ops in forward order."""

    def __init__(self, name, batch, cost):
        self.name = name
        self.batch = batch
        self.cost = cost
        self.params = []  # (name, shape)
        self.ops = []  # dict(name, inputs, params, fwd_us, bwd_us)
        self._names = set()
        self._pnames = set()

    # ---------------------------------------------------------------- primitives

    def param(self, name, shape):
        if name in self._pnames:
            raise ValueError("duplicate parameter " + name)
        self._pnames.add(name)
        self.params.append((name, list(shape)))
        return name

    def op(self, name, inputs, params, out_shape, flops, bytes_moved, fwd_us=None, bwd_us=None):
        """Appends an op; times come from the cost model unless given."""
        if name in self._names:
            raise ValueError("duplicate op " + name)
        self._names.add(name)
        if fwd_us is None:
            fwd_us = self.cost.fwd_us(flops, bytes_moved)
        fwd_us = round(fwd_us, 3)  # whole nanoseconds, so bwd is exactly 2x in the file
        bwd_us = round(2 * fwd_us if bwd_us is None else bwd_us, 3)
        self.ops.append({"name": name, "inputs": [t.op for t in inputs], "params": list(params),
                         "fwd_us": fwd_us, "bwd_us": bwd_us})
        return T(name, out_shape)

    def _act_bytes(self, *ts):
        return sum(t.numel() if isinstance(t, T) else t for t in ts) * self.batch * DTYPE_BYTES

    # ---------------------------------------------------------------- layers

    def conv(self, name, x, cout, k, stride=1, pad=0, bias=True, pname=None):
        """Conv2d weight [cout, cin, k, k] (+ bias [cout]); pname names the module."""
        pname = pname or name
        cin, h, w = x.shape
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        ho, wo = _out_size(h, kh, stride, ph), _out_size(w, kw, stride, pw)
        ps = [self.param(pname + ".weight", [cout, cin, kh, kw])]
        if bias:
            ps.append(self.param(pname + ".bias", [cout]))
        out = (cout, ho, wo)
        macs = cout * ho * wo * cin * kh * kw * self.batch
        wbytes = cout * cin * kh * kw * DTYPE_BYTES
        return self.op(name, [x], ps, out, 2 * macs,
                       self._act_bytes(x, math.prod(out)) + wbytes)

    def bn(self, name, x, pname=None):
        """BatchNorm2d: weight and bias [C] are parameters; running stats are not."""
        pname = pname or name
        c = x.shape[0]
        ps = [self.param(pname + ".weight", [c]), self.param(pname + ".bias", [c])]
        # training-mode BN reads x twice (statistics, normalize) and writes y
        return self.op(name, [x], ps, x.shape, 4 * x.numel() * self.batch,
                       self._act_bytes(x, x, x))

    def relu(self, name, x):
        return self.op(name, [x], [], x.shape, x.numel() * self.batch, self._act_bytes(x, x))

    def dropout(self, name, x):
        return self.op(name, [x], [], x.shape, 2 * x.numel() * self.batch,
                       self._act_bytes(x, x, x))

    def _pool(self, name, x, k, stride, pad, ceil_mode):
        c, h, w = x.shape
        out = (c, _out_size(h, k, stride, pad, ceil_mode), _out_size(w, k, stride, pad, ceil_mode))
        flops = math.prod(out) * k * k * self.batch
        return self.op(name, [x], [], out, flops, self._act_bytes(x, math.prod(out)))

    def maxpool(self, name, x, k, stride, pad=0, ceil_mode=False):
        return self._pool(name, x, k, stride, pad, ceil_mode)

    def avgpool(self, name, x, k, stride, pad=0, ceil_mode=False):
        return self._pool(name, x, k, stride, pad, ceil_mode)

    def adaptive_avgpool(self, name, x, size):
        c, h, w = x.shape
        out = (c, size, size)
        return self.op(name, [x], [], out, x.numel() * self.batch,
                       self._act_bytes(x, math.prod(out)))

    def linear(self, name, x, nout, bias=True, pname=None):
        """Linear weight [out, in] (+ bias [out]) over the flattened input."""
        pname = pname or name
        nin = x.numel()
        ps = [self.param(pname + ".weight", [nout, nin])]
        if bias:
            ps.append(self.param(pname + ".bias", [nout]))
        macs = nin * nout * self.batch
        return self.op(name, [x], ps, (nout,), 2 * macs,
                       self._act_bytes(nin, nout) + nin * nout * DTYPE_BYTES)

    def add(self, name, a, b):
        return self.op(name, [a, b], [], a.shape, a.numel() * self.batch,
                       self._act_bytes(a, b, a))

    def concat(self, name, xs):
        """Concatenation along channels; copies every input once."""
        c = sum(t.shape[0] for t in xs)
        out = (c,) + xs[0].shape[1:]
        for t in xs:
            if t.shape[1:] != xs[0].shape[1:]:
                raise ValueError("%s: spatial sizes differ" % name)
        return self.op(name, xs, [], out, 0, 2 * self._act_bytes(math.prod(out)))

    # ---------------------------------------------------------------- output

    def totals(self):
        numel = sum(math.prod(s) for _, s in self.params)
        fwd = sum(o["fwd_us"] for o in self.ops)
        bwd = sum(o["bwd_us"] for o in self.ops)
        return {"tensors": len(self.params), "params": numel,
                "mib": numel * DTYPE_BYTES / 2**20, "ops": len(self.ops),
                "fwd_ms": fwd / 1e3, "bwd_ms": bwd / 1e3}

    def to_json(self):
        """The ordo-model/1 text: one parameter or op per line, times rounded to 1 ns."""
        def num(x):
            r = round(x, 3)
            return str(int(r)) + ".0" if r == int(r) else repr(r)

        lines = ['{"format": "ordo-model/1", "name": %s, "batch": %d, "dtype": "float32",'
                 % (json.dumps(self.name), self.batch), ' "params": [']
        for i, (n, s) in enumerate(self.params):
            sep = "," if i + 1 < len(self.params) else ""
            lines.append('  {"name": %s, "shape": %s}%s' % (json.dumps(n), json.dumps(s), sep))
        lines.append(' ],')
        lines.append(' "ops": [')
        for i, o in enumerate(self.ops):
            sep = "," if i + 1 < len(self.ops) else ""
            lines.append('  {"name": %s, "inputs": %s, "params": %s, "fwd_us": %s, "bwd_us": %s}%s'
                         % (json.dumps(o["name"]), json.dumps(o["inputs"]),
                            json.dumps(o["params"]), num(o["fwd_us"]), num(o["bwd_us"]), sep))
        lines.append(' ]')
        lines.append('}')
        return "\n".join(lines) + "\n"
