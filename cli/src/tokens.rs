//! API tokens on the CLI side: which token a command sends (`--token` / `FERRY_TOKEN`, else the
//! one `ferry login` saved), `ferry login`, and `ferry tokens create | list | revoke`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use ferry_model::api::{NewToken, TokenInfo};
use ferry_model::{Role, TokenScope, ops};

use crate::render::{self, MAIN, Output};
use ferry_client::Client as Api;

/// Where `ferry login` keeps the token: `$XDG_CONFIG_HOME/ferry/token`, else
/// `~/.config/ferry/token`.
pub fn login_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("ferry").join("token"))
}

/// Where `ferry login` keeps the API's URL, beside the token.
fn api_file() -> Option<PathBuf> {
    Some(login_file()?.with_file_name("api"))
}

/// What `--api` and `FERRY_API` default to when neither is given.
pub const DEFAULT_API: &str = "http://127.0.0.1:4600";

/// The API's URL: the one given (`--api`, `FERRY_API`), else the one `ferry login` saved, else
/// [`DEFAULT_API`].
pub fn resolve_api(given: Option<String>) -> String {
    given
        .filter(|a| !a.is_empty())
        .or_else(|| {
            let text = std::fs::read_to_string(api_file()?).ok()?;
            Some(text.trim().to_string()).filter(|a| !a.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_API.to_string())
}

/// The token to send: the one given, else the saved one, else none (the API answers 401 and
/// says how to log in).
pub fn resolve(given: Option<String>) -> Option<String> {
    given.filter(|t| !t.is_empty()).or_else(|| {
        let text = std::fs::read_to_string(login_file()?).ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    })
}

/// Checks a token against the API, then saves it (mode 0600) and the API's URL for later
/// commands.
pub async fn login(api_base: &str, token: &str) -> Result<i32> {
    let api = Api::new(api_base, Some(token))?;
    let api_base = api.base().to_string();
    api.call::<ops::ListInstalls>(&[], &Default::default(), &())
        .await
        .context("the API refused the token")?;
    let path = login_file().context("neither XDG_CONFIG_HOME nor HOME is set")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_private(&path, token).with_context(|| format!("writing {}", path.display()))?;
    let api_path = path.with_file_name("api");
    write_private(&api_path, &api_base)
        .with_context(|| format!("writing {}", api_path.display()))?;
    println!(
        "logged in to {api_base}; the token and the API's URL are saved in {}",
        path.parent().unwrap_or(&path).display()
    );
    Ok(0)
}

fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")
}

/// `ferry tokens create`; `reach`: the `--install` names and `--label` pairs given.
pub async fn create(
    api: &Api,
    name: &str,
    role: &str,
    reach: (Vec<String>, Vec<String>),
    json_out: bool,
) -> Result<i32> {
    let role: Role =
        serde_json::from_value(serde_json::Value::String(role.to_string())).map_err(|_| {
            anyhow::anyhow!("--role {role}: a role is viewer, operator, admin or customer")
        })?;
    let (installs, labels) = reach;
    let mut scope = TokenScope {
        installs: installs.into_iter().collect(),
        ..Default::default()
    };
    for l in &labels {
        let pairs =
            ferry_model::parse_labels(l).map_err(|e| anyhow::anyhow!("--label {l}: {e}"))?;
        scope.labels.extend(pairs);
    }
    // The API refuses the same; saying it here names the flags.
    if let Some(why) = scope.refused_for(role) {
        anyhow::bail!("{why}");
    }
    let body = NewToken {
        name: name.to_string(),
        role,
        scope,
    };
    let r = api.call::<ops::CreateToken>(&[], &(), &body).await?;
    if json_out {
        crate::commands::print_json(&r)?;
    } else {
        println!("{}", r.token);
        eprintln!(
            "{} token `{name}` created, reaching {}: it is shown only now",
            role.name(),
            r.info.scope.describe()
        );
    }
    Ok(0)
}

pub async fn list(api: &Api, out: Output) -> Result<i32> {
    let list = api.run::<ops::ListTokens>(&[]).await?;
    if out == Output::Json {
        crate::commands::print_json(&list)?;
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                t.name.clone(),
                t.role.name().to_string(),
                t.scope.describe(),
                t.created_at.clone(),
                t.revoked_at.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let columns = [
        ("ID", MAIN),
        ("NAME", MAIN),
        ("ROLE", MAIN),
        ("REACHES", MAIN),
        ("CREATED", MAIN),
        ("REVOKED", MAIN),
    ];
    println!("{}", render::listing(out, &columns, &rows));
    Ok(0)
}

/// Revokes the token with id or name `which` (a name must be one token's, not revoked yet).
pub async fn revoke(api: &Api, which: &str) -> Result<i32> {
    let list = api.run::<ops::ListTokens>(&[]).await?;
    let by_id = list.iter().find(|t| t.id == which);
    let by_name: Vec<&TokenInfo> = list
        .iter()
        .filter(|t| t.name == which && t.revoked_at.is_none())
        .collect();
    let token: &TokenInfo = match (by_id, by_name.as_slice()) {
        (Some(t), _) => t,
        (None, [t]) => t,
        (None, []) => {
            anyhow::bail!("no token has the id or name `{which}` (see `ferry tokens list`)")
        }
        (None, _) => anyhow::bail!(
            "{} tokens are named `{which}`: revoke one by its id (see `ferry tokens list`)",
            by_name.len()
        ),
    };
    let id = &token.id;
    api.run::<ops::RevokeToken>(&[id]).await?;
    println!("token {} ({id}) revoked", token.name);
    Ok(0)
}
