"""docs/agents.md's "Testing your agent" example runs as written, against the agent `stepline init` writes."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from stepline.project import files

DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def section_code(title: str) -> str:
    text = DOC.read_text()
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[:1]
    return block


def test_the_testing_example_passes_against_the_scaffolded_agent(tmp_path: Path) -> None:
    source = tmp_path / "scaffolded_agent.py"
    source.write_text(files.render(files.AGENT_PY, name="demo", slug="demo"))
    spec = importlib.util.spec_from_file_location("scaffolded_agent", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace: dict[str, Any] = {"agent": module.agent}
    exec(compile(section_code("Testing your agent"), str(DOC), "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    assert tests, "the example defines a test"
    for test in tests:
        test()
