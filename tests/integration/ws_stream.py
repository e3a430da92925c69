#!/usr/bin/python3
# A WebSocket exec client that is hard on the stream's end (60-stream-stress): it reads slowly, in
# small pieces, and sends a ping every few milliseconds, so that its bytes are still arriving at
# the server and the agent while they end the stream. A side that closed its socket with such
# bytes unread would answer them with a reset and lose the output its kernel still held: the
# client would see a frame cut short. Every frame is checked whole; the output must match its
# SHA-256 and the stream end with a Status of Success and a close frame.
# With a last argument await-close it ends each stream as RFC 6455 (7.1.1) has a client end it:
# it answers the close frame with its own and waits for the server to close the connection (within
# CLOSE_WAIT_S: a server that never closes, and waits for the client to, fails the round).
# Usage: ws_stream.py BASE_URL TOKEN CA_FILE PATH_AND_QUERY SHA256 ROUNDS [await-close]
# Prints "ok ROUND" or "FAIL ROUND: why" per round; exits 0 when every round passed. Every wait
# is bounded (ROUND_S per round).
import base64
import hashlib
import json
import os
import select
import socket
import ssl
import struct
import sys
import time
from urllib.parse import urlsplit

ROUND_S = 60
CLOSE_WAIT_S = 20
PING_EVERY_S = 0.005
READ_PIECE = 4096


def connect(base, token, ca, path):
    u = urlsplit(base)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    raw = socket.create_connection((u.hostname, u.port), timeout=ROUND_S)
    sock = ctx.wrap_socket(raw, server_hostname=u.hostname)
    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET {path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
        f"Authorization: Bearer {token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
    )
    sock.sendall(head.encode())
    got = b""
    while b"\r\n\r\n" not in got:
        more = sock.recv(4096)
        if not more:
            raise RuntimeError("the connection closed before the upgrade's answer")
        got += more
    status, rest = got.split(b"\r\n\r\n", 1)
    if b" 101 " not in status.split(b"\r\n")[0]:
        raise RuntimeError("no upgrade: " + status.decode(errors="replace")[:200])
    return sock, rest


def ping(sock, n):
    payload = struct.pack(">I", n)
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.sendall(bytes([0x89, 0x80 | len(payload)]) + mask + masked)


def frames(buf):
    """Whole frames at the start of buf: (list of (fin, opcode, payload), bytes used)."""
    out, at = [], 0
    while len(buf) - at >= 2:
        b0, b1 = buf[at], buf[at + 1]
        if b1 & 0x80:
            raise RuntimeError("the server masked a frame")
        n, h = b1 & 0x7F, 2
        if n == 126:
            if len(buf) - at < 4:
                break
            n, h = struct.unpack(">H", buf[at + 2 : at + 4])[0], 4
        elif n == 127:
            if len(buf) - at < 10:
                break
            n, h = struct.unpack(">Q", buf[at + 2 : at + 10])[0], 10
        if len(buf) - at < h + n:
            break
        out.append((bool(b0 & 0x80), b0 & 0x0F, buf[at + h : at + h + n]))
        at += h + n
    return out, at


def await_close(sock):
    """Answers the server's close frame and waits for it to close: None, or why not."""
    payload = struct.pack(">H", 1000)
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.setblocking(True)
    sock.settimeout(CLOSE_WAIT_S)
    deadline = time.monotonic() + CLOSE_WAIT_S
    try:
        sock.sendall(bytes([0x88, 0x80 | len(payload)]) + mask + masked)
        while time.monotonic() < deadline:
            if not sock.recv(READ_PIECE):
                return None
    except socket.timeout:
        pass
    except OSError:
        return None  # closed with a reset: closed all the same
    return f"the server did not close the connection within {CLOSE_WAIT_S} s of the close handshake"


def one_round(base, token, ca, path, want, close_first=False):
    sock, buf = connect(base, token, ca, path)
    sock.setblocking(False)
    out, status, closed, pings, ping_error = hashlib.sha256(), None, False, 0, None
    total = 0
    deadline = time.monotonic() + ROUND_S
    next_ping = 0.0
    try:
        while not closed:
            now = time.monotonic()
            if now > deadline:
                return f"no end within {ROUND_S} s"
            if now >= next_ping and ping_error is None:
                try:
                    ping(sock, pings)
                    pings += 1
                except (BlockingIOError, ssl.SSLWantWriteError):
                    pass
                except OSError as e:
                    # the server may close once it sent its close frame: what came before
                    # must still all arrive
                    ping_error = e
                next_ping = now + PING_EVERY_S
            if not sock.pending():
                select.select([sock], [], [], PING_EVERY_S)
            try:
                more = sock.recv(READ_PIECE)
            except (BlockingIOError, ssl.SSLWantReadError):
                continue
            except OSError as e:
                return (f"reading: {e} after {total} bytes, {len(buf)} of them of a frame "
                        f"(sending a ping: {ping_error})")
            if not more:
                return (f"the connection ended after {total} bytes, {len(buf)} of them of a "
                        f"frame, with no close frame (sending a ping: {ping_error})")
            total += len(more)
            buf += more
            got, used = frames(buf)
            buf = buf[used:]
            for fin, op, payload in got:
                if not fin:
                    return "a fragmented message"
                if op == 0x8:
                    closed = True
                elif op in (0x1, 0x2) and payload:
                    if payload[0] == 1:
                        out.update(payload[1:])
                    elif payload[0] == 3:
                        status = payload[1:]
                elif op not in (0x1, 0x2, 0x9, 0xA):
                    return f"an unexpected opcode {op}"
        if close_first:
            why = await_close(sock)
            if why:
                return why
    finally:
        sock.close()
    if status is None or json.loads(status).get("status") != "Success":
        return f"the Status: {status!r}"
    if out.hexdigest() != want:
        return f"the output's SHA-256 is {out.hexdigest()}, expected {want}"
    return None


def main():
    base, token_file, ca, path, want, rounds = sys.argv[1:7]
    close_first = sys.argv[7:8] == ["await-close"]
    with open(token_file) as f:
        token = f.read().strip()
    failed = 0
    for i in range(int(rounds)):
        try:
            why = one_round(base, token, ca, path, want, close_first)
        except (OSError, RuntimeError, ValueError) as e:
            why = str(e)
        print(f"ok {i}" if why is None else f"FAIL {i}: {why}", flush=True)
        failed += why is not None
    sys.exit(1 if failed else 0)


main()
