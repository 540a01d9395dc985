"""Differential check of `noma lsp` against the reference's language server.

Run by lsp.sh (see README.md). Opens every example document in both servers
and asks, at every id, wikilink and reference-attribute position and on a
grid of positions, definition, references and completion, and documentSymbol
once per document; compares noma's answer with the reference's (noma's must
contain it), and the diagnostics of both (and noma's against `noma check`).
Prints agreement per request kind and every kind of difference with its
first examples; `--out FILE` writes the same as JSON.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from lsp_client import Client  # noqa: E402

ID_RE = re.compile(r'[{\s,]id="?([^"\s}]+)')
WIKILINK_RE = re.compile(r"\[\[([^\]\n]+?)\]\]")
ATTR_RE = re.compile(
    r'\b(?:for|target|parent|block|ref|reply_to|replyTo|reply|dataset)="([^"\n]*)"'
)
GRID = (0, 1, 2, 4, 8, 16, 32, 64)

# Differences with a cause (README.md, section "Language server") are
# marked documented by the predicate that recognises them (the kinds below
# with True); anything else is undocumented.


def positions(lines):
    """(line, character) pairs worth asking about, in order, no repeats."""
    seen = set()
    out = []

    def add(line, ch):
        if (line, ch) not in seen:
            seen.add((line, ch))
            out.append((line, ch))

    for n, text in enumerate(lines):
        for m in WIKILINK_RE.finditer(text):
            for ch in range(m.start(), m.end() + 1):
                add(n, ch)
        for rx in (ATTR_RE, ID_RE):
            for m in rx.finditer(text):
                for ch in range(m.start(1), m.end(1) + 1):
                    add(n, ch)
        for ch in GRID + (len(text),):
            if ch <= len(text):
                add(n, ch)
    return out


def utf16_col(text, ch):
    """Python character index -> UTF-16 column."""
    return len(text[:ch].encode("utf-16-le")) // 2


class Tally:
    def __init__(self):
        self.asked = defaultdict(int)
        self.agree = defaultdict(int)
        self.documented = defaultdict(int)
        self.kinds = defaultdict(lambda: {"count": 0, "examples": []})
        self.noma_only = defaultdict(int)

    def add(self, request, kinds, example):
        """One compared answer and its kinds of difference, each a
        (kind, documented) pair: none when they agree."""
        self.asked[request] += 1
        if not kinds:
            self.agree[request] += 1
            return
        if all(documented for _, documented in kinds):
            self.documented[request] += 1
        for kind, documented in kinds:
            k = self.kinds[(request, kind, documented)]
            k["count"] += 1
            if len(k["examples"]) < 3:
                k["examples"].append(example)


def inside(inner, outer):
    key = lambda p: (p["line"], p["character"])  # noqa: E731
    return key(outer["start"]) <= key(inner["start"]) and key(inner["end"]) <= key(
        outer["end"]
    )


def definition_kinds(ours, ref):
    """How noma's definition differs from the reference's (a Location): noma
    answers a LocationLink (the client asks for links), whose targetRange
    must be the reference's range."""
    ref = ref[0] if isinstance(ref, list) else ref
    ours = ours[0] if isinstance(ours, list) and ours else ours
    if not ours:
        return [("definition: noma answers nothing", False)]
    uri = ours.get("targetUri", ours.get("uri"))
    rng = ours.get("targetRange", ours.get("range"))
    if uri != ref["uri"]:
        return [("definition: another document", False)]
    if rng != ref["range"]:
        return [("definition: another range", False)]
    return []


def stem_alias(path):
    """The alias the reference gives the first level-1 heading of a file it
    parses with a name (its stem, number prefix dropped, slugified)."""
    stem = re.sub(r"^\d+[-_]", "", path.name[: -len(".noma")])
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")


def completion_kinds(ours, ref, path):
    """Reference labels missing from noma's completion, by kind."""
    ref_items = ref.get("items", []) if isinstance(ref, dict) else (ref or [])
    our_items = ours.get("items", []) if isinstance(ours, dict) else (ours or [])
    missing = {i["label"] for i in ref_items} - {i["label"] for i in our_items}
    kinds = []
    if stem_alias(path) in missing:
        missing.discard(stem_alias(path))
        kinds.append(("completion: the file-name alias", True))
    if missing:
        kinds.append(("completion: labels missing in noma", False))
    return kinds, sorted(missing)


