#!/usr/bin/env python3
"""Writes pod-*.pb: Pod bodies made of the PodTemplateSpec that kubectl 1.32 encoded in its
captured `kubectl create job` / `create deployment` requests (job-j.pb, deployment-d.pb), in the
envelope kubectl uses (namespace-x.pb), with the empty PodStatus Go's encoder writes. kubectl 1.32
sends `kubectl run` as JSON, so no kubectl command sends a Pod as protobuf; client-go typed
clients do, with these same encodings."""
import sys

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def read_varint(b, i):
    n = s = 0
    while True:
        n |= (b[i] & 0x7F) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i

def fields(b):
    i = 0
    while i < len(b):
        tag, i = read_varint(b, i)
        if tag & 7 == 2:
            n, i = read_varint(b, i)
            yield tag >> 3, b[i:i + n]
            i += n
        else:
            v, i = read_varint(b, i)
            yield tag >> 3, v

def field(b, num):
    return next(v for n, v in fields(b) if n == num)

def ld(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload

def template(path, spec_field):  # envelope -> raw -> spec -> template
    raw = field(open(path, "rb").read()[4:], 2)
    return field(field(raw, 2), spec_field)

empty_status = b"".join(ld(n, b"") for n in (1, 3, 4, 5, 6, 9, 11, 14))
for src, spec_field, name, ns in (("job-j.pb", 6, "j", b""), ("deployment-d.pb", 3, "d", b"default")):
    t = template(src, spec_field)
    meta, spec = field(t, 1), field(t, 2)
    # the template has no name: give the pod one, as a client would
    meta = ld(1, name.encode()) + b"".join(
        (ld(n, v) if isinstance(v, bytes) else varint(n << 3) + varint(v))
        for n, v in fields(meta) if n != 1 and not (n == 3 and ns))
    if ns:
        meta += ld(3, ns)
    raw = ld(1, meta) + ld(2, spec) + ld(3, empty_status)
    body = b"k8s\x00" + ld(1, ld(1, b"v1") + ld(2, b"Pod")) + ld(2, raw) + ld(3, b"") + ld(4, b"")
    open("pod-" + name + ".pb", "wb").write(body)
