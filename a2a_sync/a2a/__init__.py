"""The A2A protocol: models, the one-way codec chain, the method table, stream
accumulation. Imports the core and the public models, never a client or a server."""
