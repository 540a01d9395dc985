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
"""

import argparse
import json
import pathlib
import statistics
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


def round_(argv, path, edits):
    """One server session: (open ms, [keystroke ms], peak KiB)."""
    text = path.read_text()
    uri = path.resolve().as_uri()
    client = Client(argv)
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
    for i in range(edits):
        insert = i % 2 == 0
        data = change(client, uri, i + 2, typed if insert else text, insert)
        t0 = time.perf_counter()
        client.proc.stdin.write(data)
        client.proc.stdin.flush()
        t1, _ = client.diagnostics_for(uri)
        times.append(1000 * (t1 - t0))
    peak = client.peak_rss_kib()
    client.close()
    return open_ms, times, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="server A's command line (ours)")
    ap.add_argument("--b", required=True, help="server B's command line (the yardstick)")
    ap.add_argument("--doc", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=20)
    args = ap.parse_args()
    path = pathlib.Path(args.doc)
    servers = {"A": args.a.split(), "B": args.b.split()}
    result = {k: {"median_ms": [], "open_ms": [], "peak_kib": []} for k in servers}
    ratios = []
    for r in range(args.rounds):
        med = {}
        for name, argv in servers.items():
            open_ms, times, peak = round_(argv, path, args.edits)
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
