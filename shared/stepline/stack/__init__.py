"""Stepline's AWS stack, shipped inside the package: what `sam build` deploys and the local runtime runs.

    template.yaml                    the SAM template, byte for byte the repository's root template.yaml
                                     (a test keeps them identical: `cp template.yaml shared/stepline/stack/`)
    statemachine/agent_run.asl.json  the agent-run state machine (the root template's DefinitionUri)
    functions/<name>/                one thin Lambda entry point per function (the root template's CodeUris)
    Makefile                         `sam build`'s build of the layer and the functions, with bytecode

The root template is what `sam build`/`sam deploy` read in a checkout; its local paths point in here, so
the state machine and the functions exist once. The local runtime reads the tables, the bucket and the
state machine from these files, and `stepline init` writes a project's stack from them, whether Stepline
runs from a checkout or from an installed wheel (`importlib.resources`: no path leads out of the package).
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["ASL", "FUNCTIONS", "IN_REPOSITORY", "MAKEFILE", "STACK", "TEMPLATE"]

STACK: Traversable = files(__name__)
"""This folder, as a resource."""
TEMPLATE: Traversable = STACK / "template.yaml"
IN_REPOSITORY = "shared/stepline/stack/"
"""Where this folder is in the repository: the prefix of the root template's local paths that point in here."""
ASL: Traversable = STACK / "statemachine" / "agent_run.asl.json"
FUNCTIONS: Traversable = STACK / "functions"
MAKEFILE: Traversable = STACK / "Makefile"
"""How `sam build` builds the shared layer and the functions (BuildMethod makefile): with bytecode."""
