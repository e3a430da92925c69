#!/usr/bin/python3
"""Drives the web dashboard in headless Chromium over the DevTools protocol (--remote-debugging-pipe:
NUL-separated JSON on fds 3 and 4, so no WebSocket library is needed), for 31-dashboard.sh:
types the token into the sign-in form and submits it, waits until the page is live and shows the
node, saves the DOM, creates a pod through the API and waits until the page shows it without a
reload (the watch), checks where the token is kept, and takes a screenshot.

usage: dashboard_cdp.py CHROMIUM PROFILE_DIR BASE_URL TOKEN DOM_OUT PNG_OUT
Prints what it checked; exits 1 with the reason on the first failure (every wait is bounded)."""
import base64
import json
import os
import subprocess
import sys
import time
import urllib.request

chromium, profile, base, token, dom_out, png_out = sys.argv[1:7]


class Browser:
    def __init__(self):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [chromium, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
             '--hide-scrollbars', '--remote-debugging-pipe', f'--user-data-dir={profile}',
             '--window-size=1360,1900', 'about:blank'],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b''
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, timeout=15):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params or {}}
        if self.session:
            msg['sessionId'] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b'\0')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b'\0' in self.buf:
                raw, self.buf = self.buf.split(b'\0', 1)
                reply = json.loads(raw)
                if reply.get('id') == self.next_id:
                    if 'error' in reply:
                        fail(f'{method}: {reply["error"]}')
                    return reply.get('result', {})
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                fail(f'{method}: chromium went away')
            self.buf += chunk
        fail(f'{method}: no answer within {timeout} s')

    def js(self, expression):
        r = self.call('Runtime.evaluate', {'expression': expression, 'returnByValue': True})
        if 'exceptionDetails' in r:
            fail(f'{expression}: {r["exceptionDetails"]}')
        return r['result'].get('value')

    def wait(self, what, expression, seconds=15):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.js(expression):
                print(f'ok {what}')
                return
            time.sleep(0.1)
        with open(dom_out, 'w') as f:
            f.write(self.js('document.documentElement.outerHTML') or '')
        fail(f'{what}: not within {seconds} s')


def fail(message):
    print(f'FAIL {message}')
    sys.exit(1)


b = Browser()
try:
    # the first answer waits for chromium's start too: over 15 s at a load of 36 on two cores
    target = b.call('Target.createTarget', {'url': f'{base}/ui/'}, timeout=40)['targetId']
    b.session = b.call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
    b.wait('the sign-in form', "document.readyState === 'complete' && document.getElementById('login')?.hidden === false")
    b.js("document.getElementById('token').focus()")
    b.call('Input.insertText', {'text': token})
    b.js("document.querySelector('#login-form button[type=submit]').click()")
    b.wait('signed in and live', "document.getElementById('live').dataset.state === 'live' && "
           "!!document.querySelector('[aria-label=\"Node mixed\"]') && "
           "!!document.querySelector('tr[data-pod=\"default/too-big\"] .event')")
    with open(dom_out, 'w') as f:
        f.write(b.js('document.documentElement.outerHTML'))
    if b.js(f"sessionStorage.getItem('xpool.token') === {json.dumps(token)} && document.cookie === ''"):
        print('ok the token in sessionStorage, no cookie')
    else:
        fail('the token is not in sessionStorage alone')
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'late'},
           'spec': {'containers': [{'name': 'c', 'image': 'busybox',
                                    'resources': {'limits': {'vendor.com/npu': 4}}}]}}
    req = urllib.request.Request(f'{base}/api/v1/namespaces/default/pods', json.dumps(pod).encode(),
                                 {'Authorization': f'Bearer {token}', 'Content-Type': 'application/json'})
    urllib.request.urlopen(req, timeout=10).read()
    b.wait('a new pod shown by the watch, without a reload',
           "(document.querySelector('tr[data-pod=\"default/late\"] .why') || {}).textContent"
           "?.includes('Insufficient vendor.com/npu')")
    b.js('window.scrollTo(0, 0)')
    png = b.call('Page.captureScreenshot', {'format': 'png'})['data']
    with open(png_out, 'wb') as f:
        f.write(base64.b64decode(png))
    print('ok a screenshot')
finally:
    b.session = None
    try:
        b.call('Browser.close', timeout=5)
    except SystemExit:
        pass
    try:
        b.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        b.proc.kill()
        b.proc.wait()
