//! The message loop: document sync, diagnostics, and request dispatch.

use std::collections::HashMap;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as NotificationTrait, PublishDiagnostics,
};
use lsp_types::request::{
    CodeActionRequest, Completion, DocumentSymbolRequest, ExecuteCommand, GotoDefinition,
    HoverRequest, References, Rename, Request as RequestTrait, WorkspaceSymbolRequest,
};
use lsp_types::{
    CodeActionProviderCapability, CompletionOptions, DocumentSymbolResponse, ExecuteCommandOptions,
    GotoDefinitionResponse, OneOf, PublishDiagnosticsParams, SaveOptions, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, Url,
};

use crate::analysis::{Analysis, Policies};
use crate::features;
use crate::guard::{self, Blocks, Changed, Expected, Guard, RECORD_COMMAND};
use crate::lines::apply_change_with;
use crate::transport::{self, Incoming, Queue, Writer};

/// Why the server stopped other than by the client's `exit`.
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err(e: impl std::fmt::Display) -> Error {
    Error(e.to_string())
}

/// What the server announces in `initialize`.
pub(crate) fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(
                    SaveOptions::default(),
                )),
                ..Default::default()
            },
        )),
        document_symbol_provider: Some(OneOf::Left(true)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["[".into(), "\"".into(), "=".into()]),
            ..Default::default()
        }),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        rename_provider: Some(OneOf::Left(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![RECORD_COMMAND.to_string()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What the server tells its host besides the protocol (the binary words
/// it on stderr).
#[derive(Debug)]
pub enum Event<'a> {
    /// Bytes or a message skipped or refused, and why; the session goes on.
    Skipped(&'a str),
    /// A document's text was analysed (parsed and validated).
    Analysed {
        /// The document.
        uri: &'a Url,
        /// Its length in bytes.
        bytes: usize,
    },
}

/// How a session runs.
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    /// The repository's transcripts and `noma record`, when there is one.
    /// Shared with the thread that looks up hover history, so that a
    /// slow history never holds up diagnostics.
    pub guard: Option<&'a (dyn Guard + Sync)>,
    /// Receives the session's [`Event`]s.
    pub log: &'a dyn Fn(Event<'_>),
    /// Also answer `noma/text` (`{"textDocument": {"uri": …}}`) with the
    /// server's text of an open document, for tests that compare it with
    /// the client's.
    pub debug: bool,
}

/// The method of the debug request that answers a document's text.
pub const TEXT_REQUEST: &str = "noma/text";

/// Serves the language server on stdin/stdout until the client exits.
pub fn serve_stdio(settings: Settings<'_>) -> Result<(), Error> {
    serve(std::io::stdin(), std::io::stdout(), settings)
}

/// One open document.
struct Open {
    analysis: Analysis,
    /// The text after changes not analysed yet (`analysis` is then stale).
    pending: Option<String>,
    /// The transcript's last state, for a document that has one.
    expected: Option<Expected>,
    /// The block digests of `analysis`, kept while there is `expected`
    /// to compare them with.
    blocks: Option<Blocks>,
    /// Where `pending` differs from `analysis`'s text.
    changed: Option<Changed>,
    /// The text before last's buffer, reused for the next `pending`: the
    /// next analysis re-parses from the analysed text, so a change is
    /// applied to a copy, and a buffer already faulted in copies faster.
    spare: String,
}

impl Open {
    /// A document opened (or re-read) with the transcript state
    /// `expected`.
    fn new(analysis: Analysis, expected: Option<Expected>) -> Open {
        let blocks = expected.as_ref().map(|_| Blocks::of(&analysis));
        Open {
            analysis,
            pending: None,
            expected,
            blocks,
            changed: None,
            spare: String::new(),
        }
    }

    /// The transcript's state read again.
    fn set_expected(&mut self, expected: Option<Expected>) {
        if expected.is_some() && self.blocks.is_none() {
            self.blocks = Some(Blocks::of(&self.analysis));
        }
        self.expected = expected;
    }
}

/// Where the session is in the protocol's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Before `initialize`: requests are refused as `ServerNotInitialized`.
    Waiting,
    /// Between `initialize` and `shutdown`.
    Running,
    /// After `shutdown`: requests are refused, `exit` ends the session.
    ShutDown,
}

/// The session's state.
struct Session<'g> {
    docs: HashMap<Url, Open>,
    guard: Option<&'g (dyn Guard + Sync)>,
    /// Hovers waiting for their block's history, for the history thread.
    history: Option<mpsc::Sender<HoverJob>>,
    /// Hovers handed to the history thread and not answered yet: the
    /// answer to `shutdown`, and `exit`, wait for them.
    hovers: usize,
    /// `shutdown`'s id while hovers are pending.
    shutdown: Option<RequestId>,
    /// `exit` arrived while hovers were pending.
    exiting: bool,
    /// The input ended (and why, when by an error) while hovers were
    /// pending: the session ends once they are answered.
    ended: Option<Option<String>>,
    /// The client takes `LocationLink`s for definitions.
    links: bool,
    /// The workspace roots the client named in `initialize`: where
    /// rename and record may write.
    roots: Vec<std::path::PathBuf>,
    settings: Settings<'g>,
    stage: Stage,
    /// The work trees' policies, read again only when changed.
    policies: Policies,
}

