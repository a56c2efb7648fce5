"""The collector server (extra ``server``): ingest, pipeline workers, query API.

Layers: ``schema`` (tables) and ``database`` (engines, migrations) at the bottom; ``auth`` and
``admin`` (projects, users, keys); ``ingest`` (accepting envelopes and artifacts durably);
``jobs`` (claiming work: ``SKIP LOCKED`` on PostgreSQL); ``pipeline`` (an envelope → sessions,
issues, occurrences, using the same analysis as the CLI); ``queries`` (what the API returns);
``app`` (the Starlette routes); ``worker`` (the loop that runs jobs); ``alerts`` (rules fired by
the pipeline and the worker, notifications delivered from a durable queue). See
``docs/server.md``.
"""
