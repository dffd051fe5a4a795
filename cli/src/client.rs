//! A small client for the Control API.

use anyhow::{Context, Result, anyhow, bail};
use reqwest::{Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[derive(Clone)]
pub struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    /// A client of the API at `base`, sending `token` (see `tokens::resolve`) with every request.
    pub fn new(base: &str, token: Option<&str>) -> Result<Api> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .context("the token has characters a header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("ferry/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .build()
            .context("creating the HTTP client")?;
        // `--api 127.0.0.1:4600` means the plain-HTTP API there, as `ferry dev` prints it.
        let base = base.trim_end_matches('/');
        let base = if base.contains("://") {
            base.to_string()
        } else {
            format!("http://{base}")
        };
        if !base.starts_with("http://") && !base.starts_with("https://") {
            bail!("--api {base}: the API's URL starts with http:// or https://");
        }
        Ok(Api { base, http })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn check(&self, r: reqwest::Result<Response>, what: &str) -> Result<Response> {
        let r = r.map_err(|e| anyhow!("cannot reach the Ferry API at {} ({what}): {e}. Is `ferry dev` or ferry-server running? (set --api or FERRY_API)", self.base))?;
        if r.status().is_success() {
            return Ok(r);
        }
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        let msg = body
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no details")
            .to_string();
        if let Some(diags) = body.get("diagnostics").and_then(Value::as_array) {
            let lines: Vec<String> = diags
                .iter()
                .map(|d| {
                    format!(
                        "{}:{}:{}: {}: {}",
                        d["file"].as_str().unwrap_or(""),
                        d["line"],
                        d["column"],
                        d["severity"].as_str().unwrap_or("error"),
                        d["message"].as_str().unwrap_or("")
                    )
                })
                .collect();
            bail!("{msg}\n{}", lines.join("\n"));
        }
        if status == StatusCode::NOT_FOUND {
            bail!("{msg}");
        }
        bail!("{what}: {msg} (HTTP {status})")
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let r = self
            .check(
                self.http.get(self.url(path)).send().await,
                &format!("GET {path}"),
            )
            .await?;
        r.json()
            .await
            .with_context(|| format!("decoding the answer to GET {path}"))
    }

    /// `None` on 404.
    pub async fn get_opt<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        let r = self.http.get(self.url(path)).send().await;
        if let Ok(resp) = &r
            && resp.status() == StatusCode::NOT_FOUND
        {
            return Ok(None);
        }
        let r = self.check(r, &format!("GET {path}")).await?;
        Ok(Some(r.json().await.with_context(|| {
            format!("decoding the answer to GET {path}")
        })?))
    }

    pub async fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T> {
        let r = self
            .check(
                self.http.post(self.url(path)).json(body).send().await,
                &format!("POST {path}"),
            )
            .await?;
        r.json()
            .await
            .with_context(|| format!("decoding the answer to POST {path}"))
    }

    pub async fn delete(&self, path: &str) -> Result<()> {
        self.check(
            self.http.delete(self.url(path)).send().await,
            &format!("DELETE {path}"),
        )
        .await?;
        Ok(())
    }

    pub async fn post_bytes<T: DeserializeOwned>(&self, path: &str, body: Vec<u8>) -> Result<T> {
        let r = self
            .check(
                self.http
                    .post(self.url(path))
                    .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                    .body(body)
                    .send()
                    .await,
                &format!("POST {path}"),
            )
            .await?;
        r.json()
            .await
            .with_context(|| format!("decoding the answer to POST {path}"))
    }

    /// A streaming GET (job logs).
    pub async fn stream(&self, path: &str) -> Result<Response> {
        self.check(
            self.http.get(self.url(path)).send().await,
            &format!("GET {path}"),
        )
        .await
    }

    /// A streaming GET of Server-Sent Events, resuming after event `last_id` when given.
    pub async fn stream_from(&self, path: &str, last_id: Option<&str>) -> Result<Response> {
        let mut req = self
            .http
            .get(self.url(path))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(id) = last_id {
            req = req.header("last-event-id", id);
        }
        self.check(req.send().await, &format!("GET {path}")).await
    }
}
