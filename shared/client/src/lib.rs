//! The typed client of Ferry's Control API: one call per operation of `ferry_model::ops`, with
//! the operation's own query, body and reply types, so a caller never spells a path, builds a
//! body by hand or reads a reply by string keys. The CLI and the end-to-end tests use it; the
//! dashboard calls the same operations in-process, through the handlers.
//!
//! Errors keep their kind (`ClientError`): the API could not be reached, it refused the request
//! (with its status, message and, for an invalid app package, the diagnostics), or its answer
//! did not decode. Their messages are the ones the CLI prints.

use ferry_model::ops::{self, Octets, Operation};
use reqwest::{Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "cannot reach the Ferry API at {base} ({what}): {source}. Is `ferry dev` or ferry-server running? (set --api or FERRY_API)"
    )]
    Unreachable {
        base: String,
        what: String,
        #[source]
        source: reqwest::Error,
    },
    /// The API answered with an error status. A 404's message is the whole story ("install `x`
    /// not found"); others say what was asked.
    #[error("{}", refused_text(*.status, .what, .message, .diagnostics))]
    Refused {
        status: StatusCode,
        what: String,
        message: String,
        diagnostics: Vec<Diagnostic>,
    },
    #[error("decoding the answer to {what}: {source}")]
    Decode {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A caller's mistake, before anything was sent (the wrong number of path arguments, a
    /// token a header cannot carry, a URL that is not http).
    #[error("{0}")]
    Usage(String),
}

impl ClientError {
    /// The status the API answered with, when it refused.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn refused_text(status: StatusCode, what: &str, message: &str, diags: &[Diagnostic]) -> String {
    if !diags.is_empty() {
        let lines: Vec<String> = diags
            .iter()
            .map(|d| {
                format!(
                    "{}:{}:{}: {}: {}",
                    d.file, d.line, d.column, d.severity, d.message
                )
            })
            .collect();
        return format!("{message}\n{}", lines.join("\n"));
    }
    if status == StatusCode::NOT_FOUND {
        return message.to_string();
    }
    format!("{what}: {message} (HTTP {status})")
}

/// One problem of an invalid app package, as the API reports it (`ferry_appconfig`'s
/// diagnostics on the wire).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub column: usize,
    #[serde(default = "error_severity")]
    pub severity: String,
    pub message: String,
}

fn error_severity() -> String {
    "error".into()
}

/// The body of an error answer.
#[derive(serde::Deserialize, Default)]
struct ErrorAnswer {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    diagnostics: Vec<Diagnostic>,
}

