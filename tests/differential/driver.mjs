// Differential check: the reference engine (built TypeScript library) versus
// the `noma` binary, over a corpus of documents and generated patch ops.
//
// Optional, never run in CI. Entry point: tests/differential/run.sh, which
// passes the flags below. Usage:
//
//   node driver.mjs --ref /tmp/noma-ref --noma target/debug/noma \
//        --root . --shared ../shared [--seed N] [--cases 2000] [--jobs 2] \
//        [--out summary.json] [--examples 1]
//
// Classes compared, each reported with its agreement:
//   ids     the id registry: canonical id list (order included) and aliases
//   check   the set of "severity:code" diagnostics
//   render  the bytes of the .noma render
//   blocks  per block: span start/end line and the block source hash
//   patch   the result bytes of a source-preserving patch, or the error code
//
// Each class is reported twice: raw agreement, and agreement up to the
// documented differences of `.noma/reference-differences.noma` (see
// "documented classes" below).
//
// The reference side mirrors what the reference CLI does for ids/check/render
// (parse with the file name, then inline dataset `src=` files); hashes and
// patches use its library calls (block hash over the block's source lines,
// source-preserving patch), which take no file name.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

// ---------------------------------------------------------------- arguments
const args = {};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (!a.startsWith("--")) continue;
  const k = a.slice(2);
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith("--")) args[k] = "1";
  else { args[k] = v; i++; }
}
const REF = resolve(args.ref ?? process.env.NOMA_REF ?? "/tmp/noma-ref");
const NOMA = resolve(args.noma ?? process.env.NOMA ?? "target/debug/noma");
const ROOT = resolve(args.root ?? ".");
const SHARED = resolve(args.shared ?? join(ROOT, "..", "shared"));
const SEED = Number(args.seed ?? Math.floor(Math.random() * 2 ** 31));
const CASES = Number(args.cases ?? 2000);
const JOBS = Math.max(1, Number(args.jobs ?? 2));
const N_EXAMPLES = Number(args.examples ?? 1);
const OUT = args.out ? resolve(args.out) : null;

console.log(`differential: seed=${SEED} cases=${CASES} jobs=${JOBS}`);
console.log(`differential: reference=${REF} noma=${NOMA}`);

// ------------------------------------------------------ the reference engine
const refUrl = (m) => pathToFileURL(join(REF, "dist", m)).href;
const R = {
  ...(await import(refUrl("parser.js"))),
  ...(await import(refUrl("patch.js"))),
  ...(await import(refUrl("ids.js"))),
  ...(await import(refUrl("validator.js"))),
  ...(await import(refUrl("renderer-noma.js"))),
  ...(await import(refUrl("loader.js"))),
  ...(await import(refUrl("ast.js"))),
};
const yaml = (await import(pathToFileURL(join(REF, "node_modules", "js-yaml", "index.js")).href)).default;

// `check` mirrors the reference CLI: parse with the file name, then inline
// dataset `src=` files. ids and render use the library parse without a file
// name, as the reference's conformance fixtures do (expected.ids.json has no
// file-name alias); the file-name alias its CLI adds is counted apart.
function refLoad(path, asCli) {
  const src = readFileSync(path, "utf8");
  const doc = R.parse(src, asCli ? { filename: path } : {});
  if (asCli) R.inlineDatasetSources(doc, undefined, {});
  return doc;
}
const notes = { fileNameAlias: 0, fileNameAliasExample: null };

// ------------------------------------------------------------ seeded random
function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(SEED);
const ri = (n) => Math.floor(rnd() * n);
const pick = (xs) => xs[ri(xs.length)];
const chance = (p) => rnd() < p;

// ---------------------------------------------------------------- our side
function run(cmd, argv) {
  return new Promise((res) => {
    const p = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
    const out = []; const err = [];
    p.stdout.on("data", (d) => out.push(d));
    p.stderr.on("data", (d) => err.push(d));
    p.on("close", (code) => res({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }));
  });
}
async function pool(items, fn) {
  let next = 0;
  const worker = async () => { while (next < items.length) { const i = next++; await fn(items[i], i); } };
  await Promise.all(Array.from({ length: JOBS }, worker));
}

// ------------------------------------------------------------------ corpus
function walkFiles(dir, pred, acc = []) {
  if (!existsSync(dir)) return acc;
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walkFiles(p, pred, acc);
    else if (pred(p)) acc.push(p);
  }
  return acc;
}
const refNoma = join(SHARED, "reference", "noma");
const docs = []; // {path, label, origin}
for (const p of walkFiles(join(refNoma, "examples"), (p) => p.endsWith(".noma"))) docs.push({ path: p, origin: "examples" });
for (const p of walkFiles(join(refNoma, "docs"), (p) => p.endsWith(".noma"))) docs.push({ path: p, origin: "docs" });
for (const p of walkFiles(join(refNoma, "conformance"), (p) => basename(p) === "input.noma")) docs.push({ path: p, origin: "ref-conformance" });
for (const p of walkFiles(join(ROOT, "conformance"), (p) => basename(p) === "input.noma")) docs.push({ path: p, origin: "conformance" });
const label = (p) => (p.startsWith(SHARED) ? "shared/" + relative(SHARED, p) : relative(ROOT, p));
for (const d of docs) d.label = label(d.path);

// Fixture patch cases: the op file beside a conformance input.
const fixtureCases = [];
for (const d of docs) {
  if (d.origin !== "ref-conformance" && d.origin !== "conformance") continue;
  const pj = join(dirname(d.path), "patch.json");
  if (!existsSync(pj)) continue;
  try { fixtureCases.push({ doc: d, op: JSON.parse(readFileSync(pj, "utf8")), gen: "fixture" }); } catch { /* unreadable fixture: skip */ }
}

