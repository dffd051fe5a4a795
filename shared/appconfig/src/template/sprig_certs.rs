//! sprig's RSA keys and X.509 certificates (the rest of its `crypto.go`): `genPrivateKey "rsa"`,
//! `genCA`, `genSelfSignedCert`, `genSignedCert`, their `WithKey` forms, `buildCustomCert`.
//!
//! As sprig makes them: RSA keys of 4096 bits for `genPrivateKey` and 2048 for a certificate's
//! own, written as PKCS #1 (`RSA PRIVATE KEY`); certificates with the common name, the IPs and
//! DNS names asked for, valid from now for the days asked, for server and client auth, a CA's
//! with `CertSign`. A certificate is a value with `.Cert` and `.Key` (PEM), as sprig's struct is.
//!
//! Keys come from the `rsa` crate (ring, Ferry's provider, signs with RSA keys but does not make
//! them); certificates from rcgen over ring. Making an RSA key is slow (a 4096-bit one takes
//! seconds): a template that makes one makes it on every render, in Nuon as here.

use std::collections::BTreeMap;

use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{EncodePrivateKey, LineEnding};

use super::encoding;
use super::value::V;

/// Name, minimum and maximum argument count, one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    (
        "genCA",
        2,
        Some(2),
        "`genCA CN DAYS`: a CA (`.Cert`, `.Key`), RSA 2048",
    ),
    (
        "genCAWithKey",
        3,
        Some(3),
        "`genCAWithKey CN DAYS KEY`: a CA with the PEM key given",
    ),
    (
        "genSelfSignedCert",
        4,
        Some(4),
        "`genSelfSignedCert CN IPS DNS DAYS`: a self-signed certificate",
    ),
    (
        "genSelfSignedCertWithKey",
        5,
        Some(5),
        "`genSelfSignedCertWithKey CN IPS DNS DAYS KEY`",
    ),
    (
        "genSignedCert",
        5,
        Some(5),
        "`genSignedCert CN IPS DNS DAYS CA`: a certificate the CA signs",
    ),
    (
        "genSignedCertWithKey",
        6,
        Some(6),
        "`genSignedCertWithKey CN IPS DNS DAYS CA KEY`",
    ),
    (
        "buildCustomCert",
        2,
        Some(2),
        "`buildCustomCert CERT KEY`: a certificate value from base64 PEMs",
    ),
];

pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let text = |i: usize| match arg(i) {
        V::Str(s) => s,
        other => other.print(),
    };
    let days = |i: usize| match arg(i) {
        V::Int(n, _) => n,
        _ => 0,
    };
    let r = match name {
        "genCA" => new_rsa(2048).and_then(|k| ca(&text(0), days(1), k)),
        "genCAWithKey" => from_pem(&text(2)).and_then(|k| ca(&text(0), days(1), k)),
        "genSelfSignedCert"
        | "genSelfSignedCertWithKey"
        | "genSignedCert"
        | "genSignedCertWithKey" => {
            let signed = name.starts_with("genSigned");
            let key = match name.ends_with("WithKey") {
                true => from_pem(&text(if signed { 5 } else { 4 })),
                false => new_rsa(2048),
            };
            let issuer = signed.then(|| arg(4));
            key.and_then(|k| leaf(&text(0), &arg(1), &arg(2), days(3), k, issuer.as_ref()))
        }
        "buildCustomCert" => custom(&text(0), &text(1)),
        _ => return None,
    };
    Some(r.map_err(|e| format!("error calling {name}: {e}")))
}

/// `genPrivateKey "rsa"`: a 4096-bit key, PKCS #1 PEM.
pub fn rsa_private_key() -> Result<String, String> {
    Ok(new_rsa(4096)?.pem)
}

/// A key as certificates are signed with it, and as it prints.
struct Key {
    pair: rcgen::KeyPair,
    pem: String,
}

/// ring's system generator as the `rsa` crate takes randomness.
struct Random;

