"""A deferred model names itself without importing its provider's SDK, and builds it on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepline.llm.registry import DEMO_SCRIPT, DeferredModel, UnknownModelError, deferred_model
from stepline.llm.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[3]


def test_naming_the_model_imports_no_sdk() -> None:
    probe = (
        "import json, sys\n"
        "from stepline.llm.registry import deferred_model\n"
        "m = deferred_model('anthropic:claude-sonnet-4-5', api_key='sk-test')\n"
        "n = deferred_model('openai:gpt-5.1', api_key='sk-test')\n"
        "named = [m.provider, m.model_id, n.provider, n.model_id]\n"
        "print(json.dumps([named, 'anthropic' in sys.modules, 'openai' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    named, anthropic_loaded, openai_loaded = json.loads(out.stdout)
    assert named == ["anthropic", "claude-sonnet-4-5", "openai", "gpt-5.1"]
    assert not anthropic_loaded and not openai_loaded


def test_first_use_builds_the_providers_model_once() -> None:
    model = deferred_model("openai:gpt-5.1", api_key="sk-test")
    assert isinstance(model, DeferredModel) and model.resolved is None
    capabilities = model.capabilities
    built = model.resolved
    assert built is not None and type(built).__name__ == "OpenAIModel"
    assert built.model_id == "gpt-5.1" and capabilities == built.capabilities
    assert model.capabilities == capabilities and model.resolved is built


def test_a_wrong_specification_still_fails_at_once_and_a_scripted_model_is_built_at_once() -> None:
    with pytest.raises(UnknownModelError, match="unknown model provider"):
        deferred_model("nope:thing")
    with pytest.raises(UnknownModelError, match="provider:model-id"):
        deferred_model("gpt-5.1")
    assert isinstance(deferred_model(f"scripted:{DEMO_SCRIPT}"), ScriptedModel)
