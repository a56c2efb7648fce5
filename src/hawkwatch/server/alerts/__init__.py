"""Alerts: rules per project, fired by the pipeline and the worker, delivered durably.

``rules`` (add, list, remove; issue resolution) · ``releases`` (ordering release names for
regressions) · ``trigger`` (inside the pipeline's transaction: new issues, regressions, the
windows that fold repeats into a digest; thresholds evaluated by the worker) · ``messages``
(what a webhook body and an email say) · ``signing`` (the HMAC header and how to verify it) ·
``deliver`` (the queue: claim under a lease, send, retry with backoff) · ``runner`` (the worker's
alert loop). See "Alerts" in ``docs/server.md``.
"""

from hawkwatch.server.alerts.deliver import AlertSettings

__all__ = ["AlertSettings"]
