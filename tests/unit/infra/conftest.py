"""The template fixtures (`source`, `translated`) for every test of this folder."""

from tests.unit.infra.test_template import source, translated

__all__ = ["source", "translated"]
