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
        let (json, mut bytes) = match body {
            Payload::Bytes(b) => (None, Some(b)),
            // `()` and `None`: no body at all (an optional body left out).
            Payload::Json(b) => match serde_json::to_value(b) {
                Ok(serde_json::Value::Null) => (None, None),
                Ok(v) => (Some(v), None),
                Err(e) => return Err(ClientError::Usage(format!("{what}: the body: {e}"))),
            },
        };
        let mut pause = FIRST_PAUSE;
        let mut tries = 0;
        let resp = loop {
            // Only a read is asked again, and a read has no bytes to send.
            let req = self.request(O::METHOD, &url, query, json.as_ref(), bytes.take(), events);
            let resp = req
                .send()
                .await
                .map_err(|source| ClientError::Unreachable {
                    base: self.base.clone(),
                    what: what.clone(),
                    source,
                })?;
            // 503: the control plane's store is unavailable for now (a hub node failing over);
            // a read is asked again a few times, a change never (it may have been made).
            let again = resp.status() == StatusCode::SERVICE_UNAVAILABLE
                && O::METHOD == ops::Method::Get
                && tries < UNAVAILABLE_RETRIES;
            if !again {
                break resp;
            }
            tries += 1;
            tokio::time::sleep(pause).await;
            pause *= 2;
        };
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

/// Reads the API refused with 503 asked again, the first after [`FIRST_PAUSE`], each pause
/// twice the one before: 7.5 s in all, about a hub node's failover.
const UNAVAILABLE_RETRIES: u32 = 4;
const FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

impl Client {
    /// One request of `method` to `url`, with its query, body and what an event stream asks.
    fn request(
        &self,
        method: ops::Method,
        url: &str,
        query: &(impl Serialize + ?Sized),
        json: Option<&serde_json::Value>,
        bytes: Option<Vec<u8>>,
        events: Option<Option<&str>>,
    ) -> reqwest::RequestBuilder {
        let mut req = match method {
            ops::Method::Get => self.http.get(url),
            ops::Method::Post => self.http.post(url),
            ops::Method::Delete => self.http.delete(url),
        }
        .query(query);
        if let Some(v) = json {
            req = req.json(v);
        }
        if let Some(b) = bytes {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .body(b);
        }
        if let Some(last_id) = events {
            req = req.header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(id) = last_id {
                req = req.header("last-event-id", id);
            }
        }
        req
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// An HTTP server that answers 503 (the API's "store unavailable") to its first `fails`
    /// requests and `[]` after; it counts the requests.
    fn flaky_api(fails: usize) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (status, body) = if n < fails {
                    (
                        "503 Service Unavailable",
                        r#"{"error":"the control plane's store is unavailable"}"#,
                    )
                } else {
                    ("200 OK", "[]")
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (base, seen)
    }

    #[tokio::test]
    async fn a_read_refused_as_unavailable_is_asked_again_and_a_lasting_refusal_says_so() {
        let (base, seen) = flaky_api(2);
        let client = Client::new(&base, None).unwrap();
        let apps = client.run::<ops::ListApps>(&[]).await.unwrap();
        assert!(apps.is_empty());
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3);

        let (base, seen) = flaky_api(usize::MAX);
        let client = Client::new(&base, None).unwrap();
        let err = client.run::<ops::ListApps>(&[]).await.unwrap_err();
        assert_eq!(err.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
        assert!(err.to_string().contains("unavailable"), "{err}");
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            1 + UNAVAILABLE_RETRIES as usize
        );

        // A change is never asked again: it may have been made.
        let (base, seen) = flaky_api(usize::MAX);
        let client = Client::new(&base, None).unwrap();
        let err = client.run::<ops::CancelJob>(&["j1"]).await.unwrap_err();
        assert_eq!(err.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
