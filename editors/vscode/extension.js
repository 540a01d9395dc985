"use strict";
// Starts `noma lsp` over stdio for Noma documents and restarts it when its
// settings change.

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");
const { serverCommand } = require("./server");

let client;

async function start() {
  const config = vscode.workspace.getConfiguration("noma");
  const { command, args } = serverCommand((key) => config.get(key));
  // No `transport`: with TransportKind.stdio the client would append
  // `--stdio` to the arguments, which `noma lsp` does not take.
  const serverOptions = { command, args };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "noma" },
      { scheme: "untitled", language: "noma" },
    ],
  };
  client = new LanguageClient("noma", "Noma", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    const shown = [command, ...args].join(" ");
    vscode.window.showErrorMessage(
      `Noma: could not start the language server (${shown}): ${err && err.message ? err.message : err}. ` +
        "Install noma or set noma.lsp.path to the noma program.",
    );
  }
}

async function stop() {
  if (client) {
    const old = client;
    client = undefined;
    await old.stop().catch(() => {});
  }
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("noma.restartServer", async () => {
      await stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("noma.lsp")) {
        await stop();
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
