"""The three small models the adapter is tested with (issue 15) and one
training step for them, importable by other tools (the Paddle benchmarks):

    import models
    model, inputs, target, loss_fn = models.build("cnn")
    losses = models.train("cnn", "oar:0", static=False, steps=4)

- "mlp": Linear 16-32, ReLU, Linear 32-32, Tanh, Linear 32-4; MSE loss.
- "cnn": Conv2D 1->4 3x3 pad 1, ReLU, MaxPool 2, Conv2D 4->8 3x3 pad 1, ReLU,
  AvgPool 2, Flatten, Linear 32-10; cross-entropy loss (10 classes).
- "cnn_bn": the CNN with BatchNorm2D(4) after its first convolution, in
  training mode (batch statistics, running statistics updated).
- "transformer": Embedding 32x16, pre-norm block (LayerNorm, 2-head causal
  self-attention from matmul/softmax with an additive mask, residual,
  LayerNorm, Linear 16-32, GELU, Linear 32-16, residual), LayerNorm, Linear
  16-32 to the vocabulary; next-token cross-entropy.

Every model starts from the same weights on every device (drawn with numpy,
not Paddle's random kernels), so losses can be compared across devices.
"""
import math
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

MODELS = ("mlp", "cnn", "transformer")  # "cnn_bn" builds too (the adapter's tests)
LEARNING_RATE = {"mlp": 0.05, "cnn": 0.05, "transformer": 0.05}


class CNN(nn.Layer):
    """Two 3x3 convolutions (|widths| channels) with pooling, then a linear
    layer to 10 classes; |pooled| is the side of the last feature map (the
    input's side / 4). The defaults are the tests' model (1x8x8 images)."""

    def __init__(self, in_channels=1, widths=(4, 8), pooled=2):
        super().__init__()
        self.conv1 = nn.Conv2D(in_channels, widths[0], 3, padding=1)
        self.pool1 = nn.MaxPool2D(2, 2)
        self.conv2 = nn.Conv2D(widths[0], widths[1], 3, padding=1)
        self.pool2 = nn.AvgPool2D(2, 2)
        self.fc = nn.Linear(widths[1] * pooled * pooled, 10)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        return self.fc(paddle.flatten(x, 1))


class CNNBN(CNN):
    """The CNN with a training-mode BatchNorm2D after the first convolution."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2D(4, momentum=0.8)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn(self.conv1(x))))
        x = self.pool2(F.relu(self.conv2(x)))
        return self.fc(paddle.flatten(x, 1))


class Block(nn.Layer):
    """A pre-norm transformer block over token embeddings, with an LM head."""

    def __init__(self, vocab=32, dim=16, heads=2, seq=8):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.embed = nn.Embedding(vocab, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        # Causal: position i sees positions 0..i. A constant, added to the scores.
        mask = np.triu(np.full((seq, seq), -1e9, dtype=np.float32), 1)
        self.register_buffer("mask", paddle.to_tensor(mask), persistable=False)

    def split(self, t, b, s):
        return paddle.transpose(paddle.reshape(t, [b, s, self.heads, self.dim // self.heads]),
                                [0, 2, 1, 3])

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.embed(tokens)
        h = self.ln1(x)
        q, k, v = (self.split(f(h), b, s) for f in (self.q, self.k, self.v))
        scores = paddle.matmul(q, k, transpose_y=True) * (1.0 / math.sqrt(self.dim // self.heads))
        attn = paddle.matmul(F.softmax(scores + self.mask, axis=-1), v)
        attn = paddle.reshape(paddle.transpose(attn, [0, 2, 1, 3]), [b, s, self.dim])
        x = x + self.proj(attn)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return self.head(self.ln_f(x))


def build(name):
    """(model, inputs, target, loss_fn) on the current device, same values everywhere."""
    rng = np.random.default_rng(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                              nn.Linear(32, 4))
        x = paddle.to_tensor(rng.standard_normal((64, 16)).astype(np.float32))
        y = paddle.to_tensor(rng.standard_normal((64, 4)).astype(np.float32))

        def loss_fn(out, target):
            return paddle.mean((out - target) ** 2)
    elif name in ("cnn", "cnn_bn"):
        model = CNN() if name == "cnn" else CNNBN()
        x = paddle.to_tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32))
        y = paddle.to_tensor(rng.integers(0, 10, (8,)).astype(np.int64))

        def loss_fn(out, target):
            return F.cross_entropy(out, target)
    elif name == "transformer":
        model = Block()
        tokens = rng.integers(0, 32, (4, 9)).astype(np.int64)
        x = paddle.to_tensor(tokens[:, :-1])
        y = paddle.to_tensor(tokens[:, 1:])

        def loss_fn(out, target):
            return F.cross_entropy(paddle.reshape(out, [-1, out.shape[-1]]),
                                   paddle.reshape(target, [-1]))
    else:
        raise ValueError(name)
    init_weights(model)
    return model, x, y, loss_fn


def init_weights(model):
    """Draws |model|'s parameters with numpy, the same on every device."""
    for i, p in enumerate(model.parameters()):
        fan_in = p.shape[0] if len(p.shape) == 2 else max(1, int(np.prod(p.shape[1:])))
        scale = 1.0 / math.sqrt(fan_in) if len(p.shape) > 1 else 0.1
        value = np.random.default_rng(i + 1).standard_normal(p.shape) * scale
        if len(p.shape) == 1 and "w_" in p.name and isinstance(model, (Block, CNNBN)):
            value = 1.0 + value  # LayerNorm / BatchNorm scales near 1
        p.set_value(value.astype(np.float32))


OPTIMIZERS = ("sgd", "adam", "adamw")
# Adam's steps are normalized: a smaller rate keeps 4 steps on a smooth curve.
ADAM_LEARNING_RATE = 0.01


def make_optimizer(name, model):
    """paddle.optimizer.SGD, Adam or AdamW (weight decay 0.01) over |model|."""
    params = model.parameters()
    if name == "sgd":
        lr = LEARNING_RATE.get(type(model).__name__.lower(), 0.05)
        return paddle.optimizer.SGD(learning_rate=lr, parameters=params)
    if name == "adam":
        return paddle.optimizer.Adam(learning_rate=ADAM_LEARNING_RATE, parameters=params)
    if name == "adamw":
        return paddle.optimizer.AdamW(learning_rate=ADAM_LEARNING_RATE, parameters=params,
                                      weight_decay=0.01)
    raise ValueError(name)


def make_step(model, loss_fn, static=False, optimizer="sgd"):
    """A train-step function (inputs, target) -> loss tensor, with its
    optimizer (OPTIMIZERS); under paddle.jit.to_static the forward pass is one
    program."""
    forward = paddle.jit.to_static(model, full_graph=True) if static else model
    opt = make_optimizer(optimizer, model)

    def step(x, y):
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


def train(name, device, static=False, steps=4, marker=None, optimizer="sgd"):
    """Trains |name| for |steps| steps on |device| with |optimizer|; returns
    the losses. |marker|, if given, is called with the step number before
    each step."""
    paddle.set_device(device)
    model, x, y, loss_fn = build(name)
    step = make_step(model, loss_fn, static, optimizer)
    losses = []
    for i in range(steps):
        if marker:
            marker(i)
        losses.append(float(step(x, y)))
    if marker:
        marker("end")
    return losses


if __name__ == "__main__":
    print(train(sys.argv[1], sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "static",
                optimizer=sys.argv[4] if len(sys.argv) > 4 else "sgd"))
