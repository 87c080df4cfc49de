"""The server's protocol bindings beside JSON-RPC (which lives in :mod:`..app`).

:mod:`.rest` serves A2A 1.0 HTTP+JSON over the same handler dispatch, limits, auth,
stream caps and shutdown as the JSON-RPC path.
"""
