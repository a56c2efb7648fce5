"""The dashboard served by ``hawkwatch server run`` at ``/``: server-rendered pages over the
same tables as the query API, behind a browser login."""

from hawkwatch.server.dashboard.routes import DashboardSettings, dashboard_routes

__all__ = ["DashboardSettings", "dashboard_routes"]
