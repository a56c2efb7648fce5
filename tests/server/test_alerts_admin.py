"""Managing alerts: the CLI (add-alert, list-alerts, remove-alert, resolve-issue) and the API
(resolve an issue, read a project's rules and deliveries), on both databases."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from sqlalchemy import Engine, select

from hawkwatch.cli import main
from hawkwatch.server import admin
from hawkwatch.server.alerts import rules
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import issues
from tests.server.alert_receivers import project_with_key, upload_session
from tests.server.conftest import LiveServer

T0 = 1_900_000_000.0


def call(server: LiveServer, token: str | None, path: str, body: object = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        server.url + path, method="GET" if body is None else "POST",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def test_resolve_and_read_alerts_through_the_api(live_server: LiveServer, engine: Engine) -> None:
    project = project_with_key(engine)
    admin.add_user(engine, "dev@example.test", "correct horse")
    token = admin.add_token(engine, "dev@example.test")
    hook = "http://127.0.0.1:9/hook"
    added = rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                                 webhook_url=hook))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine)
    with engine.connect() as db:
        issue_id = db.execute(select(issues.c.id)).scalar_one()

    path = f"/api/v1/issues/{issue_id}/resolve"
    assert call(live_server, None, path, {"release": "1.0"})[0] == 401
    assert call(live_server, token, path, {"version": "1.0"})[0] == 400
    assert call(live_server, token, "/api/v1/issues/999/resolve", {"release": "1.0"})[0] == 404
    status, body = call(live_server, token, path, {"release": "1.0"})
    assert status == 200 and body == {"id": issue_id, "status": "resolved",
                                      "resolved_in_release": "1.0"}  # fmt: skip
    listed = call(live_server, token, "/api/v1/issues?project=shop")[1]["issues"]
    assert [(i["id"], i["status"], i["resolved_in_release"]) for i in listed] == [
        (issue_id, "resolved", "1.0")]  # fmt: skip

    status, alerts = call(live_server, token, "/api/v1/alerts?project=shop")
    assert status == 200
    (rule,) = alerts["alerts"]
    assert rule["id"] == added["id"] and rule["rule"] == "new-issue"
    assert "webhook_secret" not in rule and added["webhook_secret"] not in json.dumps(alerts)
    (delivery,) = alerts["deliveries"]
    assert (delivery["type"], delivery["state"], delivery["channel"]) == (
        "new-issue", "queued", "webhook")  # fmt: skip
    assert call(live_server, token, "/api/v1/alerts?project=nope")[0] == 404
    assert call(live_server, None, "/api/v1/alerts?project=shop")[0] == 401
    schema = call(live_server, token, "/api/v1/openapi.json")[1]
    assert {"/api/v1/alerts", "/api/v1/issues/{issue_id}/resolve"} <= set(schema["paths"])


def test_the_cli_manages_rules_and_resolves_issues(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    database = ["--database", engine.url.render_as_string(hide_password=False)]
    project = project_with_key(engine)
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine)
    capsys.readouterr()

    assert main(["server", "add-alert", "--project", "shop", "--rule", "threshold",
                 "--metric", "crash-free", "--below", "99.5", "--min-sessions", "50",
                 "--interval", "30m", "--email", "a@example.test", "--email", "b@example.test",
                 *database]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    rule_id = int(out)
    assert "webhook secret" not in err  # no webhook, no secret
    assert main(["server", "add-alert", "--project", "shop", "--rule", "new-issue",
                 "--webhook", "https://hooks.example.test/x", *database]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    secret = err.split("webhook secret (shown once): ")[1].strip()
    assert len(secret) >= 40

    assert main(["server", "list-alerts", "--project", "shop", "--json", *database]) == 0
    listed = json.loads(capsys.readouterr().out)["alerts"]
    assert [(r["id"], r["rule"], r["interval_s"], r["email_to"]) for r in listed] == [
        (rule_id, "threshold", 1800.0, ["a@example.test", "b@example.test"]),
        (int(out), "new-issue", 3600.0, []),
    ]  # fmt: skip
    assert listed[0]["limit_pct"] == 99.5 and listed[0]["min_sessions"] == 50
    assert main(["server", "list-alerts", "--project", "shop", *database]) == 0
    text = capsys.readouterr().out
    assert "crash-free below 99.5%" in text and "webhook https://hooks.example.test/x" in text

    assert main(["server", "remove-alert", str(rule_id), *database]) == 0
    assert [r["id"] for r in rules.list_rules(engine, "shop")] == [int(out)]
    assert main(["server", "resolve-issue", "1", "--release", "2.0", *database]) == 0
    with engine.connect() as db:
        assert db.execute(select(issues.c.status, issues.c.resolved_in_release)).one() == (
            "resolved", "2.0")  # fmt: skip
    capsys.readouterr()

    refused = [
        (["remove-alert", str(rule_id)], f"no alert rule {rule_id}"),
        (["resolve-issue", "99", "--release", "1"], "no issue 99"),
        (["add-alert", "--project", "shop", "--rule", "new-issue"], "somewhere to go"),
        (["add-alert", "--project", "nope", "--rule", "new-issue", "--email", "a@b.c"],
         "no project 'nope'"),
        (["add-alert", "--project", "shop", "--rule", "threshold", "--metric", "stall",
          "--below", "5", "--email", "a@b.c"], "stall rate --above"),
        (["add-alert", "--project", "shop", "--rule", "new-issue", "--webhook", "ftp://x"],
         "not an http(s) URL"),
        (["list-alerts", "--project", "nope"], "no project 'nope'"),
    ]  # fmt: skip
    for argv, reason in refused:
        assert main(["server", *argv, *database]) == 1, argv
        err = capsys.readouterr().err
        assert reason in err and "Traceback" not in err and err.count("\n") == 1, err
