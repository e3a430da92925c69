#!/usr/bin/python3
# A registry that misbehaves on purpose, for tests/integration/24-images.sh: each repository is a
# case (hostile layers, malformed documents, digests that do not match, errors, a hang). Listens
# on 127.0.0.1:PORT (argv[1]; 0: a free port, printed on stdout) over plain HTTP.
import gzip, hashlib, http.server, io, json, socketserver, sys, tarfile, threading, time


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar_of(entries):
    """entries: (name, kind, extra) with kind file/dir/symlink/hardlink/chr/setuid."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, extra in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            data = b""
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, extra
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, extra
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 8, 0
            else:
                data = (extra or "x").encode()
                info.size, info.mode = len(data), 0o4755 if kind == "setuid" else 0o644
            t.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


blobs = {}
manifests = {}  # repo -> (content type, body)


def add_image(repo, layers_tar, config_override=None, layer_blobs=None):
    layers = [gzip.compress(t, mtime=0) for t in layers_tar]
    if layer_blobs is not None:
        layers = layer_blobs
    diff_ids = [digest(t) for t in layers_tar]
    config = config_override if config_override is not None else json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    blobs[digest(config)] = config
    for l in layers:
        blobs[digest(l)] = l
    m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
         "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": digest(config), "size": len(config)},
         "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                     "digest": digest(l), "size": len(l)} for l in layers]}
    manifests[repo] = ("application/vnd.oci.image.manifest.v1+json", json.dumps(m).encode())
    return m


ok = [("etc", "dir", None), ("etc/hello", "file", "hi")]
add_image("traversal", [tar_of(ok + [("../../escaped", "file", "out")])])
add_image("symlink", [tar_of(ok + [("evil", "symlink", "/tmp"), ("evil/escaped", "file", "out")])])
add_image("hardlink", [tar_of(ok + [("passwd", "hardlink", "../../../../etc/passwd")])])
add_image("device", [tar_of(ok + [("dev", "dir", None), ("dev/sda", "chr", None)])])
add_image("setuid", [tar_of(ok + [("bin", "dir", None), ("bin/su", "setuid", "su")])])
good = tar_of(ok)
add_image("truncated", [good], layer_blobs=[gzip.compress(good, mtime=0)[:40]])
add_image("badconfig", [good], config_override=b'{"rootfs": {"type": "layers", "diff_ids": "nope"}}')
# a layer whose bytes are not those the manifest names
m = add_image("mismatch", [good])
blobs[m["layers"][0]["digest"]] = gzip.compress(tar_of(ok + [("extra", "file", "x")]), mtime=0)
# a layer whose download stops half-way for a minute (the pull is killed meanwhile)
slow_tar = tar_of(ok + [("big", "file", "y" * 200000)])
slow = add_image("slow", [slow_tar], layer_blobs=[slow_tar])
slow_digest = slow["layers"][0]["digest"]
manifests["badjson"] = ("application/vnd.oci.image.manifest.v1+json", b'{"schemaVersion": 2, "layers": [')
manifests["badindex"] = ("application/vnd.oci.image.index.v1+json",
                         json.dumps({"schemaVersion": 2, "manifests": [{"digest": "sha256:xyz", "size": 1}]}).encode())
manifests["schema1"] = ("application/vnd.docker.distribution.manifest.v1+prettyjws",
                        json.dumps({"schemaVersion": 1, "name": "x"}).encode())


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body=b"", ctype="application/json", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/token?"):
            # a token service: basic puller:s3cret, scope of the bearer repository
            if self.headers.get("Authorization") != "Basic cHVsbGVyOnMzY3JldA==" or "scope=repository%3Abearer%3Apull" not in self.path:
                return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}')
            return self.answer(200, b'{"token":"t0k3n"}')
        parts = self.path.split("/")  # "", v2, repo, kind, ref
        if self.path == "/v2/" or len(parts) < 5:
            return self.answer(200, b"{}")
        repo, kind, ref = parts[2], parts[3], parts[4]
        if repo == "hang":
            time.sleep(60)
            return
        if repo == "e500":
            return self.answer(500, b'{"errors":[{"code":"UNKNOWN","message":"storage exploded"}]}')
        if repo == "bearer" and self.headers.get("Authorization") != "Bearer t0k3n":
            realm = "http://127.0.0.1:%d/token" % self.server.server_address[1]
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token required"}]}',
                               headers=[("WWW-Authenticate", 'Bearer realm="%s",service="fake",scope="repository:bearer:pull"' % realm)])
        if repo == "bearer":
            repo = "setuid"
        if repo == "e401":
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                               headers=[("WWW-Authenticate", 'Basic realm="fake"')])
        if kind == "manifests" and repo in manifests:
            ctype, body = manifests[repo]
            return self.answer(200, body, ctype, [("Docker-Content-Digest", digest(body))])
        if kind == "blobs" and ref == slow_digest:
            body = blobs[ref]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        if kind == "blobs" and ref in blobs:
            return self.answer(200, blobs[ref], "application/octet-stream")
        return self.answer(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}')


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
# bounded: the test's registry never outlives it by long
time.sleep(int(sys.argv[2]) if len(sys.argv) > 2 else 600)
