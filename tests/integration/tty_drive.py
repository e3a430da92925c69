#!/usr/bin/python3
# Drives `kubectl exec -it` / `kubectl attach -it` through a pseudo-terminal, as a person at a
# terminal would (40-tty): the terminal's size at the start, a resize (SIGWINCH to kubectl, which
# sends it on), Ctrl-C typed while a command runs in the container, and the exit code.
# Usage: tty_drive.py exec|attach MARK KUBECTL_ARGS...
# Prints one line per step, "ok STEP: what it saw" or "FAIL STEP: why"; exits 0 when kubectl ended
# as the scenario expects. Every wait is bounded.
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

mode, mark, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
buf = b""
failed = False


def say(ok, step, what):
    global failed
    failed |= not ok
    print(("ok " if ok else "FAIL ") + step + ": " + what, flush=True)


def setsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_some(fd, timeout):
    global buf
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        return True
    try:
        data = os.read(fd, 65536)
    except OSError:
        return False  # EIO: kubectl closed the terminal
    buf += data
    return bool(data)


def expect(fd, pattern, seconds=15):
    """The first match of pattern in what kubectl printed (consumed up to it), or None."""
    global buf
    deadline = time.time() + seconds
    while True:
        m = re.search(pattern, buf)
        if m:
            buf = buf[m.end():]
            return m
        left = deadline - time.time()
        if left <= 0 or not read_some(fd, min(left, 0.5)):
            return re.search(pattern, buf)


def running(cmdline):
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if f.read().replace(b"\0", b" ").strip() == cmdline.encode():
                    return True
        except OSError:
            pass
    return False


master, slave = os.openpty()
setsize(slave, 30, 90)


def own_terminal():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


kubectl = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                           preexec_fn=own_terminal)
os.close(slave)
try:
    if mode == "attach":
        # attach shows output from now on: a line typed brings the prompt back
        os.write(master, b"\r")
    # the terminal: its name and the size it started with
    os.write(master, b"tty; stty size; echo T-$((40+2))\r")
    m = expect(master, rb"(/dev/pts/\d+|/dev/console)\r*\n(\d+ \d+)\r*\nT-42")
    say(bool(m), "tty", m.group(1).decode() if m else repr(buf[-300:]))
    size = m.group(2) if m else None
    # kubectl attach sends the size plus one, then the size, to make the program redraw: a
    # command run between the two sees 31 91, so the size is asked again until it landed
    for i in range(20 if mode == "attach" else 0):
        if size == b"30 90":
            break
        time.sleep(0.2)
        os.write(master, b"stty size; echo Z-$((%d+1))\r" % i)
        m = expect(master, rb"(\d+ \d+)\r*\nZ-%d" % (i + 1), 5)
        size = m.group(1) if m else None
    say(size == b"30 90", "size", size.decode() if size else "none")
    # a resize: kubectl gets SIGWINCH and sends the new size on (asked again until it landed)
    setsize(master, 41, 101)
    m = None
    for i in range(20):
        os.write(master, b"stty size; echo S-$((%d+1))\r" % i)
        m = expect(master, rb"(\d+ \d+)\r*\nS-%d" % (i + 1), 5)
        if m and m.group(1) == b"41 101":
            break
        time.sleep(0.2)
    say(bool(m) and m.group(1) == b"41 101", "resize", m.group(1).decode() if m else "none")
    # Ctrl-C reaches the foreground command through the line discipline: sleep ends by SIGINT
    # (the sh around it traps SIGINT, so that it lives to say how sleep ended)
    sleeper = "sleep 31." + mark
    os.write(master, ("sh -c 'trap \"echo got-int\" INT; %s; echo rc=$?'\r" % sleeper).encode())
    deadline = time.time() + 10
    while not running(sleeper) and time.time() < deadline:
        time.sleep(0.1)
    say(running(sleeper), "sleeping", sleeper)
    os.write(master, b"\x03")
    m = expect(master, rb"rc=(\d+)\r*\n", 10)
    say(bool(m) and m.group(1) == b"130", "interrupt", "rc=" + (m.group(1).decode() if m else "none"))
    if mode == "exec":
        os.write(master, b"exit 7\r")
        code = None
        deadline = time.time() + 15
        while code is None and time.time() < deadline:
            read_some(master, 0.5)
            code = kubectl.poll()
        say(code == 7, "exit", "kubectl exit code %s" % code)
        while read_some(master, 0.2) and len(buf) < 1 << 20:
            pass
        words = b"command terminated with exit code 7" in buf
        say(words, "words", "command terminated with exit code 7" if words else repr(buf[-300:]))
finally:
    if kubectl.poll() is None:
        kubectl.send_signal(signal.SIGTERM)
        try:
            kubectl.wait(10)
        except subprocess.TimeoutExpired:
            kubectl.kill()
            kubectl.wait()
sys.exit(1 if failed else 0)
