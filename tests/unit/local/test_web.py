"""`stepline.local.web`: the UI build served at `/`, the SPA fallback, and API paths left alone."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from stepline.local import web
from stepline.local.ui_build import start_build, web_sources
from stepline.local.web import describe, mount_web


def app_with(dist: Path) -> TestClient:
    app = FastAPI()

    @app.get("/api/thing")
    def thing() -> dict[str, str]:
        return {"ok": "yes"}

    @app.post("/api/only-post")
    def only_post() -> dict[str, str]:
        return {"ok": "yes"}

    mount_web(app, dist)
    return TestClient(app)


def built(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><div id=root></div>")
    (dist / "assets" / "app-abc123.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("outside")
    return dist


def test_files_index_and_the_spa_fallback(tmp_path: Path) -> None:
    client = app_with(built(tmp_path))
    index = client.get("/")
    assert index.status_code == 200 and "root" in index.text and index.headers["cache-control"] == "no-cache"
    asset = client.get("/assets/app-abc123.js")
    assert asset.text == "console.log(1)" and "immutable" in asset.headers["cache-control"]
    deep = client.get("/c/chat-1")  # a UI URL, reloaded: index.html
    assert deep.status_code == 200 and "root" in deep.text
    assert client.get("/../secret.txt").text != "outside"
    assert client.get("/%2e%2e/secret.txt").text != "outside"


def test_api_paths_never_fall_back(tmp_path: Path) -> None:
    client = app_with(built(tmp_path))
    assert client.get("/api/thing").json() == {"ok": "yes"}
    assert client.get("/api/nothing-here").status_code == 404
    assert client.get("/api").status_code == 404
    assert client.get("/api/only-post").status_code == 405  # a wrong method keeps its 405


def test_without_a_build_the_page_says_why(tmp_path: Path) -> None:
    client = app_with(tmp_path / "missing")
    page = client.get("/")
    assert page.status_code == 503
    assert "built without its web UI" in page.text and "/api/docs" in page.text
    assert client.get("/api/thing").status_code == 200
    assert "not built" in describe(tmp_path / "missing")
    assert describe(built(tmp_path)) == "served at /"


def test_in_a_checkout_the_page_says_how_to_build_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "web"
    monkeypatch.setattr(web, "web_sources", lambda: sources)
    page = app_with(sources / "dist").get("/")
    assert page.status_code == 503
    assert f"cd {sources} &amp;&amp; npm ci" in page.text and "npm run build" in page.text
    assert "npm ci" in describe(sources / "dist")


def test_the_tests_run_from_an_editable_checkout_whose_sources_are_found() -> None:
    sources = web_sources()  # from the install record (direct_url.json), not from this file's location
    assert sources is not None and (sources / "package.json").is_file() and (sources / "vite.config.ts").is_file()


def test_no_background_build_for_a_dist_outside_the_checkout(tmp_path: Path) -> None:
    out = io.StringIO()
    assert start_build(tmp_path / "elsewhere", out, web_dir=tmp_path / "web") is None
    assert out.getvalue() == ""
