"""Pure analyses: functions from model objects to new model objects (no files, clock or env).

Import the module you need (``hawkwatch.analysis.session_report``): this package imports none
of them, so the agent, which needs a few small ones, does not load the report's machinery.
"""