impl rand_core::RngCore for Random {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        super::sprig_crypto::fill(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for Random {}

fn new_rsa(bits: usize) -> Result<Key, String> {
    let key = rsa::RsaPrivateKey::new(&mut Random, bits).map_err(|e| e.to_string())?;
    rsa_key(&key)
}

fn rsa_key(key: &rsa::RsaPrivateKey) -> Result<Key, String> {
    let pem = key
        .to_pkcs1_pem(LineEnding::LF)
        .map_err(|e| e.to_string())?
        .to_string();
    let der = key.to_pkcs8_der().map_err(|e| e.to_string())?;
    let pkcs8 = rustls_pki_types::PrivatePkcs8KeyDer::from(der.as_bytes().to_vec());
    let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8, &rcgen::PKCS_RSA_SHA256)
        .map_err(|e| e.to_string())?;
    Ok(Key { pair, pem })
}

/// A PEM private key as sprig takes one: RSA (PKCS #1), EC (SEC 1) or PKCS #8.
fn from_pem(pem: &str) -> Result<Key, String> {
    if pem.contains("BEGIN RSA PRIVATE KEY") {
        let key = rsa::RsaPrivateKey::from_pkcs1_pem(pem).map_err(|e| e.to_string())?;
        return rsa_key(&key).map(|k| Key {
            pem: pem.to_string(),
            ..k
        });
    }
    let pkcs8 = match pem.contains("BEGIN EC PRIVATE KEY") {
        true => p256_pkcs8(&pem_body(pem)?),
        false => pem.to_string(),
    };
    let pair = rcgen::KeyPair::from_pem(&pkcs8).map_err(|e| format!("unable to parse key: {e}"))?;
    Ok(Key {
        pair,
        pem: pem.to_string(),
    })
}

/// The DER bytes of a one-block PEM.
fn pem_body(pem: &str) -> Result<Vec<u8>, String> {
    let b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    encoding::b64dec(&b64).map_err(|at| format!("bad PEM at byte {at}"))
}

/// A P-256 SEC 1 key (what `genPrivateKey "ecdsa"` writes) wrapped as PKCS #8, as ring reads.
fn p256_pkcs8(sec1: &[u8]) -> String {
    fn der(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match body.len() {
            n if n < 0x80 => out.push(n as u8),
            n if n < 0x100 => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(body);
        out
    }
    let algorithm: &[u8] = &[
        0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
        0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
    ];
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend_from_slice(algorithm);
    body.extend(der(0x04, sec1));
    let doc = der(0x30, &body);
    super::sprig_crypto::pem("PRIVATE KEY", &doc)
}

/// The certificate value: `.Cert` and `.Key`.
fn certificate(cert: String, key: String) -> V {
    V::map(BTreeMap::from([
        ("Cert".to_string(), V::Str(cert)),
        ("Key".to_string(), V::Str(key)),
    ]))
}

/// sprig's base template: the name, valid from now for `days`, for server and client auth.
fn params(cn: &str, days: i64) -> Result<rcgen::CertificateParams, String> {
    let mut p = rcgen::CertificateParams::default();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, cn.to_string());
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now;
    p.not_after = now + time::Duration::days(days);
    let mut serial = [0u8; 16];
    super::sprig_crypto::fill(&mut serial);
    serial[0] &= 0x7f;
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyEncipherment,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    p.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    Ok(p)
}

fn ca(cn: &str, days: i64, key: Key) -> Result<V, String> {
    let mut p = params(cn, days)?;
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.key_usages.push(rcgen::KeyUsagePurpose::KeyCertSign);
    let cert = p.self_signed(&key.pair).map_err(|e| e.to_string())?;
    Ok(certificate(cert.pem(), key.pem))
}

/// The strings of a list argument (nil: none).
fn strings(v: &V) -> Vec<String> {
    match v {
        V::List(l, _) => l.iter().map(V::print).collect(),
        V::Null => vec![],
        other => vec![other.print()],
    }
}

fn leaf(cn: &str, ips: &V, dns: &V, days: i64, key: Key, ca: Option<&V>) -> Result<V, String> {
    let mut p = params(cn, days)?;
    for ip in strings(ips) {
        let addr: std::net::IpAddr = ip.parse().map_err(|_| format!("error parsing ip: {ip}"))?;
        p.subject_alt_names.push(rcgen::SanType::IpAddress(addr));
    }
    for name in strings(dns) {
        let name = name.try_into().map_err(|e| format!("{e}"))?;
        p.subject_alt_names.push(rcgen::SanType::DnsName(name));
    }
    let cert = match ca {
        None => p.self_signed(&key.pair),
        Some(ca) => {
            let (cert, ca_key) = match ca {
                V::Map(m, _) => (
                    m.get("Cert").map(V::print).unwrap_or_default(),
                    m.get("Key").map(V::print).unwrap_or_default(),
                ),
                _ => return Err("the CA is not a certificate (genCA's)".into()),
            };
            let ca_key = from_pem(&ca_key)?;
            let issuer = rcgen::Issuer::from_ca_cert_pem(&cert, ca_key.pair)
                .map_err(|e| format!("error parsing the CA: {e}"))?;
            p.signed_by(&key.pair, &issuer)
        }
    }
    .map_err(|e| e.to_string())?;
    Ok(certificate(cert.pem(), key.pem))
}

/// `buildCustomCert`: a certificate value from a base64 certificate and key, both PEM.
fn custom(cert: &str, key: &str) -> Result<V, String> {
    let decode = |b64: &str, what: &str| {
        encoding::b64dec(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| format!("unable to decode {what}"))
    };
    let (cert, key) = (
        decode(cert, "base 64 certificate")?,
        decode(key, "base 64 private key")?,
    );
    if !cert.contains("-----BEGIN CERTIFICATE-----") {
        return Err("unable to decode certificate".into());
    }
    from_pem(&key).map_err(|_| "unable to decode private key".to_string())?;
    Ok(certificate(cert, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> V {
        V::Str(x.into())
    }

    #[test]
    fn a_ca_signs_a_certificate_and_keys_come_back_as_pem() {
        let ca = call("genCA", &[s("ferry-ca"), V::int(30)])
            .unwrap()
            .unwrap();
        let V::Map(m, _) = &ca else { panic!("{ca:?}") };
        assert!(
            m["Cert"]
                .print()
                .starts_with("-----BEGIN CERTIFICATE-----\n")
        );
        assert!(
            m["Key"]
                .print()
                .starts_with("-----BEGIN RSA PRIVATE KEY-----\n")
        );
        let ips = V::list(vec![s("10.0.0.1")]);
        let dns = V::list(vec![s("web.local")]);
        let leaf = call(
            "genSignedCert",
            &[s("web"), ips, dns, V::int(30), ca.clone()],
        )
        .unwrap()
        .unwrap();
        let V::Map(l, _) = &leaf else { panic!() };
        let pem = l["Cert"].print();
        let der = pem_body(&pem).unwrap();
        let (_, x) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(x.issuer().to_string(), "CN=ferry-ca");
        assert!(
            call(
                "genSelfSignedCert",
                &[s("x"), V::list(vec![s("nope")]), V::Null, V::int(1)]
            )
            .unwrap()
            .is_err()
        );
        // A certificate with an ECDSA key of genPrivateKey's.
        let ec = super::super::sprig_crypto::call("genPrivateKey", &[s("ecdsa")])
            .unwrap()
            .unwrap();
        let with = call("genCAWithKey", &[s("ec-ca"), V::int(1), ec.clone()])
            .unwrap()
            .unwrap();
        let V::Map(w, _) = &with else { panic!() };
        assert_eq!(w["Key"], ec);
        let built = call(
            "buildCustomCert",
            &[
                s(&encoding::b64enc(pem.as_bytes())),
                s(&encoding::b64enc(l["Key"].print().as_bytes())),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(built, leaf);
    }
}
