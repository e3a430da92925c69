#!/usr/bin/python3
"""A stand-in for Prometheus' instant query API (GET /api/v1/query?query=...) on loopback:
answers every query with one series whose value is the number in VALUE_FILE (Prometheus' JSON
shape), or an empty vector when the file is missing; each query is appended to LOG_FILE.
Usage: fake_prometheus.py PORT_FILE VALUE_FILE LOG_FILE (the chosen port is written to PORT_FILE)."""
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, value_file, log_file = sys.argv[1:4]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
        with open(log_file, "a") as log:
            log.write(query + "\n")
        if url.path != "/api/v1/query":
            self.send_error(404)
            return
        try:
            with open(value_file) as f:
                value = f.read().strip()
            result = [{"metric": {"__name__": query.split("{")[0]}, "value": [time.time(), value]}]
        except FileNotFoundError:
            result = []
        body = json.dumps({"status": "success",
                           "data": {"resultType": "vector", "result": result}}).encode()
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
