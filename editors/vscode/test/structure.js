"use strict";
// Prints, for each .noma file named, the lines where the grammar opens and
// closes a directive, starts a heading and opens a code fence, as JSON
// (one object per file). tests/it/vscode_extension.rs compares them with
// what noma's parser reads in the same files.

const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const grammarPath = path.join(__dirname, "..", "syntaxes", "noma.tmLanguage.json");

async function main(files) {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) =>
      scope === "text.noma"
        ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath)
        : null,
  });
  const grammar = await registry.loadGrammar("text.noma");
  for (const file of files) {
    // VS Code keeps a UTF-8 BOM out of the text it tokenizes; so does this.
    const lines = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
    const found = { file, opens: [], closes: [], headings: [], fences: [] };
    const marks = [
      ["punctuation.definition.directive.begin.noma", found.opens],
      ["punctuation.definition.directive.end.noma", found.closes],
      ["punctuation.definition.heading.noma", found.headings],
      ["punctuation.definition.fence.begin.noma", found.fences],
    ];
    let stack = vsctm.INITIAL;
    lines.forEach((line, i) => {
      const r = grammar.tokenizeLine(line, stack);
      stack = r.ruleStack;
      for (const [scope, into] of marks) {
        if (r.tokens.some((t) => t.scopes.includes(scope))) into.push(i + 1);
      }
    });
    process.stdout.write(JSON.stringify(found) + "\n");
  }
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`structure.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
