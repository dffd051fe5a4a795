//! The values of the app's `kubernetes_sync` secrets, read in the install's account with the
//! runner host's identity (its stack lets it read the install's secrets) for the Kubernetes
//! component's apply that copies them into the cluster. They go into that job's plugin input
//! only, and its log masks them.

use ferry_protocol::messages::SecretSync;

use crate::plugin::SyncedSecret;
use crate::stack::Account;

/// What the job syncs: each target with its secret's value. A runner in no install stack has
/// no secrets to read (`Ok(None)`: the job says so); a secret not set in the account is
/// skipped unless it is required (then the job fails, saying which).
pub async fn values(
    account: &Account,
    syncs: &[SecretSync],
) -> Result<Option<(Vec<SyncedSecret>, Vec<String>)>, String> {
    let Some(source) = account.source() else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for s in syncs {
        let value =
            ferry_aws::secrets::value(&source.region, source.endpoint.as_deref(), &s.source)
                .await
                .map_err(|e| format!("reading secret `{}`: {e}", s.secret))?;
        match value {
            Some(value) => out.push(SyncedSecret {
                namespace: s.namespace.clone(),
                name: s.name.clone(),
                key: s.key.clone(),
                value,
                base64: s.base64,
            }),
            None if s.required => {
                return Err(format!(
                    "required secret `{}` is not set in the install's account (`{}`)",
                    s.secret, s.source
                ));
            }
            None => skipped.push(s.secret.clone()),
        }
    }
    Ok(Some((out, skipped)))
}
