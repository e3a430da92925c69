#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Creates the same objects through two builds' servers and compares every answer, its code and
its body byte for byte (uid, times, versions, cluster IPs and the kube-api-access volume's random
suffix masked): a change to the create path must answer as the build before it did. The objects
are the manifests given, and FUZZ_N (40) variants of each pod with members changed to odd values
(unknown keys, wrong types, unicode, reals, nulls), seeded by FUZZ_SEED (27). Asserts nothing
but its exit status (1 when an answer differs); prints the counts of each code.

    cp -a build /tmp/base  # before the change
    python3 bench/compare_creates.py /tmp/base/xpool-full build/xpool-full \\
        examples/ai-training.yaml tests/data/manifests/*.yaml
"""
import copy, json, os, random, re, shutil, subprocess, sys, tempfile, time, urllib.request, yaml

PATHS = {"Pod": "/api/v1/namespaces/default/pods", "ConfigMap": "/api/v1/namespaces/default/configmaps",
         "Service": "/api/v1/namespaces/default/services", "Secret": "/api/v1/namespaces/default/secrets",
         "Namespace": "/api/v1/namespaces", "Node": "/api/v1/nodes",
         "Deployment": "/apis/apps/v1/namespaces/default/deployments",
         "Job": "/apis/batch/v1/namespaces/default/jobs"}

def start(binary):
    d = tempfile.mkdtemp(prefix="compare_creates-")
    log = open(d + "/log", "w")
    p = subprocess.Popen([binary, "server", "--listen", "127.0.0.1:0", "--no-tls", "--data-dir", d + "/data",
                          "--no-scheduler"], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        m = re.search(r"listening on http://127.0.0.1:(\d+)", open(d + "/log").read())
        if m and os.path.exists(d + "/data/admin.kubeconfig"):
            tok = re.search(r"token: *(\S+)", open(d + "/data/admin.kubeconfig").read())
            if tok:
                return p, d, "http://127.0.0.1:" + m.group(1), tok.group(1)
        time.sleep(0.1)
    raise SystemExit("no server")

def post(url, token, path, body):
    req = urllib.request.Request(url + path, data=body, method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

VOLATILE = [(r'"uid":"[^"]*"', '"uid":U'), (r'"creationTimestamp":"[^"]*"', '"creationTimestamp":T'),
            (r'"resourceVersion":"[^"]*"', '"resourceVersion":R'), (r'"time":"[^"]*"', '"time":T'),
            (r'kube-api-access-[a-z0-9]{5}', 'kube-api-access-X'), (r'"clusterIP":"[^"]*"', '"clusterIP":C'),
            (r'"clusterIPs":\["[^"]*"\]', '"clusterIPs":C'), (r'"startTime":"[^"]*"', '"startTime":T')]

def mask(text):
    for a, b in VOLATILE:
        text = re.sub(a, b, text)
    return text

def fuzz(doc, rng, n):
    """Variants of a pod: unknown members, odd values, unicode, numbers, nulls, wrong types."""
    out = []
    leaves = ["x", "", "é☃𝄞", 0, 1, -1, 2**40, 80.0, 0.5, True, None, [], {}, ["a"], {"k": "v"}, "Always", "100m", "1.5Gi", "e"]
    for i in range(n):
        d = copy.deepcopy(doc)
        d.setdefault("metadata", {})["name"] = "fz-%d" % i
        for _ in range(rng.randint(1, 4)):
            node = d
            path = []
            while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
                k = rng.choice(list(node.keys())) if isinstance(node, dict) else rng.randrange(len(node))
                if isinstance(node[k], (dict, list)):
                    path.append(k); node = node[k]
                else:
                    break
            if isinstance(node, dict):
                key = rng.choice(list(node.keys()) + ["extra", "ünknown", "restartPolicy", "port"]) if node else "extra"
                if key == "name" and path == ["metadata"]:
                    continue
                node[key] = copy.deepcopy(rng.choice(leaves))
            elif isinstance(node, list):
                node.append(copy.deepcopy(rng.choice(leaves)))
        out.append(d)
    return out

def docs(files, rng):
    n = 0
    for f in files:
        for d in yaml.safe_load_all(open(f)):
            if not isinstance(d, dict) or d.get("kind") not in PATHS:
                continue
            n += 1
            d.setdefault("metadata", {})
            if d["kind"] == "Namespace":
                continue
            d["metadata"].pop("namespace", None)
            d["metadata"]["name"] = "%s-%d" % (d["kind"].lower(), n)
            yield d["kind"], d
            if d["kind"] == "Pod":
                for v in fuzz(d, rng, int(os.environ.get("FUZZ_N", "40"))):
                    if isinstance(v.get("metadata"), dict) and isinstance(v["metadata"].get("name"), str):
                        v["metadata"]["name"] = d["metadata"]["name"] + "-" + v["metadata"]["name"]
                    yield "Pod", v

def run(binary, files):
    p, d, url, token = start(binary)
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "27")))
    answers = []
    try:
        for i, (kind, doc) in enumerate(docs(files, rng)):
            code, body = post(url, token, PATHS[kind], json.dumps(doc).encode())
            answers.append("%s %d %d %s" % (kind, i, code, mask(body)))
    finally:
        p.terminate(); p.wait()
        shutil.rmtree(d)
    return answers

old, new = sys.argv[1], sys.argv[2]
files = sys.argv[3:]
a, b = run(old, files), run(new, files)
diff = [(x, y) for x, y in zip(a, b) if x != y]
codes = {}
for x in a:
    c = x.split(" ")[2]; codes[c] = codes.get(c, 0) + 1
print("answers", len(a), len(b), "codes", codes, "differ", len(diff))
for x, y in diff[:5]:
    print("OLD", x[:600]); print("NEW", y[:600])
sys.exit(1 if diff or len(a) != len(b) else 0)