/// Framed messages to the client.
type Out<W> = Writer<W>;

/// A hover answered but for its block's history.
struct HoverJob {
    request: RequestId,
    hover: lsp_types::Hover,
    block: String,
    path: PathBuf,
}

/// Looks up the history of each hover in `jobs`, in order, and queues the
/// finished answers for the message loop, which sends them between its
/// other work: history reads git (seconds on a long one) and
/// diagnostics must not wait for it. Ends when the loop drops its sender.
fn history_worker(guard: &dyn Guard, jobs: mpsc::Receiver<HoverJob>, queue: &Queue) {
    for job in jobs {
        let mut hover = job.hover;
        features::add_history(
            &mut hover,
            &guard.history(&job.path, &job.block, HOVER_HISTORY),
        );
        let resp = match serde_json::to_value(hover) {
            Ok(v) => Response::new_ok(job.request, v),
            Err(e) => {
                Response::new_err(job.request, ErrorCode::InternalError as i32, e.to_string())
            }
        };
        queue.push_all([Incoming::Answer(resp)]);
    }
}

/// Serves one session: messages read from `input` (by a thread of its
/// own, which is left blocked on `input` if the session ends first),
/// answers written to `output`, until `exit` or the end of the input.
/// No message ends it early: a malformed one is answered with an error
/// or skipped with an [`Event::Skipped`].
pub fn serve(
    input: impl Read + Send + 'static,
    output: impl Write,
    settings: Settings<'_>,
) -> Result<(), Error> {
    let queue = transport::spawn_reader(input);
    // Leaving the scope waits for a history lookup under way (its answer
    // is then dropped): the guard is only borrowed for the session.
    std::thread::scope(|scope| {
        let history = settings.guard.map(|guard| {
            let (send, jobs) = mpsc::channel();
            let q = Arc::clone(&queue);
            scope.spawn(move || history_worker(guard, jobs, &q));
            send
        });
        run(&queue, output, settings, history)
    })
}

/// The message loop of [`serve`].
fn run(
    queue: &Queue,
    output: impl Write,
    settings: Settings<'_>,
    history: Option<mpsc::Sender<HoverJob>>,
) -> Result<(), Error> {
    let mut out = Writer::new(output);
    let mut s = Session::new(settings, history);
    loop {
        // Changes are analysed once the queue holds no more of them: a
        // burst of keystrokes costs one analysis, not one per keystroke.
        if queue.is_empty() {
            s.catch_up(&mut out)?;
        }
        let msg = match queue.pop() {
            Incoming::Message(msg) => msg,
            Incoming::End(why) => {
                // A client may write hover, shutdown and exit and close
                // its end without waiting for answers (a pipe): the
                // requests it sent are still answered before the end.
                if s.hovers > 0 {
                    s.ended = Some(why);
                    continue;
                }
                return s.end(why);
            }
            Incoming::Skipped(why) => {
                (s.settings.log)(Event::Skipped(&format!("skipped {why}")));
                continue;
            }
            Incoming::Answer(resp) => {
                if let Some(ended) = s.answered(resp, &mut out)? {
                    return ended;
                }
                continue;
            }
            Incoming::Malformed {
                id,
                notification,
                code,
                message,
            } => {
                (s.settings.log)(Event::Skipped(&format!("a malformed message: {message}")));
                if !notification {
                    out.error(id.as_ref(), code, &message).map_err(err)?;
                }
                continue;
            }
        };
        if !matches!(&msg, Message::Notification(n) if n.method == DidChangeTextDocument::METHOD) {
            s.catch_up(&mut out)?;
        }
        match msg {
            Message::Request(req) => s.request(req, &mut out)?,
            Message::Notification(n) => {
                if n.method == "exit" {
                    if s.hovers > 0 && s.stage == Stage::ShutDown {
                        s.exiting = true;
                        continue;
                    }
                    return match s.stage {
                        Stage::ShutDown => Ok(()),
                        _ => Err(Error("the client sent exit without shutdown".to_string())),
                    };
                }
                if s.stage != Stage::Running {
                    let why = format!("{} outside a running session", n.method);
                    (s.settings.log)(Event::Skipped(&why));
                    continue;
                }
                if let Some(uri) = s.sync(n) {
                    s.publish(&mut out, uri)?;
                }
            }
            Message::Response(_) => {}
        }
    }
}

