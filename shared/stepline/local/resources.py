"""Build the moto tables and bucket from template.yaml, so tests and infrastructure cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

TEMPLATE = Path(__file__).resolve().parents[3] / "template.yaml"
"""The repository's SAM template (Stepline runs locally from a checkout)."""


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short-form tags (`!Ref`, `!GetAtt`, `!Sub`, …) as plain values."""


def _tag(loader: yaml.Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {f"Fn::{suffix}" if suffix != "Ref" else "Ref": value}


_CfnLoader.add_multi_constructor("!", _tag)  # pyright: ignore[reportUnknownMemberType]


def load_template() -> dict[str, Any]:
    """template.yaml, with CloudFormation tags as plain values."""
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)


def resources(kind: str) -> dict[str, dict[str, Any]]:
    """The properties of the template's resources of one type, by logical id."""
    return {name: r["Properties"] for name, r in load_template()["Resources"].items() if r["Type"] == kind}


def create_tables(dynamodb: Any, names: dict[str, str]) -> None:
    """Create every `AWS::DynamoDB::Table` of the template, named by `names[logical_id]`."""
    for logical_id, props in resources("AWS::DynamoDB::Table").items():
        kwargs: dict[str, Any] = {
            "TableName": names[logical_id],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props["BillingMode"],
        }
        if "GlobalSecondaryIndexes" in props:
            kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        dynamodb.create_table(**kwargs)
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=names[logical_id], TimeToLiveSpecification=ttl)


def create_bucket(s3: Any, name: str) -> None:
    """Create the template's artifact bucket with its public-access block and encryption."""
    props = resources("AWS::S3::Bucket")["ArtifactBucket"]
    s3.create_bucket(Bucket=name)
    s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=props["PublicAccessBlockConfiguration"])
    # CloudFormation names the rule key `ServerSideEncryptionByDefault`; the S3 API calls it
    # `ApplyServerSideEncryptionByDefault`.
    rules = [
        {"ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"]}
        for rule in props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    ]
    s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
