"""A plain JSON-RPC stdio client timing `read_doc` on two MCP servers.

    python3 benches/mcp_read_doc.py --file DOC --calls N --version REV \
        --a 'noma mcp --root DIR' --b 'node .../mcp-server/dist/index.js'

Starts both servers, `initialize`s each with protocolVersion REV (sends
`notifications/initialized`), makes one untimed `read_doc` call on each,
then N rounds of one `read_doc` call on each, the order alternating per
round (A B, B A, ...). A call is timed from the request's write to its
decoded answer: the response line read and parsed, and the result's body
taken as a client that understands structured output takes it
(`structuredContent` when the result has one, else its text content parsed
as JSON). Both servers get the same absolute `file` argument, and their
bodies must list the same number of blocks.

Prints, per server, the answer's size and the median call, and the
median of the per-round ratios A/B (the figure to quote: the machine is
shared, only ratios taken pair by pair mean anything).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time


class Server:
    """One MCP server over stdio, newline-delimited JSON-RPC."""

    def __init__(self, label: str, command: str, cwd: str) -> None:
        self.label = label
        self.proc = subprocess.Popen(
            shlex.split(command),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def request(self, method: str, params: dict) -> tuple[dict, int]:
        """Sends one request; returns the decoded response and its size."""
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                sys.exit(f"{self.label}: the server closed its output")
            msg = json.loads(raw)
            # Notifications (logging, list changes) are not the answer.
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    sys.exit(f"{self.label}: {method}: {msg['error']}")
                return msg, len(raw)

    def initialize(self, version: str) -> str:
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "mcp_read_doc bench", "version": "1"},
        }
        msg, _ = self.request("initialize", params)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.proc.stdin.write(json.dumps(note).encode() + b"\n")
        self.proc.stdin.flush()
        return msg["result"]["protocolVersion"]

    def read_doc(self, file: str) -> tuple[float, int, dict]:
        """One timed call: seconds, answer bytes, body."""
        start = time.perf_counter()
        msg, size = self.request("tools/call", {"name": "read_doc", "arguments": {"file": file}})
        result = msg["result"]
        body = result.get("structuredContent")
        if body is None:
            body = json.loads(result["content"][0]["text"])
        elapsed = time.perf_counter() - start
        if result.get("isError"):
            sys.exit(f"{self.label}: read_doc failed: {result}")
        return elapsed, size, body

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="the document, an absolute path")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--version", default="2025-06-18", help="protocolVersion to request")
    ap.add_argument("--a", required=True, help="server A's command")
    ap.add_argument("--b", required=True, help="server B's command")
    ap.add_argument("--cwd", default=".")
    args = ap.parse_args()

    servers = [Server("A", args.a, args.cwd), Server("B", args.b, args.cwd)]
    for s in servers:
        got = s.initialize(args.version)
        print(f"{s.label}: negotiated {got}")
    blocks = set()
    for s in servers:
        _, size, body = s.read_doc(args.file)
        blocks.add(len(body["blocks"]))
    if len(blocks) != 1:
        sys.exit(f"the servers list different block counts: {sorted(blocks)}")
    times: dict[str, list[float]] = {"A": [], "B": []}
    sizes: dict[str, int] = {}
    for r in range(args.calls):
        order = servers if r % 2 == 0 else servers[::-1]
        for s in order:
            t, size, _ = s.read_doc(args.file)
            times[s.label].append(t)
            sizes[s.label] = size
    for s in servers:
        s.close()
    ratios = [a / b for a, b in zip(times["A"], times["B"])]
    print(f"blocks: {blocks.pop()}, calls: {args.calls} per server, revision {args.version}")
    for label in ("A", "B"):
        ms = [t * 1000 for t in times[label]]
        print(
            f"{label}: answer {sizes[label]} bytes, call ms min {min(ms):.1f} "
            f"median {statistics.median(ms):.1f} max {max(ms):.1f}"
        )
    print(
        f"A/B per round: min {min(ratios):.3f} median {statistics.median(ratios):.3f} "
        f"max {max(ratios):.3f}  (B/A median {statistics.median(1 / x for x in ratios):.2f}x)"
    )


if __name__ == "__main__":
    main()
