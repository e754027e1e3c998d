"""The knowledge layer's pure stages: parse, plan, write and check a document's notes (docs/decisions/0021)."""
