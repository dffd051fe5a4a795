//! The three NATS JWTs of an auth callout exchange: the server's authorization request (read and
//! verified), and the callout's authorization response carrying a user JWT (written and signed).
//!
//! Written here, over `nkeys` (the NATS team's crate for the signing keys), rather than taken from
//! a crate: the Rust NATS-JWT ports on crates.io are 0.1 releases with few users, and Ferry needs
//! only these three claim shapes. The format is nats-io/jwt v2: `base64url(header)` `.`
//! `base64url(claims)` `.` `base64url(ed25519 signature of the first two parts)`, header
//! `{"typ":"JWT","alg":"ed25519-nkey"}`.

use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use nkeys::KeyPair;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("not a JWT: {0}")]
    Malformed(&'static str),
    #[error("the JWT's claims do not decode: {0}")]
    Claims(#[from] serde_json::Error),
    #[error("the JWT's signature does not verify against its issuer {0}")]
    Signature(String),
    #[error("the JWT is a `{0}` claim, not an authorization request")]
    WrongType(String),
    #[error("signing: {0}")]
    Sign(String),
}

/// What nats-server tells the callout about a connecting client (the fields Ferry reads).
#[derive(Debug, Clone, Deserialize)]
pub struct AuthRequest {
    /// The server's public key: the response is addressed to it.
    pub server_id: ServerId,
    /// The user key the server generated for this connection: the response must name it.
    pub user_nkey: String,
    #[serde(default)]
    pub client_info: ClientInfo,
    #[serde(default)]
    pub connect_opts: ConnectOpts,
    #[serde(default)]
    pub client_tls: Option<ClientTls>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ServerId {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClientInfo {
    #[serde(default)]
    pub host: String,
    /// The connection's id on that server (what a kick names).
    #[serde(default)]
    pub id: u64,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConnectOpts {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub auth_token: String,
}

/// The client's TLS state. `verified_chains[0][0]` is the client certificate when the server
/// verified it against its CA (`tls { verify: true }`); unverified certificates come in `certs`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ClientTls {
    #[serde(default)]
    pub certs: Vec<String>,
    #[serde(default)]
    pub verified_chains: Vec<Vec<String>>,
}

impl ClientTls {
    /// The client certificate the server verified, if it verified one.
    pub fn verified_leaf(&self) -> Option<&str> {
        self.verified_chains
            .first()
            .and_then(|c| c.first())
            .map(String::as_str)
    }
}

#[derive(Deserialize)]
struct RequestClaims {
    iss: String,
    #[serde(default)]
    nats: Option<serde_json::Value>,
}

/// Decodes an authorization request and checks that its issuer (the server's key) signed it.
pub fn decode_request(token: &str) -> Result<AuthRequest, JwtError> {
    let mut parts = token.trim().split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed("expected three dot-separated parts"));
    };
    let claims = BASE64URL_NOPAD
        .decode(c.as_bytes())
        .map_err(|_| JwtError::Malformed("claims are not base64url"))?;
    let sig = BASE64URL_NOPAD
        .decode(s.as_bytes())
        .map_err(|_| JwtError::Malformed("signature is not base64url"))?;
    let outer: RequestClaims = serde_json::from_slice(&claims)?;
    let issuer =
        KeyPair::from_public_key(&outer.iss).map_err(|_| JwtError::Signature(outer.iss.clone()))?;
    let signed = format!("{h}.{c}");
    issuer
        .verify(signed.as_bytes(), &sig)
        .map_err(|_| JwtError::Signature(outer.iss.clone()))?;
    let nats = outer.nats.ok_or(JwtError::Malformed("no `nats` claims"))?;
    let kind = nats.get("type").and_then(|t| t.as_str()).unwrap_or("");
    if kind != "authorization_request" {
        return Err(JwtError::WrongType(kind.to_string()));
    }
    Ok(serde_json::from_value(nats)?)
}

/// Allow and deny lists of subjects, as NATS permissions take them.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SubjectRule {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// A user's publish and subscribe permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: SubjectRule,
    pub subscribe: SubjectRule,
}

/// The user a callout admits: its name (shown in the server's connection list), the account it
/// lands in, its permissions, and when its authorization ends (the server disconnects it then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub name: String,
    pub account: String,
    pub permissions: Permissions,
    pub expires_unix: Option<u64>,
}

