"""Experiments reproducing the papers: one module per paper with reproduce(out_dir, fast) (zoo reproduce)."""
