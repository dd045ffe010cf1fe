"""Example agents that read like products; each directory runs with `stepline dev` (see its README)."""
