"""Measures semantic-only R@5 of static tables (and of the sentence model
itself, the ceiling) on the search sets in testdata/search, the way the
bench counts it: the share of a query's right tools in its top 5.

    python evaluate.py ../../../testdata/search --dims 64,128,256 --sif 0,1e-4,1e-3

Token vectors are cached in --cache (the model's pass over the vocabulary
takes a minute).
"""

import argparse
import gzip
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distill  # noqa: E402


def _open(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def words(s):
    """Words of a name as toolsearch splits them (camelCase, snake_case)."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", s)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", s) if len(w) > 1]


def doc_text(name, desc, params):
    """What toolsearch embeds of a tool: name words, description, parameter names."""
    t = " ".join(words(name))
    if desc:
        t += ". " + desc
    if params:
        t += ". " + ", ".join(" ".join(words(p)) for p in params)
    return t


def load_proxy(dir_):
    with _open(os.path.join(dir_, "corpus_v1.tools.json")) as f:
        tools = json.load(f)["tools"]
    docs = [(t["tool_id"], doc_text(t["tool"], t.get("description", ""), [])) for t in tools]
    with _open(os.path.join(dir_, "retrieval_golden_v1.json")) as f:
        qs = json.load(f)["queries"]
    queries = [(q["query"], {l["tool_id"] for l in q["labels"] if l["relevance"] >= 1}) for q in qs]
    return "mcpproxy", docs, queries


def load_bfcl(dir_):
    with _open(os.path.join(dir_, "functions.json.gz")) as f:
        pool = json.load(f)
    docs = []
    for fn in pool:
        props = ((fn.get("parameters") or {}).get("properties") or {}).keys()
        docs.append((fn["name"], doc_text(fn["name"], fn.get("description", ""), list(props))))
    with _open(os.path.join(dir_, "BFCL_v4_live_multiple.json.gz")) as f:
        questions = [json.loads(l) for l in f if l.strip()]
    with _open(os.path.join(dir_, "possible_answer", "BFCL_v4_live_multiple.json.gz")) as f:
        answers = [json.loads(l) for l in f if l.strip()]
    queries = []
    for q, a in zip(questions, answers):
        text = "\n".join(m["content"] for turn in q["question"] for m in turn if m["role"] == "user").strip()
        right = {name for call in a["ground_truth"] for name in call}
        queries.append((text, right))
    return "bfcl", docs, queries


def recall5(doc_vecs, ids, query_vecs, queries):
    sims = query_vecs @ doc_vecs.T
    total = 0.0
    for i, (_, right) in enumerate(queries):
        top = np.argsort(-sims[i], kind="stable")[:5]
        total += len({ids[j] for j in top} & right) / len(right)
    return total / len(queries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("search_dir")
    ap.add_argument("--dims", default="128,256")
    ap.add_argument("--sif", default="1e-4")
    ap.add_argument("--cache", default="/tmp/embed-distill-cache.npz")
    ap.add_argument("--sentence", action="store_true", help="also the sentence model's own R@5")
    ap.add_argument("--bits", default="8", help="quantisation bits per number")
    ap.add_argument("--weights", default="zipf", help="zipf: by vocabulary order; goroot: by the Go sources' comments")
    ap.add_argument("--goroot", default="/usr/local/go")
    ap.add_argument("--pool", default="mean", help="mean: over [CLS] token [SEP]; token: the token's own output")
    args = ap.parse_args()
    src = distill.Source(distill.model_zip_path())
    cache = args.cache.replace(".npz", f"-{args.pool}.npz")
    if os.path.exists(cache):
        raw = np.load(cache)["raw"]
    else:
        raw = src.token_vectors(pool=args.pool)
        np.savez(cache, raw=raw)
    sets = [load_proxy(os.path.join(args.search_dir, "mcpproxy")), load_bfcl(os.path.join(args.search_dir, "bfcl"))]
    if args.sentence:
        for name, docs, queries in sets:
            dv = np.array([src.sentence_vector(t) for _, t in docs])
            qv = np.array([src.sentence_vector(q) for q, _ in queries])
            print(f"sentence model {name}: R@5 {recall5(dv, [i for i, _ in docs], qv, queries):.3f}")
    if args.weights in ("goroot", "mix"):
        comments = distill.goroot_comments(args.goroot)
        print(f"{len(comments)} comment lines", file=sys.stderr)
    for dim in [int(d) for d in args.dims.split(",")]:
        base = distill.pca(raw, dim)
        for sif in [float(s) for s in args.sif.split(",")]:
            if args.weights == "mix":
                wz = distill.zipf_sif(len(base), sif)
                wg = distill.corpus_sif(src, comments, sif * 3)
                vecs = base * np.sqrt(wz * wg)[:, None]
            elif args.weights == "goroot":
                vecs = base * distill.corpus_sif(src, comments, sif)[:, None]
            else:
                vecs = base * distill.zipf_sif(len(base), sif)[:, None] if sif > 0 else base.copy()
            for bits in [int(b) for b in args.bits.split(",")]:
                q, scale = distill.quantise(vecs, bits) if bits < 32 else (vecs, np.ones(len(vecs), np.float32))
                table = q.astype(np.float32) * scale[:, None]
                out = []
                for name, docs, queries in sets:
                    dv = np.array([distill.static_embed(src, table, t) for _, t in docs])
                    qv = np.array([distill.static_embed(src, table, q) for q, _ in queries])
                    out.append(f"{name} R@5 {recall5(dv, [i for i, _ in docs], qv, queries):.3f}")
                print(f"pool {args.pool} dim {dim} sif {sif:g} bits {bits}: " + ", ".join(out), flush=True)


if __name__ == "__main__":
    main()
