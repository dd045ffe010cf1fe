"""Puts the built web UI and its runtime configuration into the UI bucket (a CloudFormation custom resource).

`sam deploy` uploads code, not website files, so this function carries the build of `web/` in its
layer (`WebUiLayer`, `web/dist` at `/opt`) and copies it into `UiBucket` when the stack is created
or the build changes (the layer version is a property of the resource, so a new build is an
update). It writes `config.json` next to it from the resource's `Config` property: the UI reads the
issuer, the client id and the API base at start, so one build serves every stack. On delete it
empties the bucket, so the stack can delete it.

Stand-alone on purpose (boto3 and the standard library only, no shared layer): it deploys the UI
the other functions' layer does not carry, and a failure to answer CloudFormation would leave the
stack waiting for an hour.
"""

from __future__ import annotations

import json
import mimetypes
import os
import urllib.request
from pathlib import Path
from typing import Any, cast

import boto3

WEB_ROOT = Path(os.environ.get("STEPLINE_WEB_ROOT", "/opt"))
# index.html and config.json are read at every start: never cached; hashed assets forever.
NO_CACHE = "no-cache"
IMMUTABLE = "public, max-age=31536000, immutable"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".map"))


def publish(s3: Any, bucket: str, root: Path, config: dict[str, Any]) -> list[str]:
    """Upload the build under `root` and `config.json`; returns the keys written."""
    keys: list[str] = []
    for path in _files(root):
        key = path.relative_to(root).as_posix()
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        cache = IMMUTABLE if key.startswith("assets/") else NO_CACHE
        s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes(), ContentType=content_type, CacheControl=cache)
        keys.append(key)
    body = json.dumps(config, separators=(",", ":")).encode()
    s3.put_object(Bucket=bucket, Key="config.json", Body=body, ContentType="application/json", CacheControl=NO_CACHE)
    return [*keys, "config.json"]


def empty(s3: Any, bucket: str) -> None:
    """Delete every object of the bucket (it has no versioning)."""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objects:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})


def _answer(event: dict[str, Any], status: str, reason: str = "") -> None:
    body = {
        "Status": status,
        "Reason": reason or status,
        "PhysicalResourceId": f"ui-content-{event['ResourceProperties']['Bucket']}",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }
    data = json.dumps(body).encode()
    request = urllib.request.Request(event["ResponseURL"], data=data, method="PUT", headers={"content-type": ""})
    with urllib.request.urlopen(request, timeout=30):
        pass


def handler(event: dict[str, Any], context: Any, *, s3: Any = None) -> None:
    """The custom resource: Create/Update publish, Delete empties; CloudFormation is always answered."""
    del context
    client = s3 if s3 is not None else cast(Any, boto3.client("s3"))  # pyright: ignore[reportUnknownMemberType]
    properties = event["ResourceProperties"]
    try:
        if event["RequestType"] == "Delete":
            empty(client, properties["Bucket"])
        else:
            publish(client, properties["Bucket"], WEB_ROOT, properties.get("Config", {}))
    except Exception as error:  # answer FAILED with the error class; CloudFormation rolls back
        _answer(event, "FAILED", f"{type(error).__name__} (see the function's log)")
        raise
    _answer(event, "SUCCESS")
