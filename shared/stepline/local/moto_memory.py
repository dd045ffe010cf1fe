"""moto's DynamoDB without the copies it keeps of every item it ever made.

moto's models register each instance they create in a class-level list (`instances_tracked`, read
only by moto's `/moto-api/data.json` listing). A DynamoDB transaction deep-copies every table it
touches, for a rollback, and each copied `Item` registers itself there: the copies are never freed,
so a table of n items grows by n objects per transaction. Measured (`bench/local_load.py --memory`):
200 concurrent runs grew the process to 7.4 GB; 1,000 single-item transactions leave 500,500
items alive.

`untrack_dynamodb_models` stops that registration for the DynamoDB models only (S3 reads its list to
close its temporary files on reset), after `mock_aws` has started: moto resets the lists when a
mock starts. The data itself is untouched; only moto's listing of it is lost.
"""

from __future__ import annotations

from typing import Any

__all__ = ["untrack_dynamodb_models"]


class _Untracked(list[Any]):
    """A registry that keeps nothing."""

    def append(self, item: Any, /) -> None:
        del item


def untrack_dynamodb_models() -> int:
    """Stop moto's DynamoDB models from registering their instances; how many classes changed."""
    import importlib

    from moto.core.model_instances import model_data

    importlib.import_module("moto.dynamodb.models")  # its classes register themselves when imported
    classes: dict[str, Any] = dict(model_data.get("dynamodb", {}))
    for cls in classes.values():
        cls.instances_tracked = _Untracked()
    return len(classes)
