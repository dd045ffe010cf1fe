"""A project's template checked offline, as CloudFormation would see it: cfn-lint, then the SAM
translator on the template as `sam package` leaves it (local paths replaced by S3 locations)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
from samtranslator.translator.transform import transform

from stepline.stack.cfn_yaml import load

LOCAL_PATHS = ("CodeUri", "ContentUri", "DefinitionUri")


class StubPolicyLoader(ManagedPolicyLoader):
    """Stands in for the IAM ListPolicies call the translator makes for managed policy names."""

    def __init__(self) -> None:
        pass

    def load(self) -> dict[str, str]:
        names = ["AWSXrayWriteOnlyAccess", "AWSLambdaBasicExecutionRole"]
        return {name: f"arn:aws:iam::aws:policy/{name}" for name in names}


def validate_offline(project: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """cfn-lint clean, every local path in the project, and translated: (the source, the translation).

    The caller sets AWS_DEFAULT_REGION (the translator reads it).
    """
    lint = subprocess.run(
        [sys.executable, "-c", "from cfnlint.runner import main; main()", "template.yaml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert lint.returncode == 0 and lint.stdout.strip() == "", lint.stdout + lint.stderr
    source = load((project / "template.yaml").read_text())
    packaged: dict[str, Any] = copy.deepcopy(source)
    for logical_id, resource in packaged["Resources"].items():
        properties = resource.get("Properties", {})
        for key in LOCAL_PATHS:
            value = properties.get(key)
            if isinstance(value, str):
                assert (project / value).exists(), value  # everything sam build reads is in the project
                properties[key] = (
                    {"Bucket": "artifacts", "Key": f"{logical_id}.json"}
                    if key == "DefinitionUri"
                    else f"s3://artifacts/{logical_id}.zip"
                )
    return source, transform(packaged, {}, StubPolicyLoader())