// Structural mutations, written under a temp dir with the original base name
// (the reference derives an alias from the file name).
const TMP = mkdtempSync(join(tmpdir(), "noma-diff-"));
const MUTATIONS = {
  "crlf": (s) => s.replace(/\r?\n/g, "\r\n"),
  "no-final-newline": (s) => s.replace(/\n+$/, ""),
  "extra-blank-lines": (s) => s.replace(/\n\n/g, "\n\n\n\n"),
  "no-blank-lines": (s) => s.replace(/\n\s*\n/g, "\n"),
  "trailing-spaces": (s) => s.split("\n").map((l, i) => (i % 3 === 0 && l !== "---" ? l + "  " : l)).join("\n"),
  "duplicate-block": (s) => {
    const lines = s.split("\n");
    const starts = lines.map((l, i) => (/^(#{1,6} |::)/.test(l) ? i : -1)).filter((i) => i >= 0);
    if (starts.length < 2) return s + "\n# Extra\n\nMore text.\n";
    const k = ri(starts.length - 1);
    const seg = lines.slice(starts[k], starts[k + 1]);
    return [...lines.slice(0, starts[k + 1]), ...seg, ...lines.slice(starts[k + 1])].join("\n");
  },
  "drop-line": (s) => { const l = s.split("\n"); if (l.length > 3) l.splice(1 + ri(l.length - 2), 1); return l.join("\n"); },
  "tab-indent": (s) => s.replace(/\n(?=[^\n#:`|-])/g, "\n\t"),
};
const mutated = [];
{
  const base = docs.filter((d) => d.origin !== "conformance" || chance(0.5));
  const n = Math.min(60, base.length * 2);
  for (let k = 0; k < n; k++) {
    const d = pick(base);
    const kind = pick(Object.keys(MUTATIONS));
    const src = readFileSync(d.path, "utf8");
    const out = MUTATIONS[kind](src);
    if (out === src) continue;
    const dir = join(TMP, `mut-${k}`);
    mkdirSync(dir);
    const p = join(dir, basename(d.path));
    writeFileSync(p, out);
    mutated.push({ path: p, origin: "mutation", label: `${d.label} [${kind}]`, mutation: kind });
  }
}
const allDocs = [...docs, ...mutated];
console.log(`differential: corpus ${docs.length} documents, ${mutated.length} mutations, ${fixtureCases.length} fixture ops`);

// ----------------------------------------------------------------- results
const classes = {};
let currentOrigin = "";
// `documented`: the class of `.noma/reference-differences.noma` this
// disagreement falls in (see `documentedClass`), or null. Raw agreement
// and agreement up to the documented classes are reported separately.
function record(cls, agree, subkind, example, documented = null) {
  const c = (classes[cls] ??= { cases: 0, agree: 0, documented: 0, kinds: {}, byOrigin: {}, byDocumented: {} });
  const o = (c.byOrigin[currentOrigin] ??= { cases: 0, agree: 0, documented: 0 });
  c.cases++; o.cases++;
  if (agree) { c.agree++; o.agree++; return; }
  if (documented) { c.documented++; o.documented++; c.byDocumented[documented] = (c.byDocumented[documented] ?? 0) + 1; }
  const label = documented ? `[${documented}] ${subkind}` : `[undocumented] ${subkind}`;
  const k = (c.kinds[label] ??= { count: 0, examples: [] });
  k.count++;
  k.examples.push(example);
  k.examples.sort((a, b) => (a.size ?? 0) - (b.size ?? 0));
  if (k.examples.length > N_EXAMPLES) k.examples.length = N_EXAMPLES;
}
const size = (p) => { try { return statSync(p).size; } catch { return 0; } };
const clip = (s, n = 160) => (typeof s === "string" && s.length > n ? s.slice(0, n) + "…" : s);

function parseJson(s) { try { return JSON.parse(s); } catch { return undefined; } }


// ------------------------------------------------------- documented classes
// Each disagreement is matched against the classes listed, with protocol
// citations, in `.noma/reference-differences.noma` (the names below are its
// headings). A predicate names the concrete cause it recognises (a CRLF
// document whose results differ only in `\r`, a fence depth that differs
// only in its colon count, …); anything it does not recognise stays
// "undocumented", so the documented figure cannot hide a new difference.
const DOC_CLASS = {
  bom: "A byte-order mark before a directive",
  refFails: "The reference fails",
  malformed: "Equal-colon nesting and malformed fences",
  aliases: "aliases= on a directive",
  dupIds: "Duplicate ids",
  conflict: "unresolved-conflict",
  lists: "List items with continuation lines",
  headingIds: "Derived heading ids",
  explicitIds: "Explicit heading ids",
  structure: "Ops that would write broken structure",
  crlf: "CRLF documents",
  parsed: "add_block and replace_block insert the parsed directive",
  position: "Out-of-range position",
  tableCell: "A table cell with an unmatched backtick and a pipe",
  badId: "rename_id to an invalid id",
  csv: "CSV/TSV cells 1, 0, yes",
  smaller: "Smaller classes",
};
// Facts about each corpus document, from our own answers (see compareDoc).
const facts = new Map();
const STRUCTURAL = new Set(["directive-depth-mismatch", "unclosed-directive", "stray-directive-close", "nesting-too-deep", "unclosed-code-fence"]);
function docFacts(path, src, ourCheck, ourIds) {
  const codes = new Set((Array.isArray(ourCheck) ? ourCheck : []).flatMap((f) => f.diagnostics ?? []).map((x) => x.code));
  const ids = ourIds?.ids ?? [];
  const f = {
    bom: src.startsWith("\ufeff"),
    crlf: src.includes("\r"),
    structural: [...codes].some((c) => STRUCTURAL.has(c)),
    dupIds: new Set(ids).size !== ids.length,
    directiveAliases: /^:{2,}[A-Za-z_][^\n]*\baliases=/m.test(src),
  };
  facts.set(path, f);
  return f;
}
const ID_RE = /^[A-Za-z_][A-Za-z0-9_./:-]*$/;
const opsOf = (op) => (Array.isArray(op) ? op : [op]);
const hasCell = (op, pred) => opsOf(op).some((o) => [o.value, ...(o.cells ?? [])].some((v) => typeof v === "string" && pred(v)));
const noColons = (t) => t.replace(/^\ufeff?:{2,}/gm, "::");
// The reference reads a CRLF blank line as text ("\r"), so besides the
// line ends its blank-line handling around an inserted or removed block
// differs: compared without CRs and blank lines.
const crlfNormal = (t) => t.replace(/\r/g, "").replace(/\n\n+/g, "\n").replace(/^\n+/, "");
// A list item with an indented continuation line (one child in noma, a
// list item and a paragraph in the reference, so child positions differ).
const LIST_CONTINUATION = /^[ \t]*([-*]|\d+\.)[ \t].*\n[ \t]+\S/m;
// Heading lines without an explicit ` {id="…"}` (the ids noma pins).
const unpinned = (t) => t.replace(/^(#{1,6}\s.*?)\s\{id="[^"]*"\}[ \t]*$/gm, "$1");
// The block an op places under a parent: {id, parent}, or null.
function placedBlock(ops) {
  if (ops.length !== 1) return null;
  const op = ops[0];
  if (op.op === "add_block") {
    const id = /\bid="([^"]*)"/.exec(op.content ?? "")?.[1];
    return id ? { id, parent: op.parent } : null;
  }
  if (op.op === "move_block") return { id: op.id, parent: op.parent };
  return null;
}
// The id of the block whose children hold `id` in the reference's parse
// of `text` (null at the top level, undefined when absent).
function refParent(text, id) {
  let found;
  const go = (node, parent) => {
    for (const ch of node.children ?? []) {
      if (found !== undefined) return;
      if (ch.id === id) { found = parent; return; }
      go(ch, ch.id ?? parent);
    }
  };
  try { go(R.parse(text), null); } catch { return undefined; }
  return found;
}

// A disagreement on a document (ids, check, render, blocks).
function documentedDocClass(cls, kind, f, extra = {}) {
  if (kind === "ref-failed") return DOC_CLASS.refFails;
  if (!f) return null;
  if (f.bom) return DOC_CLASS.bom;
  if (cls === "check" && kind === "only-noma error:unresolved-conflict") return DOC_CLASS.conflict;
  if (f.structural && !(cls === "check" && kind.includes("only-reference"))) return DOC_CLASS.malformed;
  if (cls === "ids" && kind === "aliases-differ" && f.directiveAliases) return DOC_CLASS.aliases;
  if (cls === "blocks" && kind.startsWith("hash differs on equal span") && f.dupIds) return DOC_CLASS.dupIds;
  if (cls === "render" && kind === "first difference: reference blank / noma text" && /^\s+\S/.test(extra.ours ?? "")) return DOC_CLASS.lists;
  if (cls === "render" && kind === "first difference: reference heading / noma heading"
      && /\s\{id="[^"]*"\}$/.test(extra.ref ?? "") && (extra.ref ?? "").replace(/\s\{id="[^"]*"\}$/, "") === extra.ours) return DOC_CLASS.headingIds;
  if (cls === "render" && kind === "first difference: reference heading / noma heading"
      && /\s\{id="[^"]*"\}$/.test(extra.ours ?? "") && (extra.ours ?? "").replace(/\s\{id="[^"]*"\}$/, "") === extra.ref) return DOC_CLASS.explicitIds;
  return null;
}

// A patch disagreement: `r` and `o` are the reference's and our answers.
function documentedPatchClass(c, r, o, src) {
  const f = facts.get(c.doc.path);
  const ops = opsOf(c.op);
  const names = ops.map((x) => x.op);
  if (f?.bom) return DOC_CLASS.bom;
  if (r.ok && o.ok) {
    if (f?.crlf && crlfNormal(r.text) === crlfNormal(o.text)) return DOC_CLASS.crlf;
    if (names.some((n) => n === "add_block" || n === "replace_block") && noColons(r.text) === noColons(o.text)) return DOC_CLASS.parsed;
    // The reference's result puts the block under another parent (after a
    // section child, it becomes that section's child); ours under the op's.
    const placed = placedBlock(ops);
    if (placed && refParent(r.text, placed.id) !== placed.parent && refParent(o.text, placed.id) === placed.parent) return DOC_CLASS.structure;
    if (ops.some((x) => (x.op === "add_block" || x.op === "move_block") && x.position !== undefined) && LIST_CONTINUATION.test(src)) return DOC_CLASS.lists;
    if (names.some((n) => /^add_(comment|footnote|endnote|change_request)$|^move_block$/.test(n)) && noColons(r.text) === noColons(o.text)) return DOC_CLASS.structure;
    if (names.some((n) => n === "update_heading" || n === "rename_id" || n === "delete_block") && unpinned(o.text) === unpinned(r.text)) return DOC_CLASS.structure;
    if (hasCell(c.op, (v) => v.includes("`") && v.includes("|"))) return DOC_CLASS.tableCell;
    if (names.some((n) => n.includes("dataset")) && hasCell(c.op, (v) => ["1", "0", "yes", "no"].includes(v))) return DOC_CLASS.csv;
    if (f?.structural) return DOC_CLASS.malformed;
    return null;
  }
  if (r.ok && !o.ok) {
    const op = ops[0];
    if (o.code === "parent_missing" && op.position !== undefined && /out of range/.test(o.message ?? "")) return DOC_CLASS.position;
    if (o.code === "parent_missing" && /inside its section/.test(o.message ?? "")) return DOC_CLASS.smaller;
    if (o.code === "invalid_content" && op.op === "rename_id" && !ID_RE.test(op.to ?? "")) return DOC_CLASS.badId;
    if (o.code === "invalid_content" && hasCell(c.op, (v) => v.includes("`") && v.includes("|"))) return DOC_CLASS.tableCell;
    if (o.code === "invalid_content" && op.op === "update_heading" && !String(op.title ?? "").trim()) return DOC_CLASS.smaller;
    if (o.code === "id_conflict" && (op.op === "add_block" || op.op === "replace_block")) {
      const id = /\bid="([^"]*)"/.exec(op.content ?? "")?.[1];
      if (id && R.collectIdRegistry(R.parse(src)).ids.includes(id)) return DOC_CLASS.smaller;
    }
    if (o.code === "target_missing" && op.op === "replace_block" && /is not a directive/.test(o.message ?? "")) return DOC_CLASS.smaller;
    if (o.code === "sha_mismatch" && f?.structural) return DOC_CLASS.malformed;
    return null;
  }
  if (!r.ok && o.ok) {
    if (ops.some((x) => x.op === "update_attribute" && x.value === null) && r.code === "invalid_content") return DOC_CLASS.smaller;
    return null;
  }
  if (o.code === "op_list_aborted" && Array.isArray(c.op)) return DOC_CLASS.smaller;
  return null;
}

// ----------------------------------------------------------- ids/check/render/blocks
function refBlocks(path) {
  const src = readFileSync(path, "utf8");
  const doc = R.parse(src);
  const out = [];
  for (const n of R.walk(doc)) {
    if (!n.id) continue;
    let hash = null;
    try { hash = R.blockSourceHash(src, n.id); } catch { /* no span */ }
    out.push({ id: n.id, type: n.type === "directive" ? n.name : n.type, start: n.pos?.line ?? null, end: n.endLine ?? null, hash });
  }
  return out;
}

function firstDiffLine(a, b) {
  const al = a.split("\n"); const bl = b.split("\n");
  for (let i = 0; i < Math.max(al.length, bl.length); i++) if (al[i] !== bl[i]) return { line: i + 1, ref: al[i], ours: bl[i] };
  return null;
}
function lineKind(l) {
  if (l === undefined) return "eof";
  if (/^\s*$/.test(l)) return "blank";
  if (/^#{1,6}(\s|$)/.test(l)) return "heading";
  if (/^:{2,}\s*$/.test(l)) return "directive-close";
  if (/^:{2,}/.test(l)) return "directive-open";
  if (/^```/.test(l)) return "fence";
  if (/^\s*\|/.test(l) || / \| /.test(l)) return "table-row";
  if (/^(\s*[-*]|\s*\d+\.)\s/.test(l)) return "list";
  if (/^---/.test(l)) return "frontmatter-or-rule";
  if (/^\s*[\w-]+:/.test(l)) return "key-value";
  return "text";
}

async function compareDoc(d) {
  const [ids, chk, rnd, blk] = await Promise.all([
    run(NOMA, ["ids", d.path]),
    run(NOMA, ["check", "--format", "json", d.path]),
    run(NOMA, ["render", d.path]),
    run(NOMA, ["blocks", "--format", "json", d.path]),
  ]);
  currentOrigin = d.origin; // no await below: the records that follow are this document's
  const ex = (extra) => ({ file: d.label, size: size(d.path), ...extra });
  const f = docFacts(d.path, readFileSync(d.path, "utf8"), parseJson(chk.stdout), parseJson(ids.stdout));
  // Like `record`, naming the documented class the difference falls in.
  const rec = (cls, agree, kind, example) => record(cls, agree, kind, example, agree ? null : documentedDocClass(cls, kind, f, example));
  let rdoc = null; let cdoc = null; let refErr = null;
  try { rdoc = refLoad(d.path, false); cdoc = refLoad(d.path, true); } catch (e) { refErr = String(e.message ?? e); }
  if (rdoc && cdoc && JSON.stringify(R.collectIdRegistry(cdoc).aliases) !== JSON.stringify(R.collectIdRegistry(rdoc).aliases)) {
    notes.fileNameAlias++;
    notes.fileNameAliasExample ??= d.label;
  }

  // ids
  {
    const ours = parseJson(ids.stdout);
    if (!rdoc || !ours) rec("ids", !rdoc && !ours, rdoc ? "ours-failed" : "ref-failed", ex({ detail: clip(refErr ?? ids.stderr) }));
    else {
      const reg = R.collectIdRegistry(rdoc);
      const a = JSON.stringify(reg.ids); const b = JSON.stringify(ours.ids);
      const aa = JSON.stringify(Object.entries(reg.aliases).sort()); const ba = JSON.stringify(Object.entries(ours.aliases ?? {}).sort());
      if (a === b && aa === ba) rec("ids", true);
      else if (a !== b) {
        const onlyRef = reg.ids.filter((x) => !ours.ids.includes(x));
        const onlyOurs = ours.ids.filter((x) => !reg.ids.includes(x));
        const kind = onlyRef.length ? "id-only-in-reference" : onlyOurs.length ? "id-only-in-noma" : "id-order-or-count";
        rec("ids", false, kind, ex({ onlyRef: onlyRef.slice(0, 5), onlyOurs: onlyOurs.slice(0, 5) }));
      } else rec("ids", false, "aliases-differ", ex({ ref: clip(aa), ours: clip(ba) }));
    }
  }
  // check
  {
    const ours = parseJson(chk.stdout);
    if (!rdoc || !Array.isArray(ours)) rec("check", false, rdoc ? "ours-failed" : "ref-failed", ex({ detail: clip(refErr ?? chk.stderr) }));
    else {
      const rs = new Set(R.validate(cdoc).filter((x) => x.severity !== "info").map((x) => `${x.severity}:${x.code}`));
      const os = new Set(ours.flatMap((f) => f.diagnostics ?? []).filter((x) => x.severity !== "info").map((x) => `${x.severity}:${x.code}`));
      const onlyRef = [...rs].filter((x) => !os.has(x)).sort();
      const onlyOurs = [...os].filter((x) => !rs.has(x)).sort();
      if (!onlyRef.length && !onlyOurs.length) rec("check", true);
      else {
        const kind = [...onlyRef.map((x) => `only-reference ${x}`), ...onlyOurs.map((x) => `only-noma ${x}`)].join(", ");
        rec("check", false, kind, ex({}));
      }
    }
  }
  // render
  {
    if (!rdoc || rnd.code !== 0) rec("render", !rdoc && rnd.code !== 0, rdoc ? "ours-failed" : "ref-failed", ex({ detail: clip(refErr ?? rnd.stderr) }));
    else {
      const a = R.renderNoma(rdoc); const b = rnd.stdout;
      if (a === b) rec("render", true);
      else {
        const f = firstDiffLine(a, b);
        rec("render", false, `first difference: reference ${lineKind(f.ref)} / noma ${lineKind(f.ours)}`, ex({ line: f.line, ref: clip(f.ref), ours: clip(f.ours) }));
      }
    }
  }
  // blocks (one case per block, keyed by id and occurrence)
  {
    const ours = parseJson(blk.stdout);
    let refs = null;
    try { refs = refBlocks(d.path); } catch (e) { refErr = String(e.message ?? e); }
    if (!refs || !Array.isArray(ours)) { rec("blocks", false, refs ? "ours-failed" : "ref-failed", ex({ detail: clip(refErr ?? blk.stderr) })); }
    else {
      const key = (list, idOf) => { const seen = {}; const m = new Map(); for (const b of list) { const id = idOf(b); if (!id) continue; const n = (seen[id] = (seen[id] ?? 0) + 1); m.set(`${id}#${n}`, b); } return m; };
      const rm = key(refs, (b) => b.id);
      const om = key(ours, (b) => b.id);
      for (const [k, r] of rm) {
        const o = om.get(k);
        if (!o) { rec("blocks", false, `missing in noma: ${r.type}`, ex({ id: r.id })); continue; }
        const os = o.lines?.[0]; const oe = o.lines?.[1];
        if (os === r.start && oe === r.end && o.sha256 === r.hash) { rec("blocks", true); continue; }
        let kind;
        if (os !== r.start) kind = `start line differs: ${r.type}`;
        else if (oe !== r.end) kind = `end line ${oe > r.end ? "later" : "earlier"} in noma: ${r.type}`;
        else kind = `hash differs on equal span: ${r.type}`;
        rec("blocks", false, kind, ex({ id: r.id, ref: [r.start, r.end], ours: [os, oe] }));
      }
      for (const [k, o] of om) if (!rm.has(k)) rec("blocks", false, `extra in noma: ${o.type}`, ex({ id: o.id }));
    }
  }
}

// --------------------------------------------------------------- generator
const BODY_WORDS = ["alpha", "beta", "gamma", "delta", "risk", "growth", "legal", "plan", "note", "review"];
const words = (n) => Array.from({ length: n }, () => pick(BODY_WORDS)).join(" ");
const text = () => {
  const r = rnd();
  if (r < 0.7) return words(2 + ri(5)) + ".";
  if (r < 0.85) return words(3) + ".\n" + words(4) + ".";
  if (r < 0.93) return "Quote \"this\" and `code` here.";
  return "Ünïcødé — text 🚀 " + words(2);
};
let fresh = 0;
const freshId = (p) => `${p}-gen-${++fresh}`;

function datasetShape(node) {
  const body = node.body ?? "";
  const fmt = String(node.attrs.format ?? "").toLowerCase();
  try {
    if (fmt === "csv" || fmt === "tsv") {
      const lines = body.split("\n").filter((l) => l.trim());
      return { cols: lines[0]?.split(fmt === "tsv" ? "\t" : ",").map((s) => s.trim()) ?? [], rows: Math.max(0, lines.length - 1) };
    }
    const v = fmt === "json" ? JSON.parse(body) : yaml.load(body);
    if (Array.isArray(v)) return { cols: v[0] && typeof v[0] === "object" && !Array.isArray(v[0]) ? Object.keys(v[0]) : [], rows: v.length };
    if (v && typeof v === "object") {
      const rows = Array.isArray(v.rows) ? v.rows.length : 0;
      const cols = v.schema && typeof v.schema === "object" ? Object.keys(v.schema) : Array.isArray(v.columns) ? v.columns.map(String) : [];
      return { cols, rows };
    }
  } catch { /* unparseable body */ }
  return { cols: [], rows: 0 };
}

function inventory(path) {
  const src = readFileSync(path, "utf8");
  const doc = R.parse(src);
  const lines = src.split("\n");
  const all = []; const sections = []; const directives = []; const containers = []; const tables = []; const datasets = []; const comments = [];
  for (const n of R.walk(doc)) {
    if (!n.id || n.type === "document") continue;
    const colons = n.type === "directive" ? (lines[(n.pos?.line ?? 1) - 1]?.match(/^\s*(:+)/)?.[1] ?? "::") : "::";
    const info = { id: n.id, node: n, colons, children: n.children?.length ?? 0 };
    all.push(info);
    if (n.type === "section") { sections.push(info); containers.push(info); }
    if (n.type === "directive") {
      directives.push(info);
      if (n.children && n.children.length) containers.push(info);
      if (n.name === "table") {
        const rows = (n.body ?? "").split("\n").filter((l) => l.trim() && !/^\s*\|?\s*:?-{3,}/.test(l));
        const header = n.attrs.header !== undefined && n.attrs.header !== false;
        const cols = rows[0] ? rows[0].replace(/^\s*\|/, "").replace(/\|\s*$/, "").split("|").map((s) => s.trim()) : [];
        tables.push({ ...info, rows: Math.max(0, rows.length - (header ? 1 : 0)), cols, header });
      }
      if (n.name === "dataset") datasets.push({ ...info, ...datasetShape(n) });
      if (n.name === "comment") comments.push(info);
    }
  }
  return { src, all, sections, directives, containers, tables, datasets, comments };
}

const OP_KINDS = [
  "replace_block", "replace_body", "update_heading", "add_comment", "resolve_comment", "add_footnote", "add_endnote",
  "add_change_request", "update_table_cell", "update_table_header_cell", "insert_table_row", "delete_table_row",
  "insert_table_column", "delete_table_column", "update_dataset_cell", "insert_dataset_row", "delete_dataset_row",
  "insert_dataset_column", "delete_dataset_column", "move_block", "add_block", "delete_block", "update_attribute",
  "remove_attribute", "rename_id",
];

// Returns {op, gen} or null when the document has nothing this kind can aim at.
function genOp(kind, inv) {
  const anyId = () => (inv.all.length ? pick(inv.all).id : "missing");
  const idx = (n, allowEnd) => (chance(0.85) ? ri(n + (allowEnd ? 1 : 0)) : pick([n + 1 + ri(3), -1]));
  const col = (t) => (t.cols.length && chance(0.3) ? pick(t.cols) : chance(0.9) ? ri(Math.max(1, t.cols.length)) : t.cols.length + 2);
  const cells = (n) => Array.from({ length: n }, () => (chance(0.15) ? pick(["1", "0", "yes", "", "a|b", "`x | y"]) : words(1)));
  const invalid = chance(0.12);
  let gen = invalid ? "invalid" : "valid";
  let op;
  switch (kind) {
    case "replace_block": {
      if (!inv.directives.length) return null;
      const t = pick(inv.directives); const name = t.node.name;
      const id = invalid && chance(0.5) ? freshId("x") : t.id;
      const body = invalid && chance(0.5) ? `${t.colons}${name}{id="${id}"}\n${text()}\n${t.colons}\n\nstray paragraph` : `${t.colons}${name}{id="${id}"}\n${text()}\n${t.colons}`;
      op = { op: kind, id: t.id, content: body };
      break;
    }
    case "replace_body": {
      if (!inv.directives.length) return null;
      const t = invalid ? pick(inv.all) : pick(inv.directives);
      op = { op: kind, id: t.id, content: chance(0.1) ? "```\ncode\n```" : text() };
      break;
    }
    case "update_heading": {
      if (!inv.sections.length) return null;
      const t = invalid ? pick(inv.all) : pick(inv.sections);
      const other = pick(inv.sections).node.title;
      op = { op: kind, id: t.id, title: chance(0.2) ? other : chance(0.05) ? "  " : words(1 + ri(3)) };
      break;
    }
    case "add_comment": case "add_footnote": case "add_endnote": case "add_change_request": {
      const target = invalid && chance(0.5) ? "no-such-target" : anyId();
      const id = invalid && chance(0.5) ? anyId() : freshId(kind.replace("add_", "").slice(0, 2));
      op = { op: kind, id, target };
      if (kind === "add_change_request") {
        op.action = invalid && chance(0.3) ? "explode" : pick(["insert", "delete", "replace"]);
        if (op.action === "replace") { op.from = words(1); op.to = words(1); }
        if (op.action === "insert") op.text = words(2);
        if (op.action === "delete") op.text = words(1);
        if (chance(0.3)) op.author = "reviewer";
      } else {
        op.content = chance(0.05) ? "```\nfenced\n```" : text();
        if (kind === "add_comment" && chance(0.3)) op.author = "reviewer";
        if (kind !== "add_comment" && chance(0.3)) op.label = String(1 + ri(9));
        if (kind === "add_comment" && inv.comments.length && chance(0.2)) op.reply_to = pick(inv.comments).id;
      }
      break;
    }
    case "resolve_comment": {
      if (!inv.comments.length && !invalid) return null;
      const t = invalid || !inv.comments.length ? anyId() : pick(inv.comments).id;
      op = { op: kind, id: t };
      if (chance(0.5)) op.resolved_by = "reviewer";
      if (chance(0.3)) op.resolved_at = "2026-01-02";
      break;
    }
    case "update_table_cell": case "update_table_header_cell": case "insert_table_row": case "delete_table_row":
    case "insert_table_column": case "delete_table_column": {
      if (!inv.tables.length) return null;
      const t = pick(inv.tables);
      const id = invalid && chance(0.4) ? pick(inv.all).id : t.id;
      const nc = t.cols.length;
      if (kind === "update_table_cell") op = { op: kind, id, row: idx(t.rows, false), column: col(t), value: cells(1)[0] };
      if (kind === "update_table_header_cell") op = { op: kind, id, column: col(t), value: words(1) };
      if (kind === "insert_table_row") op = { op: kind, id, row: idx(t.rows, true), cells: cells(invalid ? nc + 1 : nc) };
      if (kind === "delete_table_row") op = { op: kind, id, row: idx(t.rows, false) };
      if (kind === "insert_table_column") { op = { op: kind, id, column: idx(nc, true), cells: cells(t.rows) }; if (chance(0.7)) op.header = words(1); }
      if (kind === "delete_table_column") op = { op: kind, id, column: col(t) };
      break;
    }
    case "update_dataset_cell": case "insert_dataset_row": case "delete_dataset_row":
    case "insert_dataset_column": case "delete_dataset_column": {
      if (!inv.datasets.length) return null;
      const t = pick(inv.datasets);
      const id = invalid && chance(0.4) ? pick(inv.all).id : t.id;
      const nc = t.cols.length;
      if (kind === "update_dataset_cell") op = { op: kind, id, row: idx(t.rows, false), column: col(t), value: chance(0.5) ? String(ri(100)) : cells(1)[0] };
      if (kind === "insert_dataset_row") op = { op: kind, id, row: idx(t.rows, true), cells: cells(invalid ? nc + 1 : nc) };
      if (kind === "delete_dataset_row") op = { op: kind, id, row: idx(t.rows, false) };
      if (kind === "insert_dataset_column") op = { op: kind, id, column: idx(nc, true), header: freshId("c"), cells: cells(chance(0.8) ? t.rows : Math.max(0, t.rows - 1)) };
      if (kind === "delete_dataset_column") op = { op: kind, id, column: col(t) };
      break;
    }
    case "move_block": {
      if (!inv.all.length || !inv.containers.length) return null;
      const t = pick(inv.all);
      const parent = invalid && chance(0.5) ? "no-such-parent" : pick(inv.containers);
      op = { op: kind, id: t.id, parent: typeof parent === "string" ? parent : parent.id };
      if (chance(0.7) && typeof parent !== "string") op.position = ri(parent.children + 1);
      break;
    }
    case "add_block": {
      const parent = inv.containers.length && !(invalid && chance(0.4)) ? pick(inv.containers) : null;
      const colons = parent && parent.node.type === "directive" ? parent.colons + ":" : "::";
      const id = invalid && chance(0.5) ? anyId() : freshId("b");
      const name = pick(["note", "claim", "risk", "callout", "decision"]);
      const attrs = name === "decision" ? ` status="proposed"` : name === "risk" ? ` owner="ops"` : "";
      op = { op: kind, parent: parent ? parent.id : "no-such-parent", content: `${colons}${name}{id="${id}"${attrs}}\n${text()}\n${colons}` };
      if (invalid && chance(0.3)) op.content = "just a paragraph";
      if (chance(0.6) && parent) op.position = ri(parent.children + 1);
      break;
    }
    case "delete_block": {
      if (!inv.all.length) return null;
      op = { op: kind, id: invalid ? "no-such-block" : pick(inv.all).id };
      break;
    }
    case "update_attribute": case "remove_attribute": {
      if (!inv.directives.length) return null;
      const t = invalid && chance(0.3) ? pick(inv.all) : pick(inv.directives);
      const keys = Object.keys(t.node.attrs ?? {}).filter((k) => k !== "id");
      const key = invalid && chance(0.5) ? "id" : kind === "remove_attribute" && keys.length ? pick(keys) : keys.length && chance(0.5) ? pick(keys) : pick(["status", "confidence", "owner", "note"]);
      op = { op: kind, id: t.id, key };
      if (kind === "update_attribute") op.value = pick([words(1), ri(10) / 10, chance(0.5), "with \"quotes\" and spaces", 42]);
      break;
    }
    case "rename_id": {
      if (!inv.all.length) return null;
      const t = pick(inv.all);
      op = { op: kind, from: t.id, to: invalid ? (chance(0.5) ? anyId() : "Bad Id!") : freshId("r") };
      break;
    }
    default: return null;
  }
  // A share of ops carry a baseHash: the reference's block hash of the
  // target (a full or 8-char prefix), or a wrong one.
  if (chance(0.2)) {
    const target = R.patchTargetId(op);
    try {
      const h = R.blockSourceHash(inv.src, target);
      if (chance(0.1)) { op.baseHash = "deadbeef"; gen += "+wrong-baseHash"; }
      else { op.baseHash = chance(0.5) ? h : h.slice(0, 8); gen += "+baseHash"; }
    } catch { /* target missing: no hash */ }
  }
  if (invalid && chance(0.1)) { // a missing required field
    const req = Object.keys(op).filter((k) => k !== "op" && k !== "baseHash");
    if (req.length) delete op[pick(req)];
    gen = "invalid-shape";
  }
  return { op, gen };
}

function generate() {
  const cases = [];
  const inventories = docs.map((d) => { try { return { d, inv: inventory(d.path) }; } catch { return null; } }).filter(Boolean);
  let guard = 0;
  while (cases.length < CASES && guard++ < CASES * 50) {
    const kind = OP_KINDS[cases.length % OP_KINDS.length];
    const { d, inv } = pick(inventories);
    const g = genOp(kind, inv);
    if (g) cases.push({ doc: d, op: g.op, gen: g.gen });
  }
  return cases;
}

// ------------------------------------------------------------------- patch
function refPatch(src, op) {
  try { return { ok: true, text: R.patchSource(src, op) }; } catch (e) {
    if (e && e.code) return { ok: false, code: e.code };
    return { ok: false, code: "exception", message: String(e?.message ?? e) };
  }
}
async function comparePatch(c) {
  const src = readFileSync(c.doc.path, "utf8");
  const opJson = JSON.stringify(c.op);
  const r = refPatch(src, c.op);
  const res = await run(NOMA, ["patch", c.doc.path, "--op", opJson, "--format", "json"]);
  const j = parseJson(res.stdout);
  let o;
  if (!j) o = { ok: false, code: `no code, exit ${res.code}`, message: clip(res.stderr) };
  else if (j.accepted) o = { ok: true, text: j.document };
  else {
    // `unchanged_diagnostics` only says that errors the document already had
    // stand; the op's own code is the first other error.
    const diags = (j.records ?? []).flatMap((x) => x.diagnostics ?? []).filter((x) => x.severity === "error" && x.code !== "unchanged_diagnostics");
    o = { ok: false, code: diags[0]?.code ?? (j.error?.code ?? "rejected-without-code"), message: clip(diags[0]?.message ?? "") };
  }
  const kinds = Array.isArray(c.op) ? c.op.map((x) => x.op).join("+") : c.op.op;
  const ex = (extra) => ({ file: c.doc.label, size: src.length + opJson.length, op: c.op, gen: c.gen, ...extra });
  const [agree, kind, extra] = (() => {
    if (r.ok && o.ok) {
      if (r.text === o.text) return [true];
      const f = firstDiffLine(r.text, o.text);
      return [false, `${kinds}: both apply, bytes differ`, { line: f?.line, ref: clip(f?.ref), ours: clip(f?.ours) }];
    }
    if (!r.ok && !o.ok) {
      if (r.code === o.code) return [true];
      return [false, `error codes differ (reference ${r.code}, noma ${o.code})`, { refMessage: clip(r.message), oursMessage: o.message }];
    }
    if (r.ok) return [false, `${kinds}: noma rejects (${o.code}), reference applies`, { oursMessage: o.message }];
    return [false, `${kinds}: reference rejects (${r.code}), noma applies`, { refMessage: clip(r.message) }];
  })();
  currentOrigin = c.gen === "fixture" ? "fixture" : "generated";
  const s = (opStats[kinds] ??= { cases: 0, agree: 0 });
  s.cases++; if (agree) s.agree++;
  record("patch", agree, kind, agree ? undefined : ex(extra), agree ? null : documentedPatchClass(c, r, o, src));
}
const opStats = {};

// --------------------------------------------------------------------- run
const t0 = Date.now();
await pool(allDocs, compareDoc);
const generated = generate();
const patchCases = [...fixtureCases, ...generated];
console.log(`differential: ${generated.length} generated ops (${OP_KINDS.length} kinds, ${generated.filter((c) => c.gen !== "valid").length} invalid or with baseHash)`);
await pool(patchCases, comparePatch);
rmSync(TMP, { recursive: true, force: true });

// ------------------------------------------------------------------ report
// Two figures per class: raw agreement (same answer), and agreement up to
// the documented classes (same answer, or a difference one of the classes
// of `.noma/reference-differences.noma` accounts for). Kinds are printed
// with their class, `[undocumented]` first.
const order = ["ids", "check", "render", "blocks", "patch"];
let tc = 0; let ta = 0; let td = 0;
const pct = (a, n) => (n ? ((100 * a) / n).toFixed(2) : "n/a");
const summary = { date: new Date().toISOString(), seed: SEED, generated: generated.length, fixtures: fixtureCases.length, documents: docs.length, mutations: mutated.length, seconds: (Date.now() - t0) / 1000, classes: {} };
const byDocumented = {};
console.log("");
for (const name of order) {
  const c = classes[name] ?? { cases: 0, agree: 0, documented: 0, kinds: {}, byDocumented: {} };
  tc += c.cases; ta += c.agree; td += c.documented;
  for (const [k, v] of Object.entries(c.byDocumented ?? {})) byDocumented[k] = (byDocumented[k] ?? 0) + v;
  const ok = c.agree + c.documented;
  console.log(`== ${name}: ${c.cases} cases, ${c.agree} agree (${pct(c.agree, c.cases)}%), ${ok} agree or documented (${pct(ok, c.cases)}%)   [` +
    Object.entries(c.byOrigin ?? {}).map(([k, v]) => `${k} ${v.agree}+${v.documented}/${v.cases}`).join(", ") + "]");
  const undocumentedFirst = (a, b) => (a[0].startsWith("[undocumented]") === b[0].startsWith("[undocumented]") ? b[1].count - a[1].count : a[0].startsWith("[undocumented]") ? -1 : 1);
  const kinds = Object.entries(c.kinds).sort(undocumentedFirst);
  for (const [k, v] of kinds.slice(0, Number(args.top ?? 12))) {
    console.log(`   ${String(v.count).padStart(5)}  ${k}`);
    for (const e of v.examples) {
      const { size: _s, ...rest } = e;
      console.log(`          e.g. ${JSON.stringify(rest)}`);
    }
  }
  if (kinds.length > Number(args.top ?? 12)) console.log(`          … ${kinds.length - Number(args.top ?? 12)} more kinds`);
  summary.classes[name] = {
    cases: c.cases, agree: c.agree, percent: Number(pct(c.agree, c.cases)),
    documented: c.documented, agreeOrDocumented: ok, percentWithDocumented: Number(pct(ok, c.cases)),
    byOrigin: c.byOrigin, byDocumentedClass: c.byDocumented,
    kinds: kinds.map(([k, v]) => ({ kind: k, count: v.count, examples: v.examples.map(({ size: _s, ...rest }) => rest) })),
  };
}
summary.total = { cases: tc, agree: ta, percent: Number(pct(ta, tc)), documented: td, agreeOrDocumented: ta + td, percentWithDocumented: Number(pct(ta + td, tc)) };
summary.byDocumentedClass = byDocumented;
{
  // The bar counts the corpus, the fixtures and the generated ops;
  // structural mutations are reported but kept out of this figure.
  let n = 0; let a = 0; let d = 0;
  for (const c of Object.values(classes)) for (const [k, v] of Object.entries(c.byOrigin)) if (k !== "mutation") { n += v.cases; a += v.agree; d += v.documented; }
  summary.totalWithoutMutations = { cases: n, agree: a, percent: Number(pct(a, n)), agreeOrDocumented: a + d, percentWithDocumented: Number(pct(a + d, n)) };
  console.log(`== total without mutations: ${n} cases, ${a} agree (${pct(a, n)}%), ${a + d} agree or documented (${pct(a + d, n)}%)`);
}
console.log(`\n== total: ${tc} cases, ${ta} agree (${pct(ta, tc)}%), ${ta + td} agree or differ only by a documented class (${pct(ta + td, tc)}%), ${tc - ta - td} undocumented  (seed ${SEED}, ${summary.seconds.toFixed(1)} s)`);
console.log("documented classes: " + Object.entries(byDocumented).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join("; "));
summary.notes = notes;
summary.patchByOp = opStats;
console.log("patch agreement by op: " + Object.entries(opStats).sort((a, b) => a[1].agree / a[1].cases - b[1].agree / b[1].cases).map(([k, v]) => `${k} ${v.agree}/${v.cases}`).join(", "));
console.log(`note: the reference CLI (parse with a file name) adds a file-name alias on ${notes.fileNameAlias} of ${allDocs.length} documents (e.g. ${notes.fileNameAliasExample}); not counted above`);
if (OUT) { writeFileSync(OUT, JSON.stringify(summary, null, 2) + "\n"); console.log(`differential: summary written to ${OUT}`); }