impl<'a> Session<'a> {
    /// A session waiting for `initialize`.
    fn new(settings: Settings<'a>, history: Option<mpsc::Sender<HoverJob>>) -> Session<'a> {
        Session {
            docs: HashMap::new(),
            guard: settings.guard,
            history,
            hovers: 0,
            shutdown: None,
            exiting: false,
            ended: None,
            links: false,
            roots: Vec::new(),
            settings,
            stage: Stage::Waiting,
            policies: Policies::default(),
        }
    }

    /// Sends a history lookup's answer; after the last one pending, what
    /// waited for it: the `shutdown` answer, then the end of the session
    /// when `exit` or the end of input came meanwhile (Some: how it ends).
    fn answered(
        &mut self,
        resp: lsp_server::Response,
        out: &mut Writer<impl Write>,
    ) -> Result<Option<Result<(), Error>>, Error> {
        out.send(resp.into()).map_err(err)?;
        self.hovers = self.hovers.saturating_sub(1);
        if self.hovers > 0 {
            return Ok(None);
        }
        if let Some(id) = self.shutdown.take() {
            out.send(Response::new_ok(id, ()).into()).map_err(err)?;
        }
        if self.exiting {
            return Ok(Some(Ok(())));
        }
        Ok(self.ended.take().map(|why| self.end(why)))
    }

    /// How the session ends when the client's input does (`why`: the read
    /// error, if any).
    fn end(&self, why: Option<String>) -> Result<(), Error> {
        match (self.stage, why) {
            (_, Some(why)) => Err(Error(format!("reading the client's messages: {why}"))),
            (Stage::ShutDown, None) => Ok(()),
            _ => Err(Error(
                "the client closed the connection without shutdown".to_string(),
            )),
        }
    }

    /// Answers one request as the lifecycle allows.
    fn request<W: Write>(&mut self, req: Request, out: &mut Out<W>) -> Result<(), Error> {
        let refuse = |code: ErrorCode, why: &str| {
            Response::new_err(req.id.clone(), code as i32, why.to_string())
        };
        let resp = match (self.stage, req.method.as_str()) {
            (Stage::Waiting, "initialize") => {
                self.links = req
                    .params
                    .pointer("/capabilities/textDocument/definition/linkSupport")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                self.roots = crate::contain::roots(&req.params);
                self.stage = Stage::Running;
                let caps = serde_json::to_value(capabilities()).map_err(err)?;
                Response::new_ok(req.id, serde_json::json!({ "capabilities": caps }))
            }
            (Stage::Waiting, _) => refuse(
                ErrorCode::ServerNotInitialized,
                "the server is not initialized: send initialize first",
            ),
            (_, "initialize") => {
                refuse(ErrorCode::InvalidRequest, "initialize was already received")
            }
            (Stage::ShutDown, _) => refuse(
                ErrorCode::InvalidRequest,
                "the server is shut down: only exit is expected",
            ),
            (Stage::Running, "shutdown") => {
                self.stage = Stage::ShutDown;
                if self.hovers > 0 {
                    self.shutdown = Some(req.id);
                    return Ok(());
                }
                Response::new_ok(req.id, ())
            }
            (Stage::Running, TEXT_REQUEST) if self.settings.debug => {
                let uri = req
                    .params
                    .pointer("/textDocument/uri")
                    .and_then(|u| u.as_str());
                let uri = uri.and_then(|u| Url::parse(u).ok());
                let text = uri
                    .and_then(|u| self.docs.get(&u))
                    .map(|o| match &o.pending {
                        Some(text) => text.as_str(),
                        None => o.analysis.text.as_str(),
                    });
                Response::new_ok(req.id.clone(), text)
            }
            (Stage::Running, HoverRequest::METHOD) => match self.hover(req) {
                Some(resp) => resp,
                // The history thread answers it.
                None => return Ok(()),
            },
            (Stage::Running, _) => {
                let (resp, republish) = self.answer(req);
                out.send(resp.into()).map_err(err)?;
                if let Some(uri) = republish {
                    self.publish(out, uri)?;
                }
                return Ok(());
            }
        };
        out.send(resp.into()).map_err(err)
    }

    /// Answers a hover from the open document, or hands it to the history
    /// thread (`None`) when the block may have recorded history.
    fn hover(&mut self, req: Request) -> Option<Response> {
        let id = req.id.clone();
        let p = match parse::<HoverRequest>(req) {
            Ok((_, p)) => p,
            Err((code, message)) => return Some(Response::new_err(id, code as i32, message)),
        };
        let at = p.text_document_position_params;
        let found = (self.docs.get(&at.text_document.uri))
            .and_then(|o| features::hover_block(&o.analysis, at.position));
        let path = at.text_document.uri.to_file_path().ok();
        let hover = match (found, path, &self.history) {
            (Some((block, hover)), Some(path), Some(worker)) => {
                let job = HoverJob {
                    request: id.clone(),
                    hover,
                    block,
                    path,
                };
                // The thread ends only with the session.
                match worker.send(job) {
                    Ok(()) => {
                        self.hovers += 1;
                        return None;
                    }
                    Err(mpsc::SendError(job)) => Some(job.hover),
                }
            }
            (found, _, _) => found.map(|(_, h)| h),
        };
        Some(match serde_json::to_value(hover) {
            Ok(v) => Response::new_ok(id, v),
            Err(e) => Response::new_err(id, ErrorCode::InternalError as i32, e.to_string()),
        })
    }

    /// Applies a document notification; returns the document whose
    /// diagnostics changed.
    fn sync(&mut self, n: Notification) -> Option<Url> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let p: lsp_types::DidOpenTextDocumentParams =
                    serde_json::from_value(n.params).ok()?;
                let uri = p.text_document.uri;
                let expected = self.expected(&uri);
                let analysis = analyse(
                    &uri,
                    p.text_document.text,
                    None,
                    &mut self.policies,
                    self.settings.log,
                );
                self.docs.insert(uri.clone(), Open::new(analysis, expected));
                Some(uri)
            }
            DidChangeTextDocument::METHOD => {
                let p: lsp_types::DidChangeTextDocumentParams =
                    serde_json::from_value(n.params).ok()?;
                // Incremental sync: a keystroke sends its edit, not the
                // whole text (a change without a range still replaces it).
                let uri = p.text_document.uri;
                let open = self.docs.get_mut(&uri)?;
                // The analysed text stays: the next analysis re-parses
                // only what changed, from it and its tree.
                let (mut text, mut changed, mut index) = match open.pending.take() {
                    Some(text) => (text, open.changed.take(), None),
                    None => {
                        let mut text = std::mem::take(&mut open.spare);
                        text.clear();
                        text.push_str(&open.analysis.text);
                        (text, None, Some(&open.analysis.index))
                    }
                };
                for change in p.content_changes {
                    let old_len = text.len();
                    let step = if change.range.is_some() {
                        let inserted = change.text.len();
                        let (start, end) = apply_change_with(&mut text, change, index.take())
                            .unwrap_or((0, old_len));
                        Changed::edit(start, end, inserted, old_len)
                    } else {
                        // The whole text: what changed is what differs.
                        let step = Changed::between(&text, &change.text);
                        text = change.text;
                        step
                    };
                    changed = Some(changed.map_or(step, |c: Changed| c.then(step)));
                }
                open.pending = Some(text);
                open.changed = changed;
                None
            }
            DidSaveTextDocument::METHOD => {
                // `noma record` in a terminal changes the transcript.
                let p: lsp_types::DidSaveTextDocumentParams =
                    serde_json::from_value(n.params).ok()?;
                let uri = p.text_document.uri;
                let expected = self.expected(&uri);
                self.docs.get_mut(&uri)?.set_expected(expected);
                Some(uri)
            }
            DidCloseTextDocument::METHOD => {
                let p: lsp_types::DidCloseTextDocumentParams =
                    serde_json::from_value(n.params).ok()?;
                self.docs.remove(&p.text_document.uri);
                Some(p.text_document.uri)
            }
            _ => None,
        }
    }

    /// Analyses the documents with changes not analysed yet and publishes
    /// their diagnostics.
    fn catch_up<W: Write>(&mut self, out: &mut Out<W>) -> Result<(), Error> {
        let mut changed = Vec::new();
        let mut old = Vec::new();
        for (uri, open) in self.docs.iter_mut() {
            if let Some(text) = open.pending.take() {
                let analysis = analyse(
                    uri,
                    text,
                    Some(&mut open.analysis),
                    &mut self.policies,
                    self.settings.log,
                );
                // Only the blocks around the change are hashed again.
                open.blocks = match (&open.expected, &open.blocks, open.changed.take()) {
                    (None, _, _) => None,
                    (Some(_), Some(old), Some(changed)) => {
                        Some(Blocks::after(&analysis, old, changed))
                    }
                    (Some(_), _, _) => Some(Blocks::of(&analysis)),
                };
                let mut before = std::mem::replace(&mut open.analysis, analysis);
                open.spare = std::mem::take(&mut before.text);
                old.push(before);
                changed.push(uri.clone());
            }
        }
        for uri in changed {
            self.publish(out, uri)?;
        }
        // Freed after the diagnostics are out: a large tree takes a while.
        drop(old);
        Ok(())
    }

    /// The transcript's last state of the file `uri` names, and its
    /// records' provenance problems, when the server has a guard and the
    /// file a transcript.
    fn expected(&self, uri: &Url) -> Option<Expected> {
        let path = uri.to_file_path().ok()?;
        let guard = self.guard?;
        let text = guard.last_state(&path)?;
        let mut expected = Expected::of(&text);
        expected.problems = guard.provenance(&path);
        Some(expected)
    }

    /// Sends `uri`'s diagnostics (none once it is closed).
    fn publish<W: Write>(&self, out: &mut Out<W>, uri: Url) -> Result<(), Error> {
        let diagnostics = self.docs.get(&uri).map_or_else(Vec::new, |o| {
            let mut d = o.analysis.diagnostics.clone();
            if let (Some(e), Some(b)) = (&o.expected, &o.blocks) {
                d.extend(guard::unrecorded(&o.analysis, b, e));
                d.extend(guard::provenance(&o.analysis, e));
            }
            d
        });
        let params = PublishDiagnosticsParams::new(uri, diagnostics, None);
        let n = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
        out.send(n.into()).map_err(err)
    }

    /// The response to one request, and the document whose diagnostics
    /// it changed.
    fn answer(&mut self, req: Request) -> (Response, Option<Url>) {
        let id = req.id.clone();
        if req.method == Rename::METHOD {
            let result = parse::<Rename>(req).and_then(|(_, p)| self.rename(p));
            return match result {
                Ok((value, uri)) => (Response::new_ok(id, value), uri),
                Err((code, message)) => (Response::new_err(id, code as i32, message), None),
            };
        }
        if req.method == ExecuteCommand::METHOD {
            return match self.execute(req) {
                Ok((value, uri)) => (Response::new_ok(id, value), uri),
                Err((code, message)) => (Response::new_err(id, code as i32, message), None),
            };
        }
        let resp = match dispatch(self, req) {
            Ok(value) => Response::new_ok(id, value),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        };
        (resp, None)
    }

    /// Renames the id under the cursor through a `rename_id` record (the
    /// saved file is patched and the transcript appended, as `noma patch`
    /// does), and answers the edit that turns the buffer into the result.
    fn rename(
        &mut self,
        p: lsp_types::RenameParams,
    ) -> Result<(serde_json::Value, Option<Url>), Failure> {
        let at = p.text_document_position;
        let uri = at.text_document.uri;
        let invalid = |m: &str| (ErrorCode::InvalidParams, m.to_string());
        let open = self
            .docs
            .get(&uri)
            .ok_or_else(|| invalid("the document is not open"))?;
        let from = open
            .analysis
            .id_at(at.position)
            .ok_or_else(|| invalid("no block id under the cursor"))?;
        let path =
            crate::contain::writable(&uri, &self.roots).map_err(|e| invalid(&e.to_string()))?;
        let guard = self
            .guard
            .ok_or_else(|| invalid("no repository to record in"))?;
        let before = open.analysis.text.clone();
        if std::fs::read_to_string(&path).ok().as_deref() != Some(before.as_str()) {
            return Err((
                ErrorCode::RequestFailed,
                "save the document first: the rename is recorded on the file as saved".into(),
            ));
        }
        let after = guard
            .rename(&path, &from, &p.new_name)
            .map_err(|e| (ErrorCode::RequestFailed, e.to_string()))?;
        let mut changes = HashMap::new();
        changes.insert(uri.clone(), features::edits_between(&before, &after));
        let value = serde_json::to_value(lsp_types::WorkspaceEdit::new(changes))
            .map_err(|e| (ErrorCode::InternalError, e.to_string()))?;
        let expected = self.expected(&uri);
        if let Some(o) = self.docs.get_mut(&uri) {
            o.set_expected(expected);
        }
        Ok((value, Some(uri)))
    }

    /// `noma.record URI`: records the saved file's edit as `noma record`
    /// does, then re-reads the transcript's state.
    fn execute(&mut self, req: Request) -> Result<(serde_json::Value, Option<Url>), Failure> {
        let (_, p) = parse::<ExecuteCommand>(req)?;
        let invalid = |m: &str| (ErrorCode::InvalidParams, m.to_string());
        if p.command != RECORD_COMMAND {
            return Err(invalid(&format!("unknown command {}", p.command)));
        }
        let uri: Url = p
            .arguments
            .first()
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or_else(|| invalid("noma.record takes the document's URI"))?;
        let path =
            crate::contain::writable(&uri, &self.roots).map_err(|e| invalid(&e.to_string()))?;
        let guard = self
            .guard
            .ok_or_else(|| invalid("no repository to record in"))?;
        let open = self.docs.get(&uri).map(|o| o.analysis.text.as_str());
        if open.is_some_and(|t| std::fs::read_to_string(&path).ok().as_deref() != Some(t)) {
            // `noma record` records the file; the buffer's edit must be in it.
            return Err((
                ErrorCode::RequestFailed,
                "save the document first: noma record records the file as saved".into(),
            ));
        }
        let report = guard
            .record(&path)
            .map_err(|e| (ErrorCode::RequestFailed, e.to_string()))?;
        let expected = self.expected(&uri);
        if let Some(o) = self.docs.get_mut(&uri) {
            o.set_expected(expected);
        }
        Ok((serde_json::Value::String(report), Some(uri)))
    }
}

