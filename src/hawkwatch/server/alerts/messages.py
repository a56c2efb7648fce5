"""What a notification says: the webhook's JSON body and the email's subject and text.

Rendered when sent (from the event stored with the delivery), so the links use the sending
worker's ``public_url``: ``{public_url}/p/{project}/issues/{issue_id}``, the dashboard's scheme.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote


def issue_url(public_url: str, project: str, issue_id: int) -> str:
    return f"{public_url.rstrip('/')}/p/{quote(project, safe='')}/issues/{issue_id}"


def project_url(public_url: str, project: str) -> str:
    return f"{public_url.rstrip('/')}/p/{quote(project, safe='')}"


def with_links(event: dict[str, Any], public_url: str) -> dict[str, Any]:
    """The event with ``url`` fields: the issue's page, or the project's for the others."""
    linked = dict(event)
    project = str(event["project"])
    if "issue" in event:
        linked["issue"] = {**event["issue"],
                           "url": issue_url(public_url, project, event["issue"]["id"])}  # fmt: skip
        linked["url"] = linked["issue"]["url"]
    else:
        linked["url"] = project_url(public_url, project)
    if "issues" in event:
        linked["issues"] = [{**i, "url": issue_url(public_url, project, i["id"])}
                            for i in event["issues"]]  # fmt: skip
    return linked


def webhook_body(key: str, event: dict[str, Any], public_url: str) -> bytes:
    body = {"id": key, **with_links(event, public_url), "text": summary(event)}
    return json.dumps(body, sort_keys=True).encode()


def summary(event: dict[str, Any]) -> str:
    """One line: what happened."""
    project = event["project"]
    kind = event["type"]
    if kind == "new-issue":
        return f"{project}: new {event['issue']['kind']} issue: {event['issue']['title']}"
    if kind == "regression":
        return (f"{project}: regression in {event['release']} (resolved in "
                f"{event['resolved_in_release']}): {event['issue']['title']}")  # fmt: skip
    if kind == "threshold":
        word = "below" if event["metric"] == "crash-free" else "above"
        return (f"{project}: {event['metric']} rate {event['value_pct']:.1f} % is {word} "
                f"{event['limit_pct']:g} % over {event['sessions']} sessions")  # fmt: skip
    issues = len(event["issues"])
    return (f"{project}: and {event['occurrences']} more occurrence"
            f"{'s' if event['occurrences'] != 1 else ''} of {issues} issue"
            f"{'s' if issues != 1 else ''} ({event['rule']})")  # fmt: skip


def email_text(event: dict[str, Any], public_url: str) -> tuple[str, str]:
    """Subject and plain-text body."""
    linked = with_links(event, public_url)
    lines = [summary(event), ""]
    if "issue" in linked:
        issue = linked["issue"]
        lines += [f"Kind: {issue['kind']}", f"Title: {issue['title']}"]
        if issue.get("culprit"):
            lines.append(f"Culprit: {issue['culprit']}")
        if event.get("release"):
            lines.append(f"Release: {event['release']}")
    for folded in linked.get("issues", []):
        lines.append(f"- {folded['occurrences']} × {folded['title']}: {folded['url']}")
    lines += ["", linked["url"]]
    return f"[hawkwatch] {summary(event)}"[:200], "\n".join(lines) + "\n"
