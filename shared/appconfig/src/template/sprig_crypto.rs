//! sprig's random and cryptographic functions (its `crypto.go`, the random strings of its
//! `strings.go`, `uuidv4`, xstrings' `shuffle`) and the functions that read the renderer's own
//! host (`env`, `expandenv`, `getHostByName`).
//!
//! Randomness comes from ring's system generator, as sprig's from `crypto/rand`. `bcrypt` is
//! `$2a$` at cost 10, `derivePassword` the Master Password algorithm (scrypt N=32768, r=8,
//! p=2), `encryptAES` AES-256-CBC with a random IV, as sprig's are.
//!
//! Where Ferry deliberately differs from Nuon (each is a validation warning, see
//! [`super::REFUSED`]):
//! * `env` and `expandenv` read nothing: a vendor's config would otherwise read the control
//!   plane's environment (its credentials among it). Every variable reads as unset.
//! * `getHostByName` fails: the control plane's resolver is not the install's network.
//! * `genPrivateKey "dsa"` fails: Go deprecates `crypto/dsa`, and sprig's keys are 1024-bit.
//!   RSA keys and certificates are `super::sprig_certs`'.

use ring::rand::{SecureRandom, SystemRandom};

use super::encoding;
use super::value::V;

/// Name, minimum and maximum argument count, one-line description.
pub const FUNCTIONS: &[(&str, usize, Option<usize>, &str)] = &[
    ("randAlphaNum", 1, Some(1), "N random letters and digits"),
    ("randAlpha", 1, Some(1), "N random letters"),
    ("randNumeric", 1, Some(1), "N random digits"),
    (
        "randAscii",
        1,
        Some(1),
        "N random printable ASCII characters",
    ),
    ("randBytes", 1, Some(1), "N random bytes, base64-encoded"),
    ("randInt", 2, Some(2), "`randInt MIN MAX`: MIN <= n < MAX"),
    ("uuidv4", 0, Some(0), "a random UUID"),
    (
        "shuffle",
        1,
        Some(1),
        "the characters of a string in random order",
    ),
    ("bcrypt", 1, Some(1), "a bcrypt hash (`$2a$10$...`)"),
    (
        "htpasswd",
        2,
        Some(2),
        "`htpasswd USER PASSWORD`: an htpasswd line (bcrypt)",
    ),
    (
        "derivePassword",
        5,
        Some(5),
        "`derivePassword COUNTER TYPE PASSWORD USER SITE`: Master Password's algorithm",
    ),
    (
        "genPrivateKey",
        1,
        Some(1),
        "a PEM private key: `rsa` (4096 bits), `ecdsa` (P-256) or `ed25519` (Ferry refuses `dsa`)",
    ),
    (
        "encryptAES",
        2,
        Some(2),
        "`encryptAES PASSWORD TEXT`: AES-256-CBC, base64",
    ),
    ("decryptAES", 2, Some(2), "`decryptAES PASSWORD DATA`"),
    (
        "env",
        1,
        Some(1),
        "always empty in Ferry (Nuon reads its own environment)",
    ),
    (
        "getHostByName",
        1,
        Some(1),
        "refused in Ferry (see `REFUSED`)",
    ),
    (
        "expandenv",
        1,
        Some(1),
        "the text with every `$VAR` empty in Ferry (Nuon reads its own environment)",
    ),
];

/// Functions Nuon has that Ferry refuses to run while rendering, and why.
pub const REFUSED: &[(&str, &str)] = &[(
    "getHostByName",
    "Ferry does not resolve names while rendering: the control plane's resolver is not the install's network",
)];

const DSA: &str = "Ferry does not make DSA keys (Go deprecates crypto/dsa; sprig's are 1024-bit): use `genPrivateKey \"ecdsa\"`, `\"ed25519\"` or `\"rsa\"`";

