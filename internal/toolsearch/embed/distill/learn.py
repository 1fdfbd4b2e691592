"""Fits the token vectors to the sentence model (model2vec's "tokenlearn"
idea, solved as regularised least squares instead of by gradient descent).

The sentence model embeds a corpus of English sentences about software
(the comments of the Go standard library and the docstrings of Python's);
the table's rows are then moved, as little as they must, so that the mean
of a sentence's rows comes close to the sentence model's vector:

    min_W  sum_s |A_s W - c y_s|^2  +  lam * sum_t n_t |W_t - W0_t|^2

where A_s is sentence s's token shares, y_s its sentence vector, c the
typical length of the distilled means, W0 the distilled rows and n_t how
often token t occurs (rare tokens stay near their distilled row). Solved
column-wise by conjugate gradients on the normal equations.
"""

import ast
import os
import re
import sys

import numpy as np
import scipy.sparse as sp


def _sentences(text):
    for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)):
        s = s.strip()
        if 4 <= len(s.split()) <= 40 and re.search(r"[a-zA-Z]{3}", s):
            yield s


def go_comment_sentences(goroot):
    """The sentences of the Go standard library's comment paragraphs."""
    out = []
    for root, dirs, files in os.walk(os.path.join(goroot, "src")):
        dirs[:] = sorted(d for d in dirs if d not in ("testdata", "vendor"))
        for name in sorted(files):
            if not name.endswith(".go") or name.endswith("_test.go"):
                continue
            para = []
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("//") and not line.startswith("//go:"):
                        para.append(line[2:].strip())
                        continue
                    if para:
                        out.extend(_sentences(" ".join(para)))
                        para = []
    return out


def python_docstring_sentences(libdir):
    """The sentences of the docstrings of Python's standard library."""
    out = []
    for root, dirs, files in os.walk(libdir):
        dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", "site-packages", "idlelib", "lib2to3"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        out.extend(_sentences(doc.split("\n\n")[0]))
    return out


def corpus(goroot, pylib, n, per_round=20000):
    """n distinct sentences of both sources, drawn (deterministically) in
    rounds of per_round: round k draws with seed k among those not drawn
    yet, so a larger n keeps a smaller one's rounds (and their cache)."""
    sents = sorted(set(go_comment_sentences(goroot)) | set(python_docstring_sentences(pylib)))
    left = list(range(len(sents)))
    rounds = []
    while sum(map(len, rounds)) < n and left:
        m = min(per_round, n - sum(map(len, rounds)), len(left))
        pick = sorted(np.random.default_rng(len(rounds)).choice(len(left), m, replace=False))
        rounds.append([sents[left[i]] for i in pick])
        picked = set(pick)
        left = [x for j, x in enumerate(left) if j not in picked]
    return rounds


def teacher_vectors(src, sents, batch=128, max_tokens=64):
    """The sentence model's normalised vectors of sents (batched by length)."""
    enc = [src.tokenizer.encode(s).ids[:max_tokens] for s in sents]
    order = sorted(range(len(sents)), key=lambda i: len(enc[i]))
    out = np.zeros((len(sents), src.model.hidden), dtype=np.float32)
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        n = max(len(enc[i]) for i in idx)
        ids = np.zeros((len(idx), n), dtype=np.int64)
        mask = np.zeros((len(idx), n), dtype=np.float32)
        for r, i in enumerate(idx):
            ids[r, : len(enc[i])] = enc[i]
            mask[r, : len(enc[i])] = 1
        h = src.model(ids, mask)
        v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
        print(f"\rsentences {min(start + batch, len(order))}/{len(order)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return out


def share_matrix(src, sents, vocab_size):
    """A: one row per sentence, its tokens' shares (no specials, no [UNK])."""
    skip = {src.vocab.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]")}
    rows, cols, vals = [], [], []
    for r, e in enumerate(src.tokenizer.encode_batch(sents, add_special_tokens=False)):
        ids = [i for i in e.ids if i not in skip]
        for i in ids:
            rows.append(r)
            cols.append(i)
            vals.append(1.0 / max(len(ids), 1))
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(sents), vocab_size), dtype=np.float64)


def fit(a, y, w0, lam, iters=200):
    """Solves (A'A + lam N) W = A' c y + lam N W0 by conjugate gradients
    (N: diagonal of token counts, at least 1)."""
    counts = np.asarray((a > 0).sum(0)).ravel() + 1.0
    means = a @ w0
    c = np.median(np.linalg.norm(means, axis=1))
    reg = lam * counts[:, None]
    at = a.T.tocsr()
    b = at @ (c * y) + reg * w0

    def op(w):
        return at @ (a @ w) + reg * w

    w = w0.astype(np.float64).copy()
    r = b - op(w)
    p = r.copy()
    rs = (r * r).sum(0)
    for _ in range(iters):
        ap = op(p)
        alpha = rs / np.maximum((p * ap).sum(0), 1e-30)
        w += alpha * p
        r -= alpha * ap
        rs_new = (r * r).sum(0)
        if np.sqrt(rs_new.max()) < 1e-6 * np.sqrt(np.abs(b).sum()):
            break
        p = r + (rs_new / np.maximum(rs, 1e-30)) * p
        rs = rs_new
    return w.astype(np.float32)
