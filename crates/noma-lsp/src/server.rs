//! The message loop: document sync, diagnostics, and request dispatch.

use std::collections::HashMap;

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument,
    Notification as NotificationTrait, PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, References,
    Request as RequestTrait,
};
use lsp_types::{
    CompletionOptions, DocumentSymbolResponse, GotoDefinitionResponse, OneOf,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    Url,
};

use crate::analysis::{options_for, Analysis};
use crate::features;

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
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        document_symbol_provider: Some(OneOf::Left(true)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["[".into(), "\"".into(), "=".into()]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Serves the language server on stdin/stdout until the client exits.
pub fn serve_stdio() -> Result<(), Error> {
    let (connection, io_threads) = Connection::stdio();
    serve(&connection)?;
    drop(connection);
    io_threads.join().map_err(err)
}

/// Serves one session on `connection`: the handshake, then messages until
/// `shutdown` and `exit`.
pub fn serve(connection: &Connection) -> Result<(), Error> {
    let caps = serde_json::to_value(capabilities()).map_err(err)?;
    connection.initialize(caps).map_err(err)?;
    let mut docs: HashMap<Url, Analysis> = HashMap::new();
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) => {
                if connection.handle_shutdown(&req).map_err(err)? {
                    return Ok(());
                }
                let resp = answer(&docs, req);
                connection.sender.send(resp.into()).map_err(err)?;
            }
            Message::Notification(n) => {
                if let Some(uri) = sync(&mut docs, n) {
                    publish(connection, &docs, uri)?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

/// Applies a document notification; returns the document whose
/// diagnostics changed.
fn sync(docs: &mut HashMap<Url, Analysis>, n: Notification) -> Option<Url> {
    match n.method.as_str() {
        DidOpenTextDocument::METHOD => {
            let p: lsp_types::DidOpenTextDocumentParams = serde_json::from_value(n.params).ok()?;
            let uri = p.text_document.uri;
            docs.insert(uri.clone(), analyse(&uri, p.text_document.text));
            Some(uri)
        }
        DidChangeTextDocument::METHOD => {
            let p: lsp_types::DidChangeTextDocumentParams =
                serde_json::from_value(n.params).ok()?;
            // Full sync: the last change holds the whole text.
            let text = p.content_changes.into_iter().last()?.text;
            let uri = p.text_document.uri;
            docs.insert(uri.clone(), analyse(&uri, text));
            Some(uri)
        }
        DidCloseTextDocument::METHOD => {
            let p: lsp_types::DidCloseTextDocumentParams = serde_json::from_value(n.params).ok()?;
            docs.remove(&p.text_document.uri);
            Some(p.text_document.uri)
        }
        _ => None,
    }
}

fn analyse(uri: &Url, text: String) -> Analysis {
    let path = uri.to_file_path().ok();
    Analysis::new(text, &options_for(path.as_deref()))
}

/// Sends `uri`'s diagnostics (none once it is closed).
fn publish(connection: &Connection, docs: &HashMap<Url, Analysis>, uri: Url) -> Result<(), Error> {
    let diagnostics = docs
        .get(&uri)
        .map(|a| a.diagnostics.clone())
        .unwrap_or_default();
    let params = PublishDiagnosticsParams::new(uri, diagnostics, None);
    let n = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
    connection.sender.send(n.into()).map_err(err)
}

/// The response to one request.
fn answer(docs: &HashMap<Url, Analysis>, req: Request) -> Response {
    let id = req.id.clone();
    match dispatch(docs, req) {
        Ok(value) => Response::new_ok(id, value),
        Err((code, message)) => Response::new_err(id, code as i32, message),
    }
}

type Answer = Result<serde_json::Value, (lsp_server::ErrorCode, String)>;

fn dispatch(docs: &HashMap<Url, Analysis>, req: Request) -> Answer {
    use lsp_server::ErrorCode;
    let doc = |uri: &Url| docs.get(uri);
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
        HoverRequest::METHOD => {
            let (_, p) = parse::<HoverRequest>(req)?;
            let at = p.text_document_position_params;
            let hover = doc(&at.text_document.uri).and_then(|a| features::hover(a, at.position));
            json(serde_json::to_value(hover))
        }
        GotoDefinition::METHOD => {
            let (_, p) = parse::<GotoDefinition>(req)?;
            let at = p.text_document_position_params;
            let uri = &at.text_document.uri;
            let loc = doc(uri).and_then(|a| features::definition(a, uri, at.position));
            json(serde_json::to_value(
                loc.map(GotoDefinitionResponse::Scalar),
            ))
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
        other => Err((
            ErrorCode::MethodNotFound,
            format!("noma lsp does not answer {other}"),
        )),
    }
}

/// The typed parameters of `req`, or an InvalidParams error.
fn parse<R: RequestTrait>(
    req: Request,
) -> Result<(RequestId, R::Params), (lsp_server::ErrorCode, String)> {
    req.extract::<R::Params>(R::METHOD)
        .map_err(|e| (lsp_server::ErrorCode::InvalidParams, format!("{e:?}")))
}
