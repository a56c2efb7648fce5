"""The library under the ``hawkwatch`` command: one function per thing a command does.

Each module here answers one command's question and returns a result object that
``hawkwatch.report.outputs`` renders (console, JSON, exports). The public names are re-exported,
lazily, from ``hawkwatch`` itself (``hawkwatch.load_session`` …; see ``docs/api.md``); this
package imports nothing on its own, so importing one module costs only what it needs.
"""
