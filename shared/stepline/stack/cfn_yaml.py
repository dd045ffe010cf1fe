"""CloudFormation templates as YAML: read with short-form intrinsics, written without anchors or aliases.

Stepline's template uses short-form intrinsics (`!Ref X`, `!GetAtt A.B`, `!Sub ...`); `load` reads
them as their long forms (`{"Ref": "X"}`, `{"Fn::GetAtt": ["A", "B"]}`), which CloudFormation reads
alike. `dump` writes a template back with every repeated value spelled out: PyYAML would otherwise
write an object used twice as an anchor and an alias (`&id001` / `*id001`), which CloudFormation
refuses in a template it is given directly ("YAML aliases are not allowed in CloudFormation
templates"; only `sam deploy` and `aws cloudformation package` unroll them).
"""

from __future__ import annotations

from typing import Any, cast

import yaml

__all__ = ["dump", "load"]


class _Loader(yaml.SafeLoader):
    """A private loader: short-form intrinsics (`!Sub x`) become their long forms (`{"Fn::Sub": x}`)."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(cast(yaml.MappingNode, node), deep=True)
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_Loader.add_multi_constructor("!", _intrinsic)  # pyright: ignore[reportUnknownMemberType]


class _Dumper(yaml.SafeDumper):
    """Writes every value where it is used: no anchors, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def load(text: str) -> dict[str, Any]:
    """A SAM/CloudFormation template's text, intrinsics in their long forms."""
    return cast(dict[str, Any], yaml.load(text, Loader=_Loader))


def dump(template: dict[str, Any]) -> str:
    """The template as YAML, long-form intrinsics, keys in their order, no anchors or aliases."""
    return yaml.dump(template, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