def flatten(symbols, out=None):
    out = [] if out is None else out
    for s in symbols or []:
        out.append(s)
        flatten(s.get("children"), out)
    return out


def symbol_kinds(ours, ref):
    """Per reference symbol: its kinds of difference with noma's symbol
    starting on the same line (empty when they agree)."""
    by_line = defaultdict(list)
    for s in flatten(ours):
        by_line[s["range"]["start"]["line"]].append(s)
    results = []
    for r in flatten(ref):
        cands = by_line.get(r["range"]["start"]["line"], [])
        if not cands:
            results.append((r, [("symbol: missing in noma", False)]))
            continue
        o = cands[0]
        kinds = []
        if o["name"] != r["name"]:
            directive = r["name"].startswith("::") and o["name"].startswith(r["name"] + " ")
            kinds.append(
                ("symbol: directive name carries its id", True)
                if directive
                else ("symbol: another name", False)
            )
        if o["range"] != r["range"]:
            rr, orng = r["range"], o["range"]
            if rr["start"] == orng["start"] and (
                orng["end"]["line"] > rr["end"]["line"]
            ):
                kinds.append(("symbol: range ends later (trailing blank lines of a section)", True))
            else:
                kinds.append(("symbol: another range", False))
        if o["selectionRange"] != r["selectionRange"]:
            ok = inside(o["selectionRange"], r["selectionRange"])
            kinds.append(
                ("symbol: selectionRange is the id token", True)
                if ok
                else ("symbol: another selectionRange", False)
            )
        if o["kind"] != r["kind"]:
            kinds.append(("symbol: kind", True))
        if (o.get("detail") or "") != (r.get("detail") or ""):
            det = (r.get("detail") or "").lstrip("#") == (o.get("detail") or "")
            kinds.append(("symbol: detail", True) if det else ("symbol: another detail", False))
        results.append((r, kinds))
    return results


def diag_keys(diags):
    return sorted(
        {(d.get("code"), d["range"]["start"]["line"] + 1, d.get("severity")) for d in diags}
    )


