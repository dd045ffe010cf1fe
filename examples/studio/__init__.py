"""A writing studio: several agents behind one deployment (examples/studio/README.md)."""
