"use strict";
// node --test: the server command the settings give.

const test = require("node:test");
const assert = require("node:assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { serverCommand } = require("../server");

const settings = (values) => (key) => values[key];

test("defaults start noma lsp", () => {
  assert.deepStrictEqual(serverCommand(settings({})), { command: "noma", args: ["lsp"] });
  assert.deepStrictEqual(serverCommand(settings({ "lsp.path": "  " })), { command: "noma", args: ["lsp"] });
});

test("a path and arguments are taken as given", () => {
  const got = serverCommand(settings({ "lsp.path": "/opt/noma/bin/noma", "lsp.args": ["lsp", "-x"] }));
  assert.deepStrictEqual(got, { command: "/opt/noma/bin/noma", args: ["lsp", "-x"] });
});

test("arguments that are not a list of strings fall back to lsp", () => {
  assert.deepStrictEqual(serverCommand(settings({ "lsp.args": "lsp" })).args, ["lsp"]);
  assert.deepStrictEqual(serverCommand(settings({ "lsp.args": [1] })).args, ["lsp"]);
});

test("the reference extension's command-line form is split", () => {
  assert.deepStrictEqual(serverCommand(settings({ "lsp.path": "noma lsp" })), { command: "noma", args: ["lsp"] });
  assert.deepStrictEqual(serverCommand(settings({ "lsp.path": "/usr/bin/noma  lsp", "lsp.args": ["x"] })), {
    command: "/usr/bin/noma",
    args: ["lsp"],
  });
});

test("an existing program whose path has a space is not split", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "noma vscode "));
  const program = path.join(dir, "noma");
  fs.writeFileSync(program, "");
  try {
    assert.deepStrictEqual(serverCommand(settings({ "lsp.path": program })), { command: program, args: ["lsp"] });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a leading ~/ is the home directory", () => {
  assert.deepStrictEqual(serverCommand(settings({ "lsp.path": "~/.cargo/bin/noma" })).command, path.join(os.homedir(), ".cargo/bin/noma"));
});
