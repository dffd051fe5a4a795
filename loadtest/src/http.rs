//! A minimal HTTP/1.1 client for the benchmarks: one request per connection, read to its end.
//! Hand-written because the loadtest needs only this, and every HTTP client crate would add a
//! TLS stack and a connection pool to a build that has neither to offer here.

use std::net::SocketAddr;

use anyhow::{Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `method path` with the bearer `token` and an optional JSON body; the status code and
/// the response body.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&serde_json::Value>,
) -> Result<(u16, Vec<u8>)> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).await?;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await?;
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        bail!("{method} {path}: no HTTP response");
    };
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut payload = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        payload = unchunk(&payload)?;
    }
    Ok((status, payload))
}

/// A JSON answer of `method path`, or an error with the status and body.
pub async fn json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&serde_json::Value>,
) -> Result<serde_json::Value> {
    let (status, payload) = request(addr, method, path, token, body).await?;
    if !(200..300).contains(&status) {
        bail!(
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&payload)
        );
    }
    Ok(serde_json::from_slice(&payload)?)
}

fn unchunk(mut data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            bail!("a chunked body without its chunk size");
        };
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).trim(), 16)?;
        if size == 0 {
            return Ok(out);
        }
        let start = eol + 2;
        if data.len() < start + size + 2 {
            bail!("a chunk shorter than its size");
        }
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}
