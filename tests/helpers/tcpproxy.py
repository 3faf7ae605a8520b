"""A small TCP proxy on 127.0.0.1 that can cut every connection for a while.

Used to show that the worker's reports survive a database outage: every
connection dropped for seconds, then accepted again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    """Forward 127.0.0.1:<port> to ``target``; :meth:`cut` drops and refuses connections."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._refuse_until = 0.0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="tcpproxy-accept").start()

    def cut(self, seconds: float) -> None:
        """Drop every open connection and refuse new ones for ``seconds``."""
        with self._lock:
            self._refuse_until = time.monotonic() + seconds
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            self._close(sock)

    def close(self) -> None:
        self._closed = True
        self.cut(0)
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                self._close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                self._close(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(src, dst), daemon=True, name="tcpproxy-pump"
                ).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close(src)
            self._close(dst)

    @staticmethod
    def _close(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):  # already closed by the other side
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
