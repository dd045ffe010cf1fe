"""Build the moto tables and bucket from Stepline's template, so tests and infrastructure cannot drift.

The template is the package's copy (`stepline.stack.TEMPLATE`, identical to the repository's root
template.yaml), so this works the same from a checkout and from an installed wheel.
"""

from __future__ import annotations

from typing import Any

from ..stack import TEMPLATE
from ..stack.cfn_yaml import load


def load_template() -> dict[str, Any]:
    """Stepline's template, with CloudFormation tags as their long forms."""
    return load(TEMPLATE.read_text(encoding="utf-8"))


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
