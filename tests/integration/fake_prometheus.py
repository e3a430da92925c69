#!/usr/bin/python3
"""A broken Prometheus-compatible query endpoint on loopback, for what a real Prometheus never
answers (tests/integration/41-autoscaling.sh; the real one is in 59-hpa-prometheus.sh): every
GET /api/v1/query is answered 200 with the bytes of BODY_FILE as they are (a proxy's HTML error
page, a document that is not an instant vector), and its query appended to LOG_FILE.
Usage: fake_prometheus.py PORT_FILE BODY_FILE LOG_FILE (the chosen port is written to PORT_FILE)."""
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, body_file, log_file = sys.argv[1:4]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
        with open(log_file, "a") as log:
            log.write(query + "\n")
        if url.path != "/api/v1/query":
            self.send_error(404)
            return
        with open(body_file, "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".new", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".new", port_file)
server.serve_forever()
