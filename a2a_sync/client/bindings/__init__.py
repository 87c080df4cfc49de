"""The A2A client's protocol bindings: one module per binding (JSON-RPC today)."""
