"""The networking core: HTTP transport and pools, SSE reader and decoder, JSON-RPC
envelopes. No protocol knowledge: nothing here imports the A2A or MCP packages."""
