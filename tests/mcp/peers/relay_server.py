"""A stdio "server" that is a relay to the test: the test plays the MCP server.

``relay_server.py PORT [--ignore-eof]``: connects to 127.0.0.1:PORT (the test's
listening socket), copies its stdin to the socket and the socket's bytes to its stdout
unchanged, so the test decides exactly which bytes arrive and how they are split (a
notification and a reply in one write, half a line, ...). When the test closes the
socket the relay exits with status 3 (a server dying mid-reply); at stdin EOF it exits 0
unless ``--ignore-eof`` (then only a signal ends it).
"""

from __future__ import annotations

import os
import selectors
import socket
import sys


def main() -> None:
    port = int(sys.argv[1])
    ignore_eof = "--ignore-eof" in sys.argv[2:]
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.settimeout(None)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(stdin, selectors.EVENT_READ)
    selector.register(sock, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sock:
                data = sock.recv(65536)
                if not data:
                    os._exit(3)
                while data:
                    data = data[os.write(stdout, data) :]
            else:
                data = os.read(stdin, 65536)
                if not data:
                    selector.unregister(stdin)
                    if not ignore_eof:
                        sock.close()
                        os._exit(0)
                    continue
                sock.sendall(data)


if __name__ == "__main__":
    main()
