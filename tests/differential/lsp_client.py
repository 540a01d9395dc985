"""A plain JSON-RPC client for a language server over stdio (no dependencies).

Used by the optional differential check (lsp_driver.py) and the keystroke
benchmark (benches/lsp_keystroke.py). A reader thread frames the server's
stdout into messages; requests wait for their response by id, and
`publishDiagnostics` notifications are queued per document, so a caller can
wait for the diagnostics of one document version without sleeping.
"""

import json
import queue
import subprocess
import threading
import time


class Client:
    """One server process and its stdio session."""

    def __init__(self, argv, cwd=None, capabilities=None):
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.responses = {}
        self.cond = threading.Condition()
        self.diagnostics = queue.Queue()  # (arrival time, params)
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        result = self.request(
            "initialize",
            {"processId": None, "rootUri": None, "capabilities": capabilities or {}},
        )
        self.capabilities = result.get("capabilities", {})
        self.notify("initialized", {})

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self.cond:
                        self.closed = True
                        self.cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            if "id" in msg and "method" not in msg:
                with self.cond:
                    self.responses[msg["id"]] = msg
                    self.cond.notify_all()
            elif msg.get("method") == "textDocument/publishDiagnostics":
                self.diagnostics.put((now, msg["params"]))
            elif "id" in msg:
                # A server-to-client request (registration, configuration):
                # answered empty.
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def _send(self, msg):
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=120):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.cond:
            ok = self.cond.wait_for(
                lambda: rid in self.responses or self.closed, timeout=timeout
            )
            if not ok or rid not in self.responses:
                raise RuntimeError(f"{method}: no response (server gone or timed out)")
            msg = self.responses.pop(rid)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")

    def diagnostics_for(self, uri, timeout=300):
        """Waits for the next publishDiagnostics of `uri`: (time, list)."""
        while True:
            at, params = self.diagnostics.get(timeout=timeout)
            if params["uri"] == uri:
                return at, params["diagnostics"]

    def sync_kind(self):
        """1 full, 2 incremental, as the server advertised."""
        sync = self.capabilities.get("textDocumentSync", 1)
        return sync.get("change", 1) if isinstance(sync, dict) else sync

    def open(self, uri, text, version=1):
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "noma",
                    "version": version,
                    "text": text,
                }
            },
        )

    def peak_rss_kib(self):
        """VmHWM of the server process (KiB), or None when it is gone."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def close(self):
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.stdin.close()
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
