"""The files `stepline init` writes: an agent, its tests, its script book, its packaging, its README.

Kept as text (with `$name` placeholders, `string.Template`), so what a new project starts from is
readable here as the user will read it.
"""

from __future__ import annotations

from string import Template
from typing import Any

from ..testing.script import call, script, text

__all__ = ["book", "render"]

AGENT_PY = '''\
"""$name's agent: what `stepline dev` serves and every Lambda function runs (STEPLINE_AGENT=agent:agent).

Each model step of a run may run in another process, days later (after an approval): this module is
imported again there, and the run context (`RunContext`: the user's claims, the chat request's extra
`body` fields) is the one fixed when the run started. Keep module-level state out of the tools:
what must last goes to the store or the workspace (`context.blobs`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field
from stepline import Agent, RunContext, is_step_count, tool
from stepline.store import workspace

BOOK = Path(__file__).resolve().with_name("book.json")


@tool
def convert_temperature(value: float, to: Literal["C", "F"] = "C") -> dict[str, float | str]:
    """Convert a temperature between degrees Fahrenheit and Celsius.

    Args:
        value: The temperature to convert.
        to: The unit to convert to (the value is in the other one).
    """
    converted = (value - 32) * 5 / 9 if to == "C" else value * 9 / 5 + 32
    return {"value": round(converted, 1), "unit": to}


@tool(approval="user-approval")
def save_note(
    title: Annotated[str, Field(description="A short title, such as groceries; saved as notes/<title>.md")],
    body: Annotated[str, Field(description="The note, in Markdown")],
    context: RunContext,
) -> dict[str, str]:
    """Save a note in the conversation's workspace. The user approves every note first."""
    if context.blobs is None:
        raise RuntimeError("this runtime has no file storage")
    path = f"notes/{title}.md"
    workspace.write_file(context.blobs, context.user_id, context.conversation_id, path, body.encode(), "text/markdown")
    return {"saved": path}


def instructions(context: RunContext) -> str:
    """The system prompt of every step: it names the user from the claims the run started with."""
    user = context.claims.get("name") or context.claims.get("email") or "the user"
    return (
        f"You are $name, a concise assistant for {user}. Convert temperatures with convert_temperature. "
        "Save a note with save_note only when asked to; the user approves it."
    )


agent = Agent(
    name="$slug",
    description="Converts temperatures and saves notes (with your approval).",
    # None: the deployment's model (STEPLINE_MODEL: the template's ModelId, such as openai:gpt-5.1).
    # Without one, this project's script book plays the tools, so it runs with no API key.
    model=None if os.environ.get("STEPLINE_MODEL") else f"scripted:{BOOK}",
    instructions=instructions,
    tools=[convert_temperature, save_note],
    temperature=0.2,
    stop_when=is_step_count(8),
)
'''

TEST_AGENT_PY = '''\
"""The agent's tests: each turn runs through Stepline's durable path in memory, with a scripted model."""

from __future__ import annotations

from stepline.protocol.model_messages import SystemModelMessage
from stepline.testing import call, run_turn, scripted_model, text

from agent import agent


def test_it_converts_a_temperature() -> None:
    model = scripted_model([call("convert_temperature", value=212, to="C"), text("212 °F is 100 °C.")])
    result = run_turn(agent, "212 °F in Celsius?", model=model)
    assert result.status == "completed"
    assert result.tool("convert_temperature").output == {"value": 100.0, "unit": "C"}
    assert result.text == "212 °F is 100 °C."


def test_a_note_is_saved_once_approved() -> None:
    model = scripted_model([call("save_note", title="milk", body="Buy milk"), text("Saved.")])
    result = run_turn(agent, "Note: buy milk", model=model, approve=True)
    assert result.invocations == ["BeginTurn", "ModelStep", "AwaitInput", "ModelStep", "FinalizeRun"]
    assert result.tool("save_note").output == {"saved": "notes/milk.md"}


def test_a_denied_note_is_not_saved() -> None:
    model = scripted_model([call("save_note", title="milk", body="Buy milk"), text("I did not save it.")])
    result = run_turn(agent, "Note: buy milk", model=model, approve=False)
    assert result.tool("save_note").status == "denied"
    assert result.text == "I did not save it."


def test_the_instructions_name_the_user() -> None:
    model = scripted_model([text("Hello Ann.")])
    run_turn(agent, "Hi", model=model, claims={"sub": "user-1", "name": "Ann"})
    (system,) = [m for m in model.calls[0].prompt if isinstance(m, SystemModelMessage)]
    assert "for Ann" in system.content


def test_the_script_book_plays_the_tools() -> None:
    """What `stepline dev` answers without an API key (book.json) still calls tools the agent has."""
    result = run_turn(agent, "convert a temperature")
    assert result.status == "completed" and result.tool("convert_temperature").status == "success"
'''

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "$slug"
version = "0.1.0"
description = "$name: an agent on Stepline"
requires-python = ">=3.11"
# The release stack/ was written for (stepline init . --template-only writes it again after an upgrade).
dependencies = ["stepline==$version"]

