"""Measures the semantic-only R@5 of a table (and of the sentence model
itself, the ceiling) on the search sets in testdata/search, the way the
bench counts it: the share of a query's right tools in its top 5.

    python evaluate.py testdata/search                  # ../table.bin
    python evaluate.py testdata/search --table /tmp/other.bin --sentence
"""

import argparse
import gzip
import json
import os
import re
import struct
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


def read_table(path):
    """The float rows of a table that distill.py wrote."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == distill.MAGIC, "not a table of this distill.py"
    n, d, bits, _ = struct.unpack("<IIII", data[8:24])
    scale = np.frombuffer(data, "<f4", n, 24)
    raw = np.frombuffer(data, np.uint8, n * d * bits // 8, 24 + 4 * n).reshape(n, -1)
    if bits == 8:
        q = raw.view(np.int8).astype(np.float32)
    else:
        q = np.zeros((n, d), dtype=np.float32)
        q[:, 0::2] = ((raw & 0xF).astype(np.int8) ^ 8) - 8
        q[:, 1::2] = ((raw >> 4).astype(np.int8) ^ 8) - 8
    return q * scale[:, None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("search_dir")
    ap.add_argument("--table", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "table.bin"))
    ap.add_argument("--sentence", action="store_true", help="also the sentence model's own R@5")
    args = ap.parse_args()
    src = distill.Source(distill.model_zip_path())
    table = read_table(args.table)
    sets = [load_proxy(os.path.join(args.search_dir, "mcpproxy")), load_bfcl(os.path.join(args.search_dir, "bfcl"))]
    for name, docs, queries in sets:
        ids = [i for i, _ in docs]
        dv = np.array([distill.static_embed(src, table, t) for _, t in docs])
        qv = np.array([distill.static_embed(src, table, q) for q, _ in queries])
        line = f"{name}: table R@5 {recall5(dv, ids, qv, queries):.3f}"
        if args.sentence:
            dv = np.array([src.sentence_vector(t) for _, t in docs])
            qv = np.array([src.sentence_vector(q) for q, _ in queries])
            line += f", sentence model R@5 {recall5(dv, ids, qv, queries):.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
