// Package embed turns text into vectors that point the same way when the
// texts mean much the same: static token embeddings distilled from the
// sentence model all-MiniLM-L6-v2 (Apache-2.0, see NOTICE) by the
// model2vec method.
//
// The table (table.bin, made by distill/distill.py, see distill/README.md)
// holds one row of 4-bit numbers per token of the model's WordPiece
// vocabulary with a scale per row: the model's output for that token
// alone, weighted down for frequent tokens, fitted so that a sentence's
// mean row comes close to the model's own vector of it, and reduced by
// PCA. Embed tokenizes a text as BERT does (lower case, accents stripped,
// punctuation split off, ## subwords), averages its tokens' rows and
// scales the mean to length 1; texts are compared by the cosine of their vectors.
//
// The table is compiled into the binary with go:embed and read in place:
// nothing is decoded or copied onto the heap, and none of its pages is
// touched before the first Embed, so a process that never embeds pays
// nothing but the binary's size. No model runs and nothing is fetched at
// run time.
package embed
