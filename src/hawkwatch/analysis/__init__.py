"""Pure analyses: functions from model objects to new model objects (no files, clock or env)."""

from hawkwatch.analysis.session_report import build_session_report

__all__ = ["build_session_report"]
