"""Acme's support desk agent (examples/support_desk/README.md)."""