/// How many of a block's last changes its hover lists.
const HOVER_HISTORY: usize = 3;

/// The analysis of `text`, from `prev` (the analysis of the text it
/// edits, whose tree it takes) when there is one.
fn analyse(
    uri: &Url,
    text: String,
    prev: Option<&mut Analysis>,
    policies: &mut Policies,
    log: &dyn Fn(Event<'_>),
) -> Analysis {
    let path = uri.to_file_path().ok();
    let bytes = text.len();
    let analysis = match policies.options_for(path.as_deref()) {
        Ok(options) => match prev {
            Some(prev) => Analysis::after(prev, text, &options),
            None => Analysis::new(text, &options),
        },
        Err(why) => {
            // The hooks refuse to run on a malformed policy; the editor
            // says so on the document instead of guessing a policy.
            let mut a = Analysis::new(text, &noma_core::validate::Options::default());
            a.diagnostics.insert(
                0,
                lsp_types::Diagnostic {
                    severity: Some(lsp_types::DiagnosticSeverity::ERROR),
                    code: Some(lsp_types::NumberOrString::String("invalid-policy".into())),
                    source: Some("noma".to_string()),
                    message: why.to_string(),
                    ..Default::default()
                },
            );
            a
        }
    };
    log(Event::Analysed { uri, bytes });
    analysis
}

/// An error response's code and message.
type Failure = (ErrorCode, String);

fn dispatch(s: &Session, req: Request) -> Result<serde_json::Value, Failure> {
    let docs = &s.docs;
    let doc = |uri: &Url| docs.get(uri).map(|o| &o.analysis);
    let json = |v: Result<serde_json::Value, serde_json::Error>| {
        v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
    };
    match req.method.as_str() {
        DocumentSymbolRequest::METHOD => {
            let (_, p) = parse::<DocumentSymbolRequest>(req)?;
            let symbols = doc(&p.text_document.uri).map(features::document_symbols);
            json(serde_json::to_value(
                symbols.map(DocumentSymbolResponse::Nested),
            ))
        }
        GotoDefinition::METHOD => {
            let (_, p) = parse::<GotoDefinition>(req)?;
            let at = p.text_document_position_params;
            let uri = &at.text_document.uri;
            let found = doc(uri).and_then(|a| definition(a, uri, at.position, s.links));
            json(serde_json::to_value(found))
        }
        References::METHOD => {
            let (_, p) = parse::<References>(req)?;
            let at = p.text_document_position;
            let uri = &at.text_document.uri;
            let decl = p.context.include_declaration;
            let locs = doc(uri).map(|a| features::references(a, uri, at.position, decl));
            json(serde_json::to_value(locs))
        }
        Completion::METHOD => {
            let (_, p) = parse::<Completion>(req)?;
            let at = p.text_document_position;
            let items =
                doc(&at.text_document.uri).and_then(|a| features::completion(a, at.position));
            json(serde_json::to_value(items))
        }
        WorkspaceSymbolRequest::METHOD => {
            let (_, p) = parse::<WorkspaceSymbolRequest>(req)?;
            let open = docs.iter().map(|(u, o)| (u, &o.analysis));
            json(serde_json::to_value(features::workspace_symbols(
                open, &p.query,
            )))
        }
        CodeActionRequest::METHOD => {
            let (_, p) = parse::<CodeActionRequest>(req)?;
            let mut actions = features::record_actions(&p);
            if let Some(a) = doc(&p.text_document.uri) {
                actions.extend(features::did_you_mean(a, &p));
            }
            json(serde_json::to_value(actions))
        }
        other => Err((
            ErrorCode::MethodNotFound,
            format!("noma lsp does not answer {other}"),
        )),
    }
}

/// Where the id at `pos` is defined: a link to the block (selecting its
/// id) for a client that takes links, else the id's location.
fn definition(
    a: &Analysis,
    uri: &Url,
    pos: lsp_types::Position,
    links: bool,
) -> Option<GotoDefinitionResponse> {
    if links {
        let link = features::definition_link(a, uri, pos)?;
        return Some(GotoDefinitionResponse::Link(vec![link]));
    }
    features::definition(a, uri, pos).map(GotoDefinitionResponse::Scalar)
}

/// The typed parameters of `req`, or an InvalidParams error.
fn parse<R: RequestTrait>(req: Request) -> Result<(RequestId, R::Params), Failure> {
    req.extract::<R::Params>(R::METHOD)
        .map_err(|e| (ErrorCode::InvalidParams, format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(v: serde_json::Value) -> Vec<u8> {
        let body = v.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn note(method: &str, params: serde_json::Value) -> Vec<u8> {
        frame(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    fn request(id: i32, method: &str, params: serde_json::Value) -> Vec<u8> {
        frame(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    fn change(version: i32, start: u32, end: u32, text: &str) -> Vec<u8> {
        let range = json!({"start": {"line": 2, "character": start},
                           "end": {"line": 2, "character": end}});
        note(
            DidChangeTextDocument::METHOD,
            json!({"textDocument": {"uri": "file:///d.noma", "version": version},
                   "contentChanges": [{"range": range, "text": text}]}),
        )
    }

    /// The messages of an LSP byte stream.
    fn messages(mut out: &[u8]) -> Vec<serde_json::Value> {
        let mut found = Vec::new();
        while let Some(head) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let len: usize = std::str::from_utf8(&out[16..head])
                .unwrap()
                .parse()
                .unwrap();
            found.push(serde_json::from_slice(&out[head + 4..head + 4 + len]).unwrap());
            out = &out[head + 4 + len..];
        }
        found
    }

    /// The session's output for `input` (read at once, as from a pipe
    /// that holds it all), and its log.
    fn session(input: Vec<u8>) -> (Result<(), Error>, Vec<serde_json::Value>, Vec<String>) {
        let log = std::cell::RefCell::new(Vec::new());
        let record = |e: Event<'_>| log.borrow_mut().push(format!("{e:?}"));
        let settings = Settings {
            guard: None,
            log: &record,
            debug: false,
        };
        let mut out = Vec::new();
        let result = serve(std::io::Cursor::new(input), &mut out, settings);
        (result, messages(&out), log.into_inner())
    }

    /// Keystrokes queued behind each other are analysed once, after the
    /// last: one publication for the burst, with the final text's
    /// diagnostics (typing `[[t]]` into `[[xyz]]` one edit at a time).
    #[test]
    fn a_burst_of_changes_is_analysed_once() {
        let mut input = request(1, "initialize", json!({"capabilities": {}}));
        input.extend(note("initialized", json!({})));
        let text = "# T\n\nSee [[t]].\n";
        input.extend(note(
            DidOpenTextDocument::METHOD,
            json!({"textDocument": {"uri": "file:///d.noma", "languageId": "noma",
                   "version": 1, "text": text}}),
        ));
        input.extend(change(2, 6, 7, "x"));
        input.extend(change(3, 7, 7, "y"));
        input.extend(change(4, 8, 8, "z"));
        let symbols = json!({"textDocument": {"uri": "file:///d.noma"}});
        input.extend(request(2, DocumentSymbolRequest::METHOD, symbols));
        input.extend(request(3, "shutdown", json!(null)));
        input.extend(note("exit", json!(null)));
        let (result, out, log) = session(input);
        result.unwrap();
        let published: Vec<&serde_json::Value> = out
            .iter()
            .filter(|m| m["method"] == PublishDiagnostics::METHOD)
            .map(|m| &m["params"])
            .collect();
        assert_eq!(published.len(), 2, "{published:?}");
        assert_eq!(log.iter().filter(|l| l.starts_with("Analysed")).count(), 2);
        assert_eq!(published[0]["diagnostics"], json!([]));
        let last = &published[1]["diagnostics"];
        assert_eq!(last[0]["code"], "broken-reference", "{last}");
        assert!(last[0]["message"].as_str().unwrap().contains("[[xyz]]"));
    }

    /// Requests out of the lifecycle's order are refused with the codes
    /// the spec gives, and the session goes on.
    #[test]
    fn out_of_order_requests_are_refused_and_the_session_goes_on() {
        let mut input = request(1, "textDocument/hover", json!({}));
        input.extend(note("initialized", json!({})));
        input.extend(request(2, "initialize", json!({"capabilities": {}})));
        input.extend(request(3, "initialize", json!({"capabilities": {}})));
        input.extend(request(4, "shutdown", json!(null)));
        input.extend(request(5, "workspace/symbol", json!({"query": ""})));
        input.extend(note("exit", json!(null)));
        let (result, out, log) = session(input);
        result.unwrap();
        let code = |i: usize| out[i]["error"]["code"].as_i64();
        assert_eq!(out.len(), 5, "{out:?}");
        assert_eq!(code(0), Some(ErrorCode::ServerNotInitialized as i64));
        assert!(out[1]["result"]["capabilities"].is_object());
        assert_eq!(code(2), Some(ErrorCode::InvalidRequest as i64));
        assert_eq!(out[3]["result"], json!(null));
        assert_eq!(out[3]["id"], 4);
        assert_eq!(code(4), Some(ErrorCode::InvalidRequest as i64));
        assert!(log[0].contains("initialized outside"), "{log:?}");
        // Exit without shutdown, and the input's end without either.
        let mut input = request(1, "initialize", json!({"capabilities": {}}));
        input.extend(note("exit", json!(null)));
        assert!(session(input).0.is_err());
        assert!(session(Vec::new()).0.is_err());
    }

    /// Input fed by the test as the session goes (a pipe's read end).
    struct Feed(mpsc::Receiver<Vec<u8>>, Vec<u8>);

    impl Read for Feed {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv() {
                    Ok(bytes) => self.1 = bytes,
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.1.len());
            buf[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }

    /// A [`Feed`] that says when it is dropped: the reader thread drops
    /// its input only after it has queued the input's end.
    struct Closing(Feed, mpsc::Sender<()>);

    impl Read for Closing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Drop for Closing {
        fn drop(&mut self) {
            let _ = self.1.send(());
        }
    }

    /// Output the test reads as the session goes, a whole message at a
    /// time (the writer flushes after each).
    struct Tap(mpsc::Sender<Vec<u8>>, Vec<u8>);

    impl Write for Tap {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            let _ = self.0.send(std::mem::take(&mut self.1));
            Ok(())
        }
    }

    /// A guard whose history says when it starts and then waits for the
    /// test to let it go.
    struct Held {
        started: std::sync::Mutex<mpsc::Sender<()>>,
        release: std::sync::Mutex<mpsc::Receiver<()>>,
    }

    impl Guard for Held {
        fn last_state(&self, _: &std::path::Path) -> Option<String> {
            None
        }
        fn record(&self, _: &std::path::Path) -> Result<String, crate::GuardError> {
            Err("no".into())
        }
        fn rename(
            &self,
            _: &std::path::Path,
            _: &str,
            _: &str,
        ) -> Result<String, crate::GuardError> {
            Err("no".into())
        }
        fn provenance(&self, _: &std::path::Path) -> Vec<guard::RecordProblem> {
            Vec::new()
        }
        fn history(&self, _: &std::path::Path, _: &str, _: usize) -> Vec<String> {
            self.started.lock().unwrap().send(()).unwrap();
            // Bounded so that a server that waits on history fails the
            // test instead of hanging it.
            let wait = std::time::Duration::from_secs(20);
            match self.release.lock().unwrap().recv_timeout(wait) {
                Ok(()) => vec!["released by the test".to_string()],
                Err(_) => vec!["never released".to_string()],
            }
        }
    }

    /// A keystroke typed while a hover's history is being looked up gets
    /// its diagnostics before the history is done: the history is held
    /// until the test has read them.
    #[test]
    fn diagnostics_are_published_while_a_hover_waits_for_history() {
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let held = Held {
            started: std::sync::Mutex::new(started_tx),
            release: std::sync::Mutex::new(release_rx),
        };
        let (feed, input) = mpsc::channel();
        let (tap, output) = mpsc::channel::<Vec<u8>>();
        let uri = "file:///tmp/held.noma";
        let mut seen = Vec::new();
        // The first message written that `want` accepts, waiting for it.
        fn next(
            seen: &mut Vec<u8>,
            output: &mpsc::Receiver<Vec<u8>>,
            want: &dyn Fn(&serde_json::Value) -> bool,
        ) -> serde_json::Value {
            loop {
                if let Some(m) = messages(seen).into_iter().find(|m| want(m)) {
                    return m;
                }
                let wait = std::time::Duration::from_secs(10);
                seen.extend(output.recv_timeout(wait).expect("the server went quiet"));
            }
        }
        std::thread::scope(|scope| {
            // Owned here: a failed assertion drops it, which ends the
            // server's input and so the session, and the test fails
            // instead of hanging.
            let feed = feed;
            let held = &held;
            let server = scope.spawn(move || {
                let log = |_: Event<'_>| {};
                let settings = Settings {
                    guard: Some(held),
                    log: &log,
                    debug: false,
                };
                serve(Feed(input, Vec::new()), Tap(tap, Vec::new()), settings)
            });
            feed.send(request(1, "initialize", json!({"capabilities": {}})))
                .unwrap();
            let text = "# T {id=\"t\"}\n\nSee [[t]].\n";
            feed.send(note(
                DidOpenTextDocument::METHOD,
                json!({"textDocument": {"uri": uri, "languageId": "noma",
                       "version": 1, "text": text}}),
            ))
            .unwrap();
            next(&mut seen, &output, &|m| {
                m["method"] == PublishDiagnostics::METHOD
            });
            let at = json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}});
            feed.send(request(2, HoverRequest::METHOD, at)).unwrap();
            started.recv().unwrap();
            let range = json!({"start": {"line": 2, "character": 6},
                               "end": {"line": 2, "character": 7}});
            feed.send(note(
                DidChangeTextDocument::METHOD,
                json!({"textDocument": {"uri": uri, "version": 2},
                       "contentChanges": [{"range": range, "text": "xyz"}]}),
            ))
            .unwrap();
            let broken = next(&mut seen, &output, &|m| {
                m["method"] == PublishDiagnostics::METHOD
                    && m["params"]["diagnostics"][0]["code"] == "broken-reference"
            });
            assert_eq!(broken["params"]["uri"], uri);
            // The hover is still waiting: it has not been answered.
            assert!(messages(&seen).iter().all(|m| m["id"] != 2));
            release.send(()).unwrap();
            let hover = next(&mut seen, &output, &|m| m["id"] == 2);
            let value = hover["result"]["contents"]["value"].as_str().unwrap();
            assert!(value.contains("**t**"), "{value}");
            assert!(value.contains("released by the test"), "{value}");
            feed.send(request(3, "shutdown", json!(null))).unwrap();
            feed.send(note("exit", json!(null))).unwrap();
            server.join().unwrap().unwrap();
        });
    }

    /// A client that writes hover, shutdown and exit and closes its end
    /// at once (a pipe) still gets the hover's answer, then shutdown's,
    /// and the session ends well; one that closes without shutdown gets
    /// the hover's answer and the session ends with an error. The input's
    /// end is queued before the history is let go.
    #[test]
    fn hovers_are_answered_when_the_input_ends_first() {
        for shut_down in [true, false] {
            let (started_tx, started) = mpsc::channel();
            let (release, release_rx) = mpsc::channel();
            let held = Held {
                started: std::sync::Mutex::new(started_tx),
                release: std::sync::Mutex::new(release_rx),
            };
            let (feed, input) = mpsc::channel();
            let (dropped_tx, dropped) = mpsc::channel();
            let (tap, output) = mpsc::channel::<Vec<u8>>();
            let uri = "file:///tmp/held.noma";
            let result = std::thread::scope(|scope| {
                let held = &held;
                let server = scope.spawn(move || {
                    let log = |_: Event<'_>| {};
                    let settings = Settings {
                        guard: Some(held),
                        log: &log,
                        debug: false,
                    };
                    let input = Closing(Feed(input, Vec::new()), dropped_tx);
                    serve(input, Tap(tap, Vec::new()), settings)
                });
                feed.send(request(1, "initialize", json!({"capabilities": {}})))
                    .unwrap();
                feed.send(note(
                    DidOpenTextDocument::METHOD,
                    json!({"textDocument": {"uri": uri, "languageId": "noma",
                           "version": 1, "text": "# T {id=\"t\"}\n"}}),
                ))
                .unwrap();
                let at = json!({"textDocument": {"uri": uri},
                                "position": {"line": 0, "character": 2}});
                feed.send(request(2, HoverRequest::METHOD, at)).unwrap();
                started.recv().unwrap();
                if shut_down {
                    feed.send(request(3, "shutdown", json!(null))).unwrap();
                    feed.send(note("exit", json!(null))).unwrap();
                }
                drop(feed);
                dropped.recv().unwrap();
                release.send(()).unwrap();
                server.join().unwrap()
            });
            let seen: Vec<u8> = output.try_iter().flatten().collect();
            let out = messages(&seen);
            let at = |id: i64| out.iter().position(|m| m["id"] == id);
            let hover = at(2).unwrap_or_else(|| panic!("no hover answer: {out:?}"));
            let value = out[hover]["result"]["contents"]["value"].as_str();
            assert!(value.unwrap().contains("released by the test"), "{out:?}");
            if shut_down {
                result.unwrap();
                let shutdown = at(3).unwrap_or_else(|| panic!("no shutdown answer: {out:?}"));
                assert!(hover < shutdown, "{out:?}");
            } else {
                assert!(result.is_err());
            }
        }
    }
}
