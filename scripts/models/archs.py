"""archs: the architectures of ordo's model profiles, layer by layer.

Parameter shapes and names follow the reference definitions (torchvision for AlexNet, VGG-16,
GoogLeNet, ResNet-50 and DenseNet-121; the Caffe BN-Inception as ported in Cadene's
pretrained-models.pytorch `bninception` for inception_v2), so that parameter names match the
reference state_dict keys (minus BN running statistics, which are not parameters). Input
images are 3x224x224. Python standard library only.
"""

from netgraph import Graph, T

IMAGE = (3, 224, 224)


def _image():
    """The input image: no op produces it, so the layer reading it gets no input."""
    return T(None, IMAGE)


def _drop_image_inputs(g):
    # The first layer reads the image, which is not an op: remove that placeholder.
    for o in g.ops:
        o["inputs"] = [i for i in o["inputs"] if i is not None]


# ------------------------------------------------------------------------- AlexNet

def alexnet(cost, batch):
    """torchvision.models.alexnet (the one-GPU variant): 61,100,840 parameters."""
    g = Graph("alexnet", batch, cost)
    x = _image()
    x = g.conv("features.0", x, 64, 11, 4, 2)
    x = g.relu("features.1", x)
    x = g.maxpool("features.2", x, 3, 2)
    x = g.conv("features.3", x, 192, 5, 1, 2)
    x = g.relu("features.4", x)
    x = g.maxpool("features.5", x, 3, 2)
    x = g.conv("features.6", x, 384, 3, 1, 1)
    x = g.relu("features.7", x)
    x = g.conv("features.8", x, 256, 3, 1, 1)
    x = g.relu("features.9", x)
    x = g.conv("features.10", x, 256, 3, 1, 1)
    x = g.relu("features.11", x)
    x = g.maxpool("features.12", x, 3, 2)
    x = g.adaptive_avgpool("avgpool", x, 6)
    x = g.dropout("classifier.0", x)
    x = g.linear("classifier.1", x, 4096)
    x = g.relu("classifier.2", x)
    x = g.dropout("classifier.3", x)
    x = g.linear("classifier.4", x, 4096)
    x = g.relu("classifier.5", x)
    g.linear("classifier.6", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- VGG-16

def vgg16(cost, batch):
    """torchvision.models.vgg16 (configuration D, no batch norm): 138,357,544 parameters."""
    g = Graph("vgg16", batch, cost)
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    x, i = _image(), 0
    for v in cfg:
        if v == "M":
            x = g.maxpool("features.%d" % i, x, 2, 2)
            i += 1
        else:
            x = g.conv("features.%d" % i, x, v, 3, 1, 1)
            x = g.relu("features.%d" % (i + 1), x)
            i += 2
    x = g.adaptive_avgpool("avgpool", x, 7)
    x = g.linear("classifier.0", x, 4096)
    x = g.relu("classifier.1", x)
    x = g.dropout("classifier.2", x)
    x = g.linear("classifier.3", x, 4096)
    x = g.relu("classifier.4", x)
    x = g.dropout("classifier.5", x)
    g.linear("classifier.6", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- ResNet-50

def resnet50(cost, batch):
    """torchvision.models.resnet50 (v1.5: stride on the 3x3 conv): 25,557,032 parameters
    in 161 tensors."""
    g = Graph("resnet50", batch, cost)
    x = g.conv("conv1", _image(), 64, 7, 2, 3, bias=False)
    x = g.bn("bn1", x)
    x = g.relu("relu", x)
    x = g.maxpool("maxpool", x, 3, 2, 1)
    inplanes = 64
    for li, (planes, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                   (512, 3, 2)], start=1):
        for b in range(blocks):
            p = "layer%d.%d." % (li, b)
            s = stride if b == 0 else 1
            identity = x
            y = g.conv(p + "conv1", x, planes, 1, bias=False)
            y = g.bn(p + "bn1", y)
            y = g.relu(p + "relu1", y)
            y = g.conv(p + "conv2", y, planes, 3, s, 1, bias=False)
            y = g.bn(p + "bn2", y)
            y = g.relu(p + "relu2", y)
            y = g.conv(p + "conv3", y, planes * 4, 1, bias=False)
            y = g.bn(p + "bn3", y)
            if b == 0 and (s != 1 or inplanes != planes * 4):
                identity = g.conv(p + "downsample.0", x, planes * 4, 1, s, bias=False)
                identity = g.bn(p + "downsample.1", identity)
            y = g.add(p + "add", y, identity)
            x = g.relu(p + "relu3", y)
            inplanes = planes * 4
    x = g.adaptive_avgpool("avgpool", x, 1)
    g.linear("fc", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- DenseNet-121

def densenet121(cost, batch):
    """torchvision.models.densenet121 (growth 32, blocks 6-12-24-16, bn_size 4):
    7,978,856 parameters."""
    g = Graph("densenet121", batch, cost)
    x = g.conv("features.conv0", _image(), 64, 7, 2, 3, bias=False)
    x = g.bn("features.norm0", x)
    x = g.relu("features.relu0", x)
    x = g.maxpool("features.pool0", x, 3, 2, 1)
    growth, bn_size = 32, 4
    for bi, layers in enumerate([6, 12, 24, 16], start=1):
        feats = [x]
        for li in range(1, layers + 1):
            p = "features.denseblock%d.denselayer%d." % (bi, li)
            # torchvision concatenates all earlier features at the start of every layer
            y = feats[0] if len(feats) == 1 else g.concat(p + "concat", feats)
            y = g.bn(p + "norm1", y)
            y = g.relu(p + "relu1", y)
            y = g.conv(p + "conv1", y, bn_size * growth, 1, bias=False)
            y = g.bn(p + "norm2", y)
            y = g.relu(p + "relu2", y)
            y = g.conv(p + "conv2", y, growth, 3, 1, 1, bias=False)
            feats.append(y)
        x = g.concat("features.denseblock%d.concat" % bi, feats)
        if bi < 4:
            p = "features.transition%d." % bi
            x = g.bn(p + "norm", x)
            x = g.relu(p + "relu", x)
            x = g.conv(p + "conv", x, x.shape[0] // 2, 1, bias=False)
            x = g.avgpool(p + "pool", x, 2, 2)
    x = g.bn("features.norm5", x)
    x = g.relu("relu", x)
    x = g.adaptive_avgpool("avgpool", x, 1)
    g.linear("classifier", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- GoogLeNet

def _basic_conv(g, name, x, cout, k, stride=1, pad=0):
    """torchvision BasicConv2d: conv (no bias), BatchNorm (eps 0.001), ReLU."""
    x = g.conv(name + ".conv", x, cout, k, stride, pad, bias=False)
    x = g.bn(name + ".bn", x)
    return g.relu(name + ".relu", x)


def _googlenet_inception(g, name, x, c1, c3r, c3, c5r, c5, pp):
    b1 = _basic_conv(g, name + ".branch1", x, c1, 1)
    b2 = _basic_conv(g, name + ".branch2.0", x, c3r, 1)
    b2 = _basic_conv(g, name + ".branch2.1", b2, c3, 3, 1, 1)
    b3 = _basic_conv(g, name + ".branch3.0", x, c5r, 1)
    # torchvision uses a 3x3 (not 5x5) kernel here, a known quirk kept for its weights
    b3 = _basic_conv(g, name + ".branch3.1", b3, c5, 3, 1, 1)
    b4 = g.maxpool(name + ".branch4.0", x, 3, 1, 1, ceil_mode=True)
    b4 = _basic_conv(g, name + ".branch4.1", b4, pp, 1)
    return g.concat(name + ".concat", [b1, b2, b3, b4])


def googlenet(cost, batch):
    """torchvision.models.googlenet without the auxiliary heads (aux_logits=False):
    6,624,904 parameters."""
    g = Graph("googlenet", batch, cost)
    x = _basic_conv(g, "conv1", _image(), 64, 7, 2, 3)
    x = g.maxpool("maxpool1", x, 3, 2, ceil_mode=True)
    x = _basic_conv(g, "conv2", x, 64, 1)
    x = _basic_conv(g, "conv3", x, 192, 3, 1, 1)
    x = g.maxpool("maxpool2", x, 3, 2, ceil_mode=True)
    x = _googlenet_inception(g, "inception3a", x, 64, 96, 128, 16, 32, 32)
    x = _googlenet_inception(g, "inception3b", x, 128, 128, 192, 32, 96, 64)
    x = g.maxpool("maxpool3", x, 3, 2, ceil_mode=True)
    x = _googlenet_inception(g, "inception4a", x, 192, 96, 208, 16, 48, 64)
    x = _googlenet_inception(g, "inception4b", x, 160, 112, 224, 24, 64, 64)
    x = _googlenet_inception(g, "inception4c", x, 128, 128, 256, 24, 64, 64)
    x = _googlenet_inception(g, "inception4d", x, 112, 144, 288, 32, 64, 64)
    x = _googlenet_inception(g, "inception4e", x, 256, 160, 320, 32, 128, 128)
    x = g.maxpool("maxpool4", x, 2, 2, ceil_mode=True)
    x = _googlenet_inception(g, "inception5a", x, 256, 160, 320, 32, 128, 128)
    x = _googlenet_inception(g, "inception5b", x, 384, 192, 384, 48, 128, 128)
    x = g.adaptive_avgpool("avgpool", x, 1)
    x = g.dropout("dropout", x)
    g.linear("fc", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- BN-Inception

def _cbr(g, name, x, cout, k, stride=1, pad=0):
    """Caffe BN-Inception unit: conv (with bias), BatchNorm, ReLU."""
    x = g.conv(name, x, cout, k, stride, pad, bias=True)
    x = g.bn(name + "_bn", x)
    return g.relu(name + "_relu", x)


def _bn_inception_block(g, name, x, c1, c3r, c3, d3r, d3, pool, pp, stride=1):
    """One BN-Inception module (Ioffe & Szegedy 2015, Figure 5). stride 2 modules have no
    1x1 branch and a max-pool branch without projection."""
    p = "inception_" + name + "_"
    outs = []
    if c1:
        outs.append(_cbr(g, p + "1x1", x, c1, 1))
    b = _cbr(g, p + "3x3_reduce", x, c3r, 1)
    outs.append(_cbr(g, p + "3x3", b, c3, 3, stride, 1))
    b = _cbr(g, p + "double_3x3_reduce", x, d3r, 1)
    b = _cbr(g, p + "double_3x3_1", b, d3, 3, 1, 1)
    outs.append(_cbr(g, p + "double_3x3_2", b, d3, 3, stride, 1))
    if stride == 2:
        outs.append(g.maxpool(p + "pool", x, 3, 2, ceil_mode=True))
    else:
        if pool == "avg":
            b = g.avgpool(p + "pool", x, 3, 1, 1, ceil_mode=True)
        else:
            b = g.maxpool(p + "pool", x, 3, 1, 1, ceil_mode=True)
        outs.append(_cbr(g, p + "pool_proj", b, pp, 1))
    return g.concat(p + "output", outs)


def inception_v2(cost, batch):
    """BN-Inception (Ioffe & Szegedy 2015, Figure 5), the Caffe model as ported in
    pretrained-models.pytorch `bninception`: every conv has a bias and a BatchNorm."""
    g = Graph("inception_v2", batch, cost)
    x = _cbr(g, "conv1_7x7_s2", _image(), 64, 7, 2, 3)
    x = g.maxpool("pool1_3x3_s2", x, 3, 2, ceil_mode=True)
    x = _cbr(g, "conv2_3x3_reduce", x, 64, 1)
    x = _cbr(g, "conv2_3x3", x, 192, 3, 1, 1)
    x = g.maxpool("pool2_3x3_s2", x, 3, 2, ceil_mode=True)
    #                                 1x1  3x3r 3x3  d3r  d3   pool   proj
    x = _bn_inception_block(g, "3a", x, 64, 64, 64, 64, 96, "avg", 32)
    x = _bn_inception_block(g, "3b", x, 64, 64, 96, 64, 96, "avg", 64)
    x = _bn_inception_block(g, "3c", x, 0, 128, 160, 64, 96, "max", 0, stride=2)
    x = _bn_inception_block(g, "4a", x, 224, 64, 96, 96, 128, "avg", 128)
    x = _bn_inception_block(g, "4b", x, 192, 96, 128, 96, 128, "avg", 128)
    x = _bn_inception_block(g, "4c", x, 160, 128, 160, 128, 160, "avg", 128)
    x = _bn_inception_block(g, "4d", x, 96, 128, 192, 160, 192, "avg", 128)
    x = _bn_inception_block(g, "4e", x, 0, 128, 192, 192, 256, "max", 0, stride=2)
    x = _bn_inception_block(g, "5a", x, 352, 192, 320, 160, 224, "avg", 128)
    x = _bn_inception_block(g, "5b", x, 352, 192, 320, 192, 224, "max", 128)
    x = g.avgpool("global_pool", x, 7, 1)
    g.linear("fc", x, 1000)
    _drop_image_inputs(g)
    return g


# ------------------------------------------------------------------------- synthetic

PAR_SEQ_N = 32
PAR_SEQ_NUMEL = 524288  # 2 MiB of float32
PAR_SEQ_FWD_US = 1000.0
PAR_SEQ_BWD_US = 2000.0


def par32(cost, batch):
    """32 independent ops op0..op31, op i reads p_i ([524288] float32, 2 MiB); a final op
    `sum` joins them. Every op takes 1000 us forward, 2000 us backward."""
    g = Graph("par32", 1, cost)
    ops = []
    for i in range(PAR_SEQ_N):
        p = g.param("p%d" % i, [PAR_SEQ_NUMEL])
        ops.append(g.op("op%d" % i, [], [p], (1,), 0, 0, PAR_SEQ_FWD_US, PAR_SEQ_BWD_US))
    g.op("sum", ops, [], (1,), 0, 0, PAR_SEQ_FWD_US, PAR_SEQ_BWD_US)
    return g


def seq32(cost, batch):
    """A chain op0 -> op1 -> ... -> op31, op i reads p_i ([524288] float32, 2 MiB); every
    op takes 1000 us forward, 2000 us backward."""
    g = Graph("seq32", 1, cost)
    prev = []
    for i in range(PAR_SEQ_N):
        p = g.param("p%d" % i, [PAR_SEQ_NUMEL])
        prev = [g.op("op%d" % i, prev, [p], (1,), 0, 0, PAR_SEQ_FWD_US, PAR_SEQ_BWD_US)]
    return g


SMALLMANY_LAYERS = 160
SMALLMANY_COLS = 128
SMALLMANY_FWD_US = 50.0
SMALLMANY_BWD_US = 100.0


def smallmany_rows(i):
    """Rows of layer i's weight: 80..390, so each tensor has 10,240..49,920 elements."""
    return 80 + (i * 37) % 311


def smallmany(cost, batch):
    """160 chained layers, layer i reads one weight l<i>.weight [rows_i, 128] of 10-50 K
    float32 elements; every layer takes 50 us forward, 100 us backward, so per-message
    startup dominates unmerged gradient pushes."""
    g = Graph("smallmany", batch, cost)
    prev = []
    for i in range(SMALLMANY_LAYERS):
        p = g.param("l%d.weight" % i, [smallmany_rows(i), SMALLMANY_COLS])
        prev = [g.op("l%d" % i, prev, [p], (1,), 0, 0, SMALLMANY_FWD_US, SMALLMANY_BWD_US)]
    return g


# ------------------------------------------------------------------------- Transformer encoders


def _tlinear(g, name, x, nout):
    """A Linear applied to every token of x (seq, nin): weight [nout, nin], bias [nout]."""
    seq, nin = x.shape
    ps = [g.param(name + ".weight", [nout, nin]), g.param(name + ".bias", [nout])]
    macs = seq * nin * nout * g.batch
    return g.op(name, [x], ps, (seq, nout), 2 * macs,
                g._act_bytes(seq * nin, seq * nout) + nin * nout * 4)


def _layernorm(g, name, x):
    h = x.shape[-1]
    ps = [g.param(name + ".weight", [h]), g.param(name + ".bias", [h])]
    return g.op(name, [x], ps, x.shape, 5 * x.numel() * g.batch, g._act_bytes(x, x, x))


def _encoder(name, cost, batch, hidden, layers, ffn, vocab, seq, heads):
    """A BERT encoder (Devlin et al. 2019, HuggingFace BertModel's names and shapes) over
    sequences of seq tokens: embeddings (word, position, token type, LayerNorm), `layers`
    layers of self-attention (query, key, value, scores and context as one op, output
    projection, LayerNorm) and feed-forward (intermediate, GELU, output, LayerNorm), and the
    pooler."""
    g = Graph(name, batch, cost)
    e = "embeddings."
    ps = [g.param(e + "word_embeddings.weight", [vocab, hidden]),
          g.param(e + "position_embeddings.weight", [512, hidden]),
          g.param(e + "token_type_embeddings.weight", [2, hidden])]
    x = g.op("embeddings", [], ps, (seq, hidden), 3 * seq * hidden * batch,
             g._act_bytes(3 * seq * hidden, seq * hidden))
    x = _layernorm(g, e + "LayerNorm", x)
    for i in range(layers):
        p = "encoder.layer.%d." % i
        q = _tlinear(g, p + "attention.self.query", x, hidden)
        k = _tlinear(g, p + "attention.self.key", x, hidden)
        v = _tlinear(g, p + "attention.self.value", x, hidden)
        # scores = q k^T per head, softmax, context = scores v: 2 seq^2 hidden MACs
        ctx = g.op(p + "attention.self.context", [q, k, v], [], (seq, hidden),
                   4 * seq * seq * hidden * batch,
                   g._act_bytes(3 * seq * hidden, heads * seq * seq * 2, seq * hidden))
        y = _tlinear(g, p + "attention.output.dense", ctx, hidden)
        y = g.add(p + "attention.add", y, x)
        x = _layernorm(g, p + "attention.output.LayerNorm", y)
        y = _tlinear(g, p + "intermediate.dense", x, ffn)
        y = g.op(p + "intermediate.gelu", [y], [], y.shape, 8 * y.numel() * batch,
                 g._act_bytes(y, y))
        y = _tlinear(g, p + "output.dense", y, hidden)
        y = g.add(p + "output.add", y, x)
        x = _layernorm(g, p + "output.LayerNorm", y)
    first = T(x.op, (1, hidden))  # the pooler reads the first token only
    _tlinear(g, "pooler.dense", first, hidden)
    return g


def transformer(cost, batch):
    """A small BERT-style encoder for the validation runs (docs/planning.md): 6 layers,
    hidden 512, 8 heads, feed-forward 2048, a vocabulary of 8,000, sequences of 128 tokens;
    23,537,152 parameters in 103 tensors."""
    return _encoder("transformer", cost, batch, 512, 6, 2048, 8000, 128, 8)


def bert_large(cost, batch):
    """BERT-large (uncased): 24 layers, hidden 1024, 16 heads, feed-forward 4096, a vocabulary
    of 30,522, sequences of 128 tokens (pre-training phase 1); 335,141,888 parameters in 391
    tensors (the masked-LM head, tied to the word embeddings, is left out)."""
    return _encoder("bert_large", cost, batch, 1024, 24, 4096, 30522, 128, 16)


MODELS = {
    "alexnet": alexnet,
    "vgg16": vgg16,
    "googlenet": googlenet,
    "inception_v2": inception_v2,
    "resnet50": resnet50,
    "densenet121": densenet121,
    "par32": par32,
    "seq32": seq32,
    "smallmany": smallmany,
    "transformer": transformer,
    "bert_large": bert_large,
}