pub fn call(name: &str, args: &[V]) -> Option<Result<V, String>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Null);
    let text = |i: usize| match arg(i) {
        V::Str(s) => s,
        other => other.print(),
    };
    let int = |i: usize| match arg(i) {
        V::Int(n, _) => n,
        _ => 0,
    };
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        return Some(Err(format!("{name}: {why}")));
    }
    Some(Ok(match name {
        "randAlphaNum" => V::Str(random_from(int(0), ALNUM)),
        "randAlpha" => V::Str(random_from(int(0), &ALNUM[10..])),
        "randNumeric" => V::Str(random_from(int(0), &ALNUM[..10])),
        "randAscii" => V::Str(random_from(int(0), ASCII)),
        "randBytes" => {
            let mut buf = vec![0u8; int(0).max(0) as usize];
            fill(&mut buf);
            V::Str(encoding::b64enc(&buf))
        }
        "randInt" => {
            let (min, max) = (int(0), int(1));
            if max <= min {
                return Some(Err("error calling randInt: invalid argument to Intn".into()));
            }
            V::int(min + below((max - min) as u64) as i64)
        }
        "uuidv4" => V::Str(uuidv4()),
        "shuffle" => V::Str(shuffle(&text(0))),
        "bcrypt" => V::Str(bcrypt_hash(&text(0))),
        "htpasswd" if text(0).contains(':') => V::Str(format!("invalid username: {}", text(0))),
        "htpasswd" => V::Str(format!("{}:{}", text(0), bcrypt_hash(&text(1)))),
        "derivePassword" => V::Str(derive_password(
            int(0) as u32,
            &text(1),
            &text(2),
            &text(3),
            &text(4),
        )),
        "genPrivateKey" => match private_key(&text(0)) {
            Ok(pem) => V::Str(pem),
            Err(e) => return Some(Err(format!("error calling genPrivateKey: {e}"))),
        },
        "encryptAES" => V::Str(encrypt_aes(&text(0), &text(1))),
        "decryptAES" => match decrypt_aes(&text(0), &text(1)) {
            Ok(s) => V::Str(s),
            Err(e) => return Some(Err(format!("error calling decryptAES: {e}"))),
        },
        "env" => V::Str(String::new()),
        "expandenv" => V::Str(expand_unset(&text(0))),
        _ => return None,
    }))
}

const ALNUM: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ASCII: &[u8] = b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

pub(super) fn fill(buf: &mut [u8]) {
    // The system generator fails only where the OS has none; sprig's `crypto/rand` would panic.
    if SystemRandom::new().fill(buf).is_err() {
        buf.fill(0);
    }
}

/// A uniform number below `n` (> 0), by rejection.
fn below(n: u64) -> u64 {
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let mut b = [0u8; 8];
        fill(&mut b);
        let x = u64::from_le_bytes(b);
        if x < zone {
            return x % n;
        }
    }
}

/// `count` characters drawn from `set` (none for a negative count, as goutils returns "").
fn random_from(count: i64, set: &[u8]) -> String {
    (0..count.max(0))
        .map(|_| set[below(set.len() as u64) as usize] as char)
        .collect()
}

fn uuidv4() -> String {
    let mut b = [0u8; 16];
    fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// xstrings' `Shuffle`: Fisher-Yates over the characters.
fn shuffle(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for i in (1..chars.len()).rev() {
        let j = below(i as u64 + 1) as usize;
        chars.swap(i, j);
    }
    chars.into_iter().collect()
}

/// Go's `bcrypt.GenerateFromPassword` at its default cost, 10.
fn bcrypt_hash(password: &str) -> String {
    match bcrypt::hash_with_result(password, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// The Master Password algorithm, as sprig has it (templates and character classes are the
/// algorithm's published ones).
fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let templates: &[&str] = match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return format!("cannot find password template {kind}"),
    };
    const SEED: &[u8] = b"com.lyndir.masterpassword";
    let with_len = |s: &str| {
        let mut b = SEED.to_vec();
        b.extend_from_slice(&(s.len() as u32).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
        b
    };
    let mut key = [0u8; 64];
    let params = match scrypt::Params::new(15, 8, 2, 64) {
        Ok(p) => p,
        Err(e) => return format!("failed to derive password: {e}"),
    };
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &with_len(user), &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut message = with_len(site);
    message.extend_from_slice(&counter.to_be_bytes());
    let seed = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key),
        &message,
    );
    let seed = seed.as_ref();
    let template = templates[seed[0] as usize % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars: &[u8] = match class {
                b'V' => b"AEIOU",
                b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
                b'v' => b"aeiou",
                b'c' => b"bcdfghjklmnpqrstvwxyz",
                b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
                b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
                b'n' => b"0123456789",
                b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
                _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
            };
            chars[seed[i + 1] as usize % chars.len()] as char
        })
        .collect()
}

/// `genPrivateKey`: a P-256 key as Go's `MarshalECPrivateKey` writes it (SEC 1, with the curve
/// and the public key), or an Ed25519 key as `MarshalPKCS8PrivateKey` writes it.
fn private_key(kind: &str) -> Result<String, String> {
    let rng = SystemRandom::new();
    match kind {
        "ecdsa" => {
            let alg = &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING;
            let doc = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
                .map_err(|e| e.to_string())?;
            let pair = ring::signature::EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng)
                .map_err(|e| e.to_string())?;
            let secret = after(doc.as_ref(), &[0x02, 0x01, 0x01, 0x04, 0x20], 32)?;
            let public = ring::signature::KeyPair::public_key(&pair).as_ref();
            let mut der = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
            der.extend_from_slice(secret);
            der.extend_from_slice(&[
                0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44,
                0x03, 0x42, 0x00,
            ]);
            der.extend_from_slice(public);
            Ok(pem("EC PRIVATE KEY", &der))
        }
        "ed25519" => {
            let doc =
                ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| e.to_string())?;
            let seed = after(doc.as_ref(), &[0x04, 0x22, 0x04, 0x20], 32)?;
            let mut der = vec![
                0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20,
            ];
            der.extend_from_slice(seed);
            Ok(pem("PRIVATE KEY", &der))
        }
        "" | "rsa" => super::sprig_certs::rsa_private_key(),
        "dsa" => Err(DSA.to_string()),
        other => Ok(format!("Unknown type {other}")),
    }
}

