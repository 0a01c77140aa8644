"""The web layer: REST + SSE API and the dashboard (FastAPI, Jinja2 + htmx)."""