fn encode(signer: &KeyPair, mut claims: serde_json::Value) -> Result<String, JwtError> {
    let header = BASE64URL_NOPAD.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    claims["iss"] = signer.public_key().into();
    claims["iat"] = now_unix().into();
    // nats-io/jwt names a claim by a hash of it; nothing checks how it was computed.
    let id = Sha256::digest(serde_json::to_vec(&claims)?);
    claims["jti"] = BASE32_NOPAD.encode(&id).into();
    let body = BASE64URL_NOPAD.encode(&serde_json::to_vec(&claims)?);
    let signed = format!("{header}.{body}");
    let sig = signer
        .sign(signed.as_bytes())
        .map_err(|e| JwtError::Sign(e.to_string()))?;
    Ok(format!("{signed}.{}", BASE64URL_NOPAD.encode(&sig)))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The response admitting `grant` for the connection `req` describes, signed by the callout's
/// issuer key.
pub fn allow(req: &AuthRequest, grant: &Grant, issuer: &KeyPair) -> Result<String, JwtError> {
    let p = &grant.permissions;
    let mut user = serde_json::json!({
        "sub": req.user_nkey,
        "aud": grant.account,
        "name": grant.name,
        "nats": {
            "pub": p.publish,
            "sub": p.subscribe,
            "subs": -1, "data": -1, "payload": -1,
            "type": "user", "version": 2,
        },
    });
    if let Some(exp) = grant.expires_unix {
        user["exp"] = exp.into();
    }
    let user_jwt = encode(issuer, user)?;
    respond(req, issuer, serde_json::json!({ "jwt": user_jwt }))
}

/// The response refusing the connection `req` describes, with the reason the server logs.
pub fn deny(req: &AuthRequest, reason: &str, issuer: &KeyPair) -> Result<String, JwtError> {
    respond(req, issuer, serde_json::json!({ "error": reason }))
}

fn respond(
    req: &AuthRequest,
    issuer: &KeyPair,
    mut body: serde_json::Value,
) -> Result<String, JwtError> {
    body["type"] = "authorization_response".into();
    body["version"] = 2.into();
    encode(
        issuer,
        serde_json::json!({ "sub": req.user_nkey, "aud": req.server_id.id, "nats": body }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(server: &KeyPair, user: &str) -> String {
        encode(
            server,
            serde_json::json!({
                "sub": "AISSUER", "aud": "nats-authorization-request",
                "nats": {
                    "server_id": { "id": server.public_key(), "name": "hub" },
                    "user_nkey": user,
                    "client_info": { "host": "127.0.0.1", "id": 7, "kind": "Client" },
                    "connect_opts": { "name": "runner", "protocol": 1 },
                    "client_tls": { "verified_chains": [["LEAF", "CA"]] },
                    "type": "authorization_request", "version": 2,
                },
            }),
        )
        .unwrap()
    }

    fn claims(jwt: &str) -> serde_json::Value {
        let body = jwt.split('.').nth(1).unwrap();
        serde_json::from_slice(&BASE64URL_NOPAD.decode(body.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn reads_a_signed_request_and_refuses_a_tampered_one() {
        let server = KeyPair::new_server();
        let user = KeyPair::new_user().public_key();
        let token = request(&server, &user);
        let req = decode_request(&token).unwrap();
        assert_eq!(req.user_nkey, user);
        assert_eq!(req.server_id.id, server.public_key());
        assert_eq!(req.client_info.id, 7);
        assert_eq!(req.client_tls.unwrap().verified_leaf(), Some("LEAF"));

        // Claims swapped for another request's: the signature no longer matches.
        let other = request(&server, &KeyPair::new_user().public_key());
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[1] = other.split('.').nth(1).unwrap();
        assert!(matches!(
            decode_request(&parts.join(".")),
            Err(JwtError::Signature(_))
        ));
        assert!(matches!(decode_request("a.b"), Err(JwtError::Malformed(_))));
    }

    #[test]
    fn an_admission_names_the_connection_and_carries_the_permissions() {
        let server = KeyPair::new_server();
        let issuer = KeyPair::new_account();
        let req = decode_request(&request(&server, &KeyPair::new_user().public_key())).unwrap();
        let grant = Grant {
            name: "acme.prod".into(),
            account: "FERRY".into(),
            permissions: Permissions {
                publish: SubjectRule {
                    allow: vec!["ferry.rx.acme.prod.>".into()],
                    deny: vec![],
                },
                subscribe: SubjectRule {
                    allow: vec!["ferry.wake.acme.prod".into()],
                    deny: vec![],
                },
            },
            expires_unix: Some(4_000_000_000),
        };
        let response = allow(&req, &grant, &issuer).unwrap();
        let r = claims(&response);
        assert_eq!(r["aud"], req.server_id.id);
        assert_eq!(r["sub"], req.user_nkey);
        assert_eq!(r["iss"], issuer.public_key());
        assert_eq!(r["nats"]["type"], "authorization_response");
        let user = claims(r["nats"]["jwt"].as_str().unwrap());
        assert_eq!(user["sub"], req.user_nkey);
        assert_eq!(user["aud"], "FERRY");
        assert_eq!(user["exp"], 4_000_000_000u64);
        assert_eq!(user["nats"]["pub"]["allow"][0], "ferry.rx.acme.prod.>");
        assert!(user["nats"]["pub"].get("deny").is_none());
        // Both are verifiable with the issuer's public key.
        for jwt in [&response, r["nats"]["jwt"].as_str().unwrap()] {
            let (signed, sig) = jwt.rsplit_once('.').unwrap();
            let sig = BASE64URL_NOPAD.decode(sig.as_bytes()).unwrap();
            KeyPair::from_public_key(&issuer.public_key())
                .unwrap()
                .verify(signed.as_bytes(), &sig)
                .unwrap();
        }
        let refused = claims(&deny(&req, "revoked", &issuer).unwrap());
        assert_eq!(refused["nats"]["error"], "revoked");
    }
}