/// A client of one API, acting with one token.
#[derive(Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    /// A client of the API at `base` (`http(s)://host:port`, or `host:port` for plain HTTP as
    /// `ferry dev` prints it), sending `token` with every request.
    pub fn new(base: &str, token: Option<&str>) -> Result<Client, ClientError> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| {
                    ClientError::Usage("the token has characters a header cannot carry".into())
                })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        // reqwest is built without a crypto provider (DESIGN.md §10: ring only): the process's
        // default is ring unless its binary installed one first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("ferry/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .build()
            .map_err(|e| ClientError::Usage(format!("creating the HTTP client: {e}")))?;
        let base = base.trim_end_matches('/');
        let base = if base.contains("://") {
            base.to_string()
        } else {
            format!("http://{base}")
        };
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(ClientError::Usage(format!(
                "--api {base}: the API's URL starts with http:// or https://"
            )));
        }
        Ok(Client { base, http })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Makes operation `O` with its path arguments (in the order of its `{param}`s), query and
    /// body; its reply, decoded.
    pub async fn call<O>(
        &self,
        args: &[&str],
        query: &O::Query,
        body: &O::Body,
    ) -> Result<O::Reply, ClientError>
    where
        O: Operation,
        O::Query: Serialize,
        O::Body: Serialize,
        O::Reply: DeserializeOwned,
    {
        let (what, resp) = self
            .send::<O>(args, query, Payload::Json(body), None)
            .await?;
        let bytes = resp.bytes().await.map_err(|e| decode(&what, e))?;
        // An empty answer (204) is JSON's null: what `NoContent` decodes from.
        let text: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(text).map_err(|e| decode(&what, e))
    }

    /// [`Self::call`] for an operation with neither query nor body.
    pub async fn run<O>(&self, args: &[&str]) -> Result<O::Reply, ClientError>
    where
        O: Operation<Query = (), Body = ()>,
        O::Reply: DeserializeOwned,
    {
        self.call::<O>(args, &(), &()).await
    }

    /// [`Self::run`], with `None` for a 404.
    pub async fn find<O>(&self, args: &[&str]) -> Result<Option<O::Reply>, ClientError>
    where
        O: Operation<Query = (), Body = ()>,
        O::Reply: DeserializeOwned,
    {
        match self.run::<O>(args).await {
            Ok(r) => Ok(Some(r)),
            Err(e) if e.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes an operation whose body is raw bytes (a package bundle).
    pub async fn upload<O>(&self, args: &[&str], bytes: Vec<u8>) -> Result<O::Reply, ClientError>
    where
        O: Operation<Query = (), Body = Octets>,
        O::Reply: DeserializeOwned,
    {
        let (what, resp) = self
            .send::<O>(args, &(), Payload::<()>::Bytes(bytes), None)
            .await?;
        resp.json().await.map_err(|e| decode(&what, e))
    }

    /// Opens an operation whose reply is read as it comes (bytes, JSON lines).
    pub async fn open<O>(&self, args: &[&str], query: &O::Query) -> Result<Response, ClientError>
    where
        O: Operation<Body = ()>,
        O::Query: Serialize,
    {
        let (_, resp) = self
            .send::<O>(args, query, Payload::Json(&()), None)
            .await?;
        Ok(resp)
    }

    /// Makes an operation whose reply is bytes (a plan as its plugin wrote it); `None` for a 404.
    pub async fn octets<O>(&self, args: &[&str]) -> Result<Option<Vec<u8>>, ClientError>
    where
        O: Operation<Query = (), Body = (), Reply = Octets>,
    {
        match self.send::<O>(args, &(), Payload::Json(&()), None).await {
            Ok((what, resp)) => Ok(Some(
                resp.bytes().await.map_err(|e| decode(&what, e))?.to_vec(),
            )),
            Err(e) if e.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Subscribes to an operation that answers with Server-Sent Events, resuming after event
    /// `last_id` when given. The API answers once the subscription is in place.
    pub async fn subscribe<O>(
        &self,
        args: &[&str],
        query: &O::Query,
        last_id: Option<&str>,
    ) -> Result<Response, ClientError>
    where
        O: Operation<Body = (), Reply = ops::EventStream>,
        O::Query: Serialize,
    {
        let (_, resp) = self
            .send::<O>(args, query, Payload::Json(&()), Some(last_id))
            .await?;
        Ok(resp)
    }

    async fn send<O: Operation>(
        &self,
        args: &[&str],
        query: &(impl Serialize + ?Sized),
        body: Payload<'_, impl Serialize>,
        events: Option<Option<&str>>,
    ) -> Result<(String, Response), ClientError> {
        let path = ops::path_of::<O>(args).ok_or_else(|| {
            ClientError::Usage(format!(
                "{} {} takes {} path arguments",
                O::METHOD.name(),
                O::PATH,
                O::PATH.matches('{').count()
            ))
        })?;
        let what = format!("{} {path}", O::METHOD.name());
        let url = format!("{}{path}", self.base);
        let mut req = match O::METHOD {
            ops::Method::Get => self.http.get(url),
            ops::Method::Post => self.http.post(url),
            ops::Method::Delete => self.http.delete(url),
        }
        .query(query);
        req = match body {
            Payload::Bytes(b) => req
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .body(b),
            // `()` and `None`: no body at all (an optional body left out).
            Payload::Json(b) => match serde_json::to_value(b) {
                Ok(serde_json::Value::Null) => req,
                Ok(v) => req.json(&v),
                Err(e) => return Err(ClientError::Usage(format!("{what}: the body: {e}"))),
            },
        };
        if let Some(last_id) = events {
            req = req.header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(id) = last_id {
                req = req.header("last-event-id", id);
            }
        }
        let resp = req
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                base: self.base.clone(),
                what: what.clone(),
                source,
            })?;
        if resp.status().is_success() {
            return Ok((what, resp));
        }
        let status = resp.status();
        let answer: ErrorAnswer = resp.json().await.unwrap_or_default();
        Err(ClientError::Refused {
            status,
            what,
            message: answer.error.unwrap_or_else(|| "no details".into()),
            diagnostics: answer.diagnostics,
        })
    }
}

enum Payload<'a, B: ?Sized> {
    Json(&'a B),
    Bytes(Vec<u8>),
}

fn decode(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> ClientError {
    ClientError::Decode {
        what: what.to_string(),
        source: Box::new(e),
    }
}
