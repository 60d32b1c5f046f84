"""A real HTTP server on 127.0.0.1 (http.server in a thread) for the tests of cgr's clients:
downloads, model servers, Elasticsearch. Subclasses set up their handler and call `serve`."""

from __future__ import annotations

import http.server
import threading


class Loopback:
    httpd: http.server.ThreadingHTTPServer
    url: str

    def serve(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
