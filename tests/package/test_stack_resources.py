"""The stack the package carries is the one the repository deploys, and every file is found inside the package.

The root template.yaml is what `sam build` reads in a checkout; `stepline/stack/template.yaml` is the
copy the package ships (the local runtime's tables and bucket, `stepline init`'s template). They
must be the same bytes, and every local path of the root template must be a file the package (or a
project's `stack/`) has.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from stepline.project.template import project_path, project_template
from stepline.stack import ASL, FUNCTIONS, IN_REPOSITORY, TEMPLATE
from stepline.stack.cfn_yaml import dump, load

REPO = Path(__file__).resolve().parents[2]
ROOT_TEMPLATE = REPO / "template.yaml"
LOCAL_PATHS = ("CodeUri", "ContentUri", "DefinitionUri")


def test_the_packaged_template_is_the_root_template() -> None:
    assert TEMPLATE.read_bytes() == ROOT_TEMPLATE.read_bytes(), (
        "shared/stepline/stack/template.yaml is the package's copy of template.yaml: "
        "cp template.yaml shared/stepline/stack/template.yaml"
    )


def local_paths(template: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for logical_id, resource in template["Resources"].items():
        for key in LOCAL_PATHS:
            value = resource.get("Properties", {}).get(key)
            if isinstance(value, str):
                found[f"{logical_id}.{key}"] = value
    return found


def test_the_state_machine_and_the_functions_exist_once_inside_the_package() -> None:
    paths = local_paths(load(ROOT_TEMPLATE.read_text()))
    inside = {name: value for name, value in paths.items() if value.startswith(IN_REPOSITORY)}
    assert inside["AgentRunStateMachine.DefinitionUri"] == IN_REPOSITORY + "statemachine/agent_run.asl.json"
    assert (REPO / inside["AgentRunStateMachine.DefinitionUri"]).read_bytes() == ASL.read_bytes()
    functions = {Path(v).name for k, v in inside.items() if k.endswith(".CodeUri")}
    assert functions == {entry.name for entry in FUNCTIONS.iterdir() if entry.is_dir()}
    for value in paths.values():
        assert (REPO / value).exists(), value
        project_path(value)  # every local path has a place in a project (a new one fails here)
    assert not (REPO / "functions").exists() and not (REPO / "infra" / "statemachine").exists()


def test_no_module_finds_its_files_by_walking_up_to_a_checkout() -> None:
    offenders = []
    for module in sorted((REPO / "shared" / "stepline").rglob("*.py")):
        text = module.read_text()
        if re.search(r"\.parents?\b", text) and "__file__" in text:
            offenders.append(str(module.relative_to(REPO)))
    assert offenders == []


def anchors_and_aliases(text: str) -> list[str]:
    found: list[str] = []
    for event in yaml.parse(text):
        if isinstance(event, yaml.AliasEvent):
            found.append(f"alias *{event.anchor}")
        elif getattr(event, "anchor", None):
            found.append(f"anchor &{event.anchor}")
    return found


def test_no_template_stepline_writes_has_anchors_or_aliases() -> None:
    """CloudFormation refuses YAML aliases in a template given to it directly."""
    assert anchors_and_aliases(ROOT_TEMPLATE.read_text()) == []
    derived = project_template(agent="agent:agent", name="my-agent")
    shared = derived["Resources"]["SharedLayer"]["Properties"]["CompatibleRuntimes"]
    derived["Resources"]["AgentLayer"]["Properties"]["CompatibleRuntimes"] = shared  # one object used twice
    written = dump(derived)
    assert anchors_and_aliases(written) == []
    assert load(written) == derived


def test_the_lambda_extra_pins_what_the_shared_layer_installs() -> None:
    """A checkout's SharedLayer installs shared/requirements.txt; a project's installs stepline[lambda]."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]

    def expand(requirement: str) -> set[str]:
        named = re.fullmatch(r"stepline\[([a-z,]+)\]", requirement)
        if named is None:
            return {requirement}
        return {pin for extra in named[1].split(",") for item in extras[extra] for pin in expand(item)}

    layer = {pin for item in extras["lambda"] for pin in expand(item)} | set(project["dependencies"])
    lines = (REPO / "shared" / "requirements.txt").read_text().splitlines()
    assert {line for line in lines if line and not line.startswith("#")} == layer
