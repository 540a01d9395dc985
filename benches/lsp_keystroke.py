"""Keystroke latency of two language servers: didChange -> publishDiagnostics.

Driven by benches/lsp_keystroke.sh. Each round starts a fresh server,
opens the document, waits for its first diagnostics, then sends --edits
single-character edits (typing `x` at the start of line 2, then deleting
it, alternately), each as the server's advertised sync asks (the whole text
for full sync, one range for incremental), and times each from just before
the didChange is written to the arrival of the next publishDiagnostics for
the document. The message bytes are built before the clock starts. Rounds
alternate the servers (A B A B ...); at the end of each round the server's
peak RSS (VmHWM) is read from /proc. Prints one line per round and a JSON
summary line (medians per server, the median of the per-round ratios B/A).

With --hover LINE:COL (server A only, --b not needed): each round runs
--reset first (e.g. removes the block cache, so the hover's history is
cold), opens the document, sends a hover at LINE:COL without waiting for
it and at once types the --edits keystrokes, each timed as above; then it
waits for the hover's answer and prints when it came (from its request)
and whether it came before the first keystroke's diagnostics.
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests/differential"))
from lsp_client import Client  # noqa: E402


def change(client, uri, version, text, insert):
    """The didChange bytes for typing (or deleting) `x` at line 1, col 0."""
    if client.sync_kind() == 2:
        start = {"line": 1, "character": 0}
        if insert:
            edit = {"range": {"start": start, "end": start}, "text": "x"}
        else:
            edit = {"range": {"start": start, "end": {"line": 1, "character": 1}}, "text": ""}
    else:
        edit = {"text": text}
    msg = {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [edit]},
    }
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def hover_sent(client, uri, at):
    """Sends a hover at `at` ("LINE:COL") without waiting: (id, time)."""
    line, col = (int(x) for x in at.split(":"))
    client.next_id += 1
    rid = client.next_id
    params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}
    t0 = time.perf_counter()
    client._send({"jsonrpc": "2.0", "id": rid, "method": "textDocument/hover", "params": params})
    return rid, t0


def hover_done(client, rid, timeout=600):
    """Waits for the answer `rid`: (arrived before now?, time it was seen)."""
    with client.cond:
        there = rid in client.responses
        ok = client.cond.wait_for(lambda: rid in client.responses or client.closed, timeout=timeout)
        if not ok or rid not in client.responses:
            raise RuntimeError("hover: no response (server gone or timed out)")
        msg = client.responses.pop(rid)
    if "error" in msg:
        raise RuntimeError(f"hover: {msg['error']}")
    return there, time.perf_counter()


def round_(argv, path, edits, cwd=None, reset=None, hover=None):
    """One server session: (open ms, [keystroke ms], peak KiB, hover)."""
    if reset:
        subprocess.run(reset, shell=True, check=True)
    text = path.read_text()
    uri = path.resolve().as_uri()
    client = Client(argv, cwd=cwd)
    t0 = time.perf_counter()
    client.open(uri, text)
    t1, _ = client.diagnostics_for(uri)
    open_ms = 1000 * (t1 - t0)
    # A server may publish more than once for the open (the reference does,
    # on open and on its first content): a request answered in order
    # flushes them, then they are dropped.
    at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    client.request("textDocument/completion", at)
    while not client.diagnostics.empty():
        client.diagnostics.get()
    lines = text.split("\n")
    typed = "\n".join(lines[:1] + ["x" + lines[1]] + lines[2:])
    times = []
    pending = hover_sent(client, uri, hover) if hover else None
    for i in range(edits):
        insert = i % 2 == 0
        data = change(client, uri, i + 2, typed if insert else text, insert)
        t0 = time.perf_counter()
        client.proc.stdin.write(data)
        client.proc.stdin.flush()
        t1, _ = client.diagnostics_for(uri)
        times.append(1000 * (t1 - t0))
        if pending and i == 0:
            with client.cond:
                before_keystroke = pending[0] in client.responses
    hovered = None
    if pending:
        _, seen = hover_done(client, pending[0])
        hovered = (1000 * (seen - pending[1]), before_keystroke)
    peak = client.peak_rss_kib()
    client.close()
    return open_ms, times, peak, hovered


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="server A's command line (ours)")
    ap.add_argument("--b", help="server B's command line (the yardstick)")
    ap.add_argument("--doc", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--cwd", help="the servers' working directory")
    ap.add_argument("--reset", help="a shell command run before each round")
    ap.add_argument("--hover", help="LINE:COL: hover there (A only) while typing")
    args = ap.parse_args()
    path = pathlib.Path(args.doc)
    servers = {"A": args.a.split()}
    if args.hover:
        hovers = []
        for r in range(args.rounds):
            open_ms, times, peak, (hover_ms, early) = round_(
                servers["A"], path, args.edits, args.cwd, args.reset, args.hover
            )
            hovers.append(hover_ms)
            print(
                f"round {r + 1} A: open {open_ms:.1f} ms, first keystroke {times[0]:.2f} ms, "
                f"keystroke median {statistics.median(times):.2f} ms (max {max(times):.2f}), "
                f"hover answered after {hover_ms:.1f} ms"
                f"{' (before the first keystroke' + chr(39) + 's diagnostics)' if early else ''}, "
                f"peak {peak / 1024:.1f} MiB",
                flush=True,
            )
        return
    if not args.b:
        ap.error("--b is needed without --hover")
    servers["B"] = args.b.split()
    result = {k: {"median_ms": [], "open_ms": [], "peak_kib": []} for k in servers}
    ratios = []
    for r in range(args.rounds):
        med = {}
        for name, argv in servers.items():
            open_ms, times, peak, _ = round_(argv, path, args.edits, args.cwd, args.reset)
            med[name] = statistics.median(times)
            result[name]["median_ms"].append(med[name])
            result[name]["open_ms"].append(open_ms)
            result[name]["peak_kib"].append(peak)
            print(
                f"round {r + 1} {name}: open {open_ms:.1f} ms, keystroke median "
                f"{med[name]:.2f} ms (min {min(times):.2f}, max {max(times):.2f}), "
                f"peak {peak / 1024:.1f} MiB",
                flush=True,
            )
        ratios.append(med["B"] / med["A"])
        print(f"round {r + 1}: B/A = {ratios[-1]:.1f}", flush=True)
    summary = {
        "rounds": args.rounds,
        "edits": args.edits,
        "ratio_b_over_a_median": statistics.median(ratios),
        "ratios": [round(x, 2) for x in ratios],
    }
    for name in servers:
        summary[name] = {
            "keystroke_ms_median": statistics.median(result[name]["median_ms"]),
            "open_ms_median": statistics.median(result[name]["open_ms"]),
            "peak_mib_max": max(result[name]["peak_kib"]) / 1024,
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
