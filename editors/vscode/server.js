"use strict";
// The command that starts the language server, from the extension's
// settings. Kept apart from extension.js (which needs VS Code) so that
// `node --test` can check it.

const fs = require("fs");
const os = require("os");

/**
 * `get(key)` reads a `noma.*` setting. Returns `{ command, args }`.
 *
 * `noma.lsp.path` names the program (on PATH, or a full path that may hold
 * spaces) and `noma.lsp.args` its arguments. A value that names no file
 * and has spaces, such as `noma lsp` (how the reference's extension reads
 * the same setting: a command line split on whitespace), is split the same
 * way, so one settings.json serves both extensions.
 */
function serverCommand(get) {
  const rawPath = get("lsp.path");
  let command = typeof rawPath === "string" ? rawPath.trim() : "";
  if (command === "") command = "noma";
  if (command === "~" || command.startsWith("~/")) {
    command = os.homedir() + command.slice(1);
  }
  const rawArgs = get("lsp.args");
  let args =
    Array.isArray(rawArgs) && rawArgs.every((a) => typeof a === "string")
      ? rawArgs.slice()
      : ["lsp"];
  if (/\s/.test(command) && !fs.existsSync(command)) {
    const words = command.split(/\s+/);
    command = words[0];
    args = words.slice(1);
  }
  return { command, args };
}

module.exports = { serverCommand };
