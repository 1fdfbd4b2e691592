"""A BERT encoder's forward pass in numpy, read from a safetensors file.

Only what a sentence-transformers BERT model (all-MiniLM-L6-v2) needs:
absolute positions, one token type, post-layer-norm blocks, exact (erf)
GELU. No torch: the weights are read straight from the safetensors bytes.
"""

import json
import math
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def load_safetensors(path):
    """Returns the tensors of a safetensors file by name, as numpy arrays."""
    with open(path, "rb") as f:
        return load_safetensors_bytes(f.read())


def load_safetensors_bytes(data):
    """Returns the tensors of a safetensors file's bytes by name."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = memoryview(data)[8 + n :]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        arr = np.frombuffer(body[start:end], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
        out[name] = arr if t["dtype"] == "I64" else arr.astype(np.float32)
    return out


def _erf(x):
    """erf with a relative error below 1.2e-7 everywhere (Numerical
    Recipes' erfc Chebyshev fit), vectorised: numpy has no erf."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def gelu(x):
    """The exact GELU of BERT: x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class Bert:
    """A BERT encoder: call it with a batch of equal-length token-id rows
    (and their attention mask) to get the last hidden states."""

    def __init__(self, weights, config):
        self.w = weights
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.hidden = config["hidden_size"]
        self.eps = config.get("layer_norm_eps", 1e-12)

    def _lin(self, x, name):
        w = self.w[name + ".weight"]
        y = x.reshape(-1, x.shape[-1]) @ w.T + self.w[name + ".bias"]
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    def __call__(self, ids, mask=None):
        ids = np.asarray(ids)
        b, n = ids.shape
        if mask is None:
            mask = np.ones((b, n), dtype=np.float32)
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        hd = self.hidden // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def split(t):
                return t.reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._lin(x, p + "attention.self.query"))
            k = split(self._lin(x, p + "attention.self.key"))
            v = split(self._lin(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, self.hidden)
            a = self._lin(a, p + "attention.output.dense")
            x = layer_norm(x + a, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = gelu(self._lin(x, p + "intermediate.dense"))
            h = self._lin(h, p + "output.dense")
            x = layer_norm(x + h, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x


def mean_pool(hidden, mask):
    """The mean of each row's hidden states where mask is 1."""
    m = mask[:, :, None].astype(np.float32)
    return (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