def check_keys(noma, path):
    out = subprocess.run(
        [noma, "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
    )
    sev = {"error": 1, "warning": 2, "info": 3}
    keys = set()
    for f in json.loads(out.stdout):
        for d in f.get("diagnostics", []):
            line = (d.get("pos") or {}).get("line", 1) or 1
            keys.add((d["code"], line, sev.get(d.get("severity"), 0)))
    return sorted(keys)


def compare_diagnostics(ours, ref, path, name, noma, diag_report, noma_check_mismatch, close=False):
    """Opens `path` in both servers; records where their diagnostics
    differ, and where noma's differ from `noma check`'s."""
    text = path.read_text()
    uri = path.as_uri()
    ours.open(uri, text)
    ref.open(uri, text)
    _, our_diags = ours.diagnostics_for(uri)
    _, ref_diags = ref.diagnostics_for(uri)
    ok, rk = diag_keys(our_diags), diag_keys(ref_diags)
    if ok != rk:
        diag_report.append(
            {
                "file": name,
                "noma_only": sorted(set(ok) - set(rk)),
                "reference_only": sorted(set(rk) - set(ok)),
            }
        )
    if ok != check_keys(noma, path):
        noma_check_mismatch.append(name)
    if close:  # the servers need not keep every document
        for client in (ours, ref):
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--noma", required=True)
    ap.add_argument("--ref-server", required=True, help="the reference's built dist/index.js")
    ap.add_argument("--examples", required=True)
    ap.add_argument("--out")
    ap.add_argument(
        "--diagnostics-only",
        action="append",
        default=[],
        help="a directory whose .noma files are compared on diagnostics only",
    )
    args = ap.parse_args()
    args.noma = str(pathlib.Path(args.noma).resolve())

    files = sorted(pathlib.Path(args.examples).resolve().rglob("*.noma"))
    links = {"textDocument": {"definition": {"linkSupport": True}}}
    ours = Client([args.noma, "lsp"], capabilities=links)
    ref = Client(["node", args.ref_server, "--stdio"])
    caps = {"ours": ours.capabilities, "ref": ref.capabilities}
    tally = Tally()
    diag_report = []
    noma_check_mismatch = []
    for path in files:
        text = path.read_text()
        lines = text.split("\n")
        uri = path.as_uri()
        name = str(path.relative_to(pathlib.Path(args.examples).resolve()))
        compare_diagnostics(ours, ref, path, name, args.noma, diag_report, noma_check_mismatch)
        tdi = {"textDocument": {"uri": uri}}
        for r, kinds in symbol_kinds(
            ours.request("textDocument/documentSymbol", tdi),
            ref.request("textDocument/documentSymbol", tdi),
        ):
            example = f"{name}:{r['range']['start']['line'] + 1} {r['name']}"
            tally.add("documentSymbol", kinds, example)
        for line, ch in positions(lines):
            col = utf16_col(lines[line], ch)
            at = dict(tdi, position={"line": line, "character": col})
            example = f"{name}:{line + 1}:{col + 1} {lines[line].strip()[:60]}"
            our_def = ours.request("textDocument/definition", at)
            ref_def = ref.request("textDocument/definition", at)
            if ref_def:
                tally.add("definition", definition_kinds(our_def, ref_def), example)
            elif our_def:
                tally.noma_only["definition"] += 1
            our_c = ours.request("textDocument/completion", at)
            ref_c = ref.request("textDocument/completion", at)
            if ref_c:
                kinds, missing = completion_kinds(our_c, ref_c, path)
                tally.add("completion", kinds, f"{example} missing {missing[:5]}")
            elif our_c:
                tally.noma_only["completion"] += 1
            refs = dict(at, context={"includeDeclaration": True})
            if ours.request("textDocument/references", refs):
                tally.noma_only["references"] += 1
    more = [f for d in args.diagnostics_only for f in sorted(pathlib.Path(d).resolve().rglob("*.noma"))]
    for path in more:
        name = str(path)
        compare_diagnostics(
            ours, ref, path, name, args.noma, diag_report, noma_check_mismatch, close=True
        )
    if caps["ref"].get("workspaceSymbolProvider"):
        raise SystemExit("the reference now answers workspace/symbol: compare it too")
    ours.close()
    ref.close()
    report(tally, diag_report, noma_check_mismatch, caps, (len(files), len(more)), args.out)


def report(tally, diag_report, noma_check_mismatch, caps, counts, out):
    nfiles, nmore = counts
    ref_caps = sorted(k for k in caps["ref"] if k.endswith("Provider"))
    print(f"documents: {nfiles}; the reference answers: {', '.join(ref_caps)}")
    summary = {"documents": nfiles, "diagnostics_only": nmore, "reference_capabilities": ref_caps, "requests": {}}
    for req in ("definition", "completion", "documentSymbol"):
        asked, agree, doc = tally.asked[req], tally.agree[req], tally.documented[req]
        pct = lambda n: 100.0 * n / asked if asked else 100.0  # noqa: E731
        print(
            f"{req}: {asked} compared, {agree} agree ({pct(agree):.2f}%), "
            f"{agree + doc} agree or documented ({pct(agree + doc):.2f}%)"
        )
        summary["requests"][req] = {"compared": asked, "agree": agree, "documented": doc}
    for req in ("definition", "completion", "references"):
        print(f"  {req}: noma answers where the reference does not at {tally.noma_only[req]} positions")
    summary["noma_only"] = dict(tally.noma_only)
    kinds = sorted(tally.kinds.items(), key=lambda kv: (kv[0][2], -kv[1]["count"]))
    summary["kinds"] = []
    for (req, kind, documented), k in kinds:
        tag = "documented" if documented else "UNDOCUMENTED"
        print(f"[{tag}] {kind}: {k['count']}")
        for e in k["examples"]:
            print(f"    {e}")
        summary["kinds"].append(
            {"request": req, "kind": kind, "documented": documented, **k}
        )
    total = nfiles + nmore
    print(f"diagnostics: {total - len(diag_report)} of {total} documents agree (code, line, severity)")
    for d in diag_report:
        print(f"  {d['file']}: noma only {d['noma_only']}; reference only {d['reference_only']}")
    print(f"noma lsp diagnostics equal noma check on {total - len(noma_check_mismatch)} of {total}")
    for name in noma_check_mismatch:
        print(f"  DIFFERS from noma check: {name}")
    summary["diagnostics"] = diag_report
    summary["noma_check_mismatch"] = noma_check_mismatch
    if out:
        pathlib.Path(out).write_text(json.dumps(summary, indent=1))
    undocumented = sum(k["count"] for (_, _, d), k in tally.kinds.items() if not d)
    print(f"undocumented differences: {undocumented}")


if __name__ == "__main__":
    main()
