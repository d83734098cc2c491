#!/usr/bin/env python3
"""Loads a page in headless Chromium and waits for it to finish, through the DevTools
protocol: the page's work is asynchronous GPU work that Chromium's --dump-dom does not
wait for (it dumps at the load event, or when a virtual-time budget runs out, and
virtual time does not count the GPU process's work).

    run_page.py CHROMIUM URL DOM_OUT PNG_OUT TIMEOUT_S [CHROMIUM FLAGS...]

Opens URL, polls document.title until it no longer ends in "running", then writes the
page's HTML to DOM_OUT and a full-page screenshot to PNG_OUT. Console messages and
uncaught exceptions are printed to standard error. Exits 0 when the page finished, 1 on
a timeout (the HTML and screenshot are written anyway). Standard library only: the
WebSocket client is the minimal one the protocol needs (text frames, no extensions).
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


class DevTools:
    """One WebSocket connection to a page's DevTools endpoint."""

    def __init__(self, ws_url):
        u = urllib.parse.urlparse(ws_url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {head!r}")
        self.next_id = 0
        self.events = []

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            data += chunk
        return data

    def _send(self, text):
        payload = text.encode()
        header = bytearray([0x81])  # FIN, text frame
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack(">H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack(">Q", n)
        mask = os.urandom(4)  # clients must mask every frame
        header += mask
        self.sock.sendall(bytes(header) + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the connection")
            if opcode in (0x1, 0x0):
                message += payload
                if b0 & 0x80:
                    return json.loads(message)

    def call(self, method, **params):
        """Sends a command and returns its result; events that arrive first are kept."""
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = self._receive()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def print_events(self):
        for e in self.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                print(f"  console.{p.get('type')}: {text}", file=sys.stderr)
            elif e.get("method") == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                text = d.get("exception", {}).get("description", d.get("text"))
                print(f"  uncaught: {text}", file=sys.stderr)
        self.events.clear()


def main():
    chromium, url, dom_out, png_out, timeout_s = sys.argv[1:6]
    flags = sys.argv[6:]
    profile = tempfile.mkdtemp(prefix="tang-web-chromium-")
    browser = subprocess.Popen(
        [chromium, *flags, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(os.path.dirname(dom_out), "chromium.log"), "w"),
    )
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if browser.poll() is not None or time.time() > deadline:
                print("chromium did not start its DevTools endpoint", file=sys.stderr)
                return 1
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t.get("type") == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        tools.call("Runtime.enable")
        tools.call("Page.enable")
        tools.call("Page.navigate", url=url)
        finished = False
        deadline = time.time() + float(timeout_s)
        while time.time() < deadline:
            title = tools.evaluate("document.title") or ""
            tools.print_events()
            if title.startswith("tang web:") and not title.endswith("running"):
                finished = True
                break
            time.sleep(0.5)
        tools.print_events()
        with open(dom_out, "w", encoding="utf-8") as f:
            f.write(tools.evaluate("document.documentElement.outerHTML") or "")
        shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(png_out, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        if not finished:
            print(f"the page did not finish within {timeout_s} s", file=sys.stderr)
        return 0 if finished else 1
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