[project.optional-dependencies]
dev = ["stepline[local]==$version", "pytest"]

[tool.setuptools]
package-dir = {"" = "src"}
py-modules = ["agent"]

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]

[tool.ruff]
line-length = 120
"""

REQUIREMENTS = """\
# What agent.py needs beyond stepline, for the AgentLayer of template.yaml (`sam build` installs it).
# Stepline and its dependencies come from the SharedLayer (stack/layer/requirements.txt).
"""

GITIGNORE = """\
# Local state of `stepline dev` (the conversations), builds, environments and caches: never deployed
# (template.yaml's AgentLayer is src/ only) and never committed.
.stepline/
.aws-sam/
.venv/
venv/
__pycache__/
*.py[cod]
*.egg-info/
build/
dist/
.pytest_cache/
.ruff_cache/
.mypy_cache/
"""

README = """\
# $name

An agent on Stepline (durable AI agent conversations on AWS serverless): `src/agent.py`
defines it (instructions, a typed tool, an approval-gated tool), `tests/test_agent.py` tests it
with a scripted model, `src/book.json` is what it answers locally until you give it a model, and
`template.yaml` deploys it.

## Install

```sh
python3 -m venv .venv && . .venv/bin/activate
pip install -e ".[dev]"      # this project, with stepline[local]==$version and pytest
```

(Until Stepline is on your package index, point pip at its wheel first: `pip install
'stepline-$version-py3-none-any.whl[local]'`, or `PIP_FIND_LINKS=<folder of the wheel>`.)

## Run it, test it

```sh
STEPLINE_AGENT=agent:agent stepline dev      # http://127.0.0.1:8000: the web UI and the API
python -m pytest                             # the agent's turns through the durable path, in memory
```

`stepline dev` keeps its state in `.stepline/` in this folder (conversations, runs and waiting
approvals survive a restart; delete it to start afresh, or `--memory` to keep nothing);
`--reload` restarts it when you change `src/`. Locally, with no `STEPLINE_MODEL`, the agent
plays `src/book.json` (a script book, not a model: try "convert a temperature" or "save a note").
`STEPLINE_MODEL=openai:gpt-5.1` (with `OPENAI_API_KEY`) or `anthropic:claude-sonnet-4-5` (with
`ANTHROPIC_API_KEY`) talks to a real one.

## Deploy

`template.yaml` is Stepline's own stack, with one addition: an `AgentLayer` built from `src/`
(`sam build` installs `src/requirements.txt` into it), on every function, and `STEPLINE_AGENT` set
to `agent:agent`. Its functions, state machine and web UI are in `stack/`, and its shared layer
installs `stepline[lambda]==$version` (`stack/layer/requirements.txt`): both were written by
`stepline init` for this release. Only `src/` and `stack/` are deployed; the local state in
`.stepline/`, virtual environments, caches and tests never are.

```sh
sam build && sam deploy --guided     # asks for UserPoolArn, ModelId, the provider key's SSM parameter
```

(Until Stepline is on your package index: `PIP_FIND_LINKS=<folder of the wheel> sam build`.)
After upgrading Stepline, write the stack again: `stepline init . --template-only`.
"""


def render(source: str, **values: Any) -> str:
    """One file's text with its `$name` placeholders filled."""
    return Template(source).substitute(**values)


def book(name: str) -> dict[str, Any]:
    """The project's script book: what the agent answers locally without a model (its own tools)."""
    return {
        "description": f"{name}'s script book: not a model. Each reply is chosen by keywords in the last user "
        "message (stepline.llm.script_book); set STEPLINE_MODEL to use a real model.",
        "scripts": [
            {
                "name": "convert",
                "match": ["convert", "temperature", "celsius", "fahrenheit"],
                "steps": script(
                    [
                        call("convert_temperature", value=100, to="C"),
                        text("100 °F is 37.8 °C. (The script book always converts 100 °F; a real model reads yours.)"),
                    ]
                ),
            },
            {
                "name": "note",
                "match": ["note", "remember"],
                "steps": script(
                    [
                        call("save_note", title="note", body="{{last_user_text}}"),
                        text("Done: your note is notes/note.md in this conversation's workspace, if you approved it."),
                    ]
                ),
            },
        ],
        "fallback": {
            "steps": script(
                [
                    text(
                        "I am this project's script book, not a model: try “convert a temperature” or “save a "
                        "note: buy milk”. Set STEPLINE_MODEL to talk to a real model."
                    )
                ]
            )
        },
    }