/// The `n` bytes after the first occurrence of `marker` in a DER document.
fn after<'a>(doc: &'a [u8], marker: &[u8], n: usize) -> Result<&'a [u8], String> {
    let at = doc
        .windows(marker.len())
        .position(|w| w == marker)
        .ok_or("unexpected key document")?;
    doc.get(at + marker.len()..at + marker.len() + n)
        .ok_or_else(|| "unexpected key document".to_string())
}

pub(super) fn pem(label: &str, der: &[u8]) -> String {
    let body = encoding::b64enc(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The password, zero-padded or cut to 32 bytes: sprig's AES-256 key.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let p = password.as_bytes();
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    key
}

fn encrypt_aes(password: &str, plaintext: &str) -> String {
    use cbc::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    if plaintext.is_empty() {
        return String::new();
    }
    let mut iv = [0u8; 16];
    fill(&mut iv);
    let enc = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into());
    let mut out = iv.to_vec();
    out.extend(enc.encrypt_padded_vec_mut::<Pkcs7>(plaintext.as_bytes()));
    encoding::b64enc(&out)
}

fn decrypt_aes(password: &str, data: &str) -> Result<String, String> {
    use cbc::cipher::{BlockDecryptMut, KeyIvInit, block_padding::NoPadding};
    if data.is_empty() {
        return Ok(String::new());
    }
    let bytes =
        encoding::b64dec(data).map_err(|at| format!("illegal base64 data at input byte {at}"))?;
    if bytes.len() < 32 || bytes.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let (iv, body) = bytes.split_at(16);
    let dec = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), iv.into());
    let plain = dec
        .decrypt_padded_vec_mut::<NoPadding>(body)
        .map_err(|e| e.to_string())?;
    // sprig drops as many bytes as the last one says, unchecked; a bad key gives garbage.
    let cut = plain
        .len()
        .saturating_sub(*plain.last().unwrap_or(&0) as usize);
    Ok(String::from_utf8_lossy(&plain[..cut]).into_owned())
}

/// Go's `os.ExpandEnv` with every variable unset: `$NAME` and `${NAME}` become empty.
fn expand_unset(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => rest = &braced[end + 1..],
                // Go eats a "${" that is never closed, and goes on after it.
                None => rest = braced,
            }
            continue;
        }
        let n = if after.starts_with(|c: char| "*#$@!?-".contains(c) || c.is_ascii_digit()) {
            1
        } else {
            after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len())
        };
        if n == 0 {
            out.push('$');
        }
        rest = &after[n..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call1(name: &str, args: &[V]) -> String {
        match call(name, args) {
            Some(Ok(V::Str(s))) => s,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn s(x: &str) -> V {
        V::Str(x.into())
    }

    #[test]
    fn random_functions_have_sprigs_forms() {
        assert_eq!(call1("randAlpha", &[V::int(12)]).len(), 12);
        assert!(
            call1("randNumeric", &[V::int(6)])
                .bytes()
                .all(|c| c.is_ascii_digit())
        );
        assert_eq!(call1("randAscii", &[V::int(-1)]), "");
        assert_eq!(call1("randBytes", &[V::int(3)]).len(), 4);
        let id = call1("uuidv4", &[]);
        assert_eq!((id.len(), &id[14..15]), (36, "4"));
        let mut shuffled: Vec<char> = call1("shuffle", &[s("abcd")]).chars().collect();
        shuffled.sort();
        assert_eq!(shuffled, ['a', 'b', 'c', 'd']);
        assert!(call("randInt", &[V::int(3), V::int(3)]).unwrap().is_err());
    }

    #[test]
    fn hashes_and_ciphers_read_back() {
        let hash = call1("bcrypt", &[s("x")]);
        assert!(hash.starts_with("$2a$10$") && bcrypt::verify("x", &hash).unwrap());
        assert_eq!(
            call1("htpasswd", &[s("a:b"), s("p")]),
            "invalid username: a:b"
        );
        let secret = call1("encryptAES", &[s("key"), s("hello")]);
        assert_eq!(call1("decryptAES", &[s("key"), s(&secret)]), "hello");
        assert!(
            call1("genPrivateKey", &[s("ecdsa")])
                .starts_with("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI")
        );
        assert!(
            call1("genPrivateKey", &[s("ed25519")])
                .starts_with("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI")
        );
        assert!(call("genPrivateKey", &[s("dsa")]).unwrap().is_err());
        assert_eq!(call1("expandenv", &[s("a$HOME-${X}b$")]), "a-b$");
    }
}
