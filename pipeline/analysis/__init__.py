"""Hierarchical analysis of a notebook's pinned revision: bounded batches of evidence are each
summarised (map) and the summaries summarised again (reduce) until one remains, so no step ever
reads more than a batch, however many sources the notebook holds (issue #16)."""
