"""The session views as HTML: one rendering for the HTML report and the dashboard's session page.

``session_view.render_session_view(report)`` gives a fragment from the report JSON
(``hawkwatch report --json``, what the server stores); ``assets.asset_files()`` the scripts and
styles it needs (served at ``/static/<name>``); ``standalone.render_standalone_html`` one
self-contained file. Standard library only: the agent never imports this package.
"""
