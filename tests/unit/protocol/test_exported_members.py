"""Every module says what it exports, and says it truthfully (httpx's test_exported_members idea)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import stepline.protocol

PUBLIC_MODULES = sorted(m.name for m in pkgutil.iter_modules(stepline.protocol.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", ["stepline.protocol", *(f"stepline.protocol.{m}" for m in PUBLIC_MODULES)])
def test_all_is_declared_unique_and_resolvable(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names {member}, which does not exist"


def test_package_reexports_are_the_module_objects() -> None:
    from stepline.protocol import reducer, to_model_messages

    assert stepline.protocol.reduce_ui_message_stream is reducer.reduce_ui_message_stream
    assert stepline.protocol.convert_to_model_messages is to_model_messages.convert_to_model_messages
