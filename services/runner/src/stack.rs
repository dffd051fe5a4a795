//! The install stack, reported: a runner that runs in one (`--stack-name`) reads its status and
//! outputs in the customer's account with the host's own identity, and sends them to the
//! control plane over its connection (`StackReport` on its install's subject), at start and
//! then every minute, so a stack update (break glass turned on, a parameter changed) shows up.
//! With it, the status of the install's secrets (which exist, their ARN, length and last
//! change): their values never leave the account.
//! Its jobs read the same outputs for the ARNs of the roles they run as (`roles.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_aws::stack::{StackError, StackInfo};

use ferry_protocol::codec::encode;
use ferry_protocol::messages::{SecretStatus, StackReport};
use ferry_protocol::subjects;
use tracing::{debug, info, warn};

/// Where the install stack is.
#[derive(Debug, Clone)]
pub struct StackSource {
    pub name: String,
    pub region: String,
    pub endpoint: Option<String>,
    /// How often it is read again (`--stack-interval-secs`).
    pub every: Duration,
}

/// The install stack this runner runs in, as it last read it; shared by the report loop and the
/// jobs. A runner in no stack has an `Account` without a source.
#[derive(Debug, Default)]
pub struct Account {
    source: Option<StackSource>,
    latest: Mutex<Option<StackInfo>>,
}

impl Account {
    pub fn new(source: Option<StackSource>) -> Account {
        Account {
            source,
            latest: Mutex::new(None),
        }
    }

    pub fn source(&self) -> Option<&StackSource> {
        self.source.as_ref()
    }

    /// Reads the stack now and keeps what it read.
    async fn read(&self, source: &StackSource) -> Result<StackInfo, StackError> {
        let stack = ferry_aws::stack::describe_stack(
            &source.region,
            source.endpoint.as_deref(),
            &source.name,
        )
        .await?;
        if let Ok(mut latest) = self.latest.lock() {
            *latest = Some(stack.clone());
        }
        Ok(stack)
    }

    /// Whether the customer paused the runner through the stack (its `RunnerPaused` parameter),
    /// as last read; false before any reading, and in no stack.
    pub fn paused_by_stack(&self) -> bool {
        self.latest.lock().ok().is_some_and(|l| {
            l.as_ref().is_some_and(|s| {
                s.parameters.iter().any(|(k, v)| {
                    k == ferry_protocol::messages::RUNNER_PAUSED_PARAMETER && v == "true"
                })
            })
        })
    }

    /// Reads the stack again now, when the runner is in one; errors are logged only (the last
    /// reading stands).
    pub async fn refresh(&self) {
        if let Some(source) = &self.source
            && let Err(e) = self.read(source).await
        {
            debug!(error = %e, "the install stack could not be read again");
        }
    }

    /// The stack's output `key` (its Nuon key), from the last reading or, before any, from one
    /// made now; `None` when the stack has no such output.
    pub async fn output(&self, source: &StackSource, key: &str) -> Result<Option<String>, String> {
        let known = self.latest.lock().ok().and_then(|l| l.clone());
        let stack = match known {
            Some(s) => s,
            None => self
                .read(source)
                .await
                .map_err(|e| format!("cannot read the install stack: {e}"))?,
        };
        Ok(stack
            .outputs
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v))
    }
}

/// Reads and reports the stack until the runner stops; nothing when it runs in none.
pub async fn report(
    client: async_nats::Client,
    org: String,
    install: String,
    account: Arc<Account>,
) {
    let Some(source) = account.source() else {
        return;
    };
    let mut failing = false;
    loop {
        match account.read(source).await {
            Ok(stack) => {
                if failing {
                    info!(stack = %source.name, "the install stack can be read again");
                    failing = false;
                }
                let report = StackReport {
                    stack_id: stack.id,
                    status: stack.status,
                    outputs: stack.outputs,
                    secrets: secrets(source, &install).await,
                };
                let sent = client
                    .publish(subjects::stack(&org, &install), encode(&report).into())
                    .await;
                if let Err(e) = sent {
                    debug!(error = %e, "the stack report was not sent; the next one will be");
                }
            }
            // Once, then quietly: a stack that cannot be read stays so for a while.
            Err(e) if !failing => {
                warn!(stack = %source.name, error = %e, "cannot read the install stack");
                failing = true;
            }
            Err(e) => debug!(error = %e, "the install stack still cannot be read"),
        }
        tokio::time::sleep(source.every).await;
    }
}

/// The install's secrets (`INSTALL/NAME` in Secrets Manager, as the stack names them): their
/// status, their values left in the account; `None` if they cannot be read now.
async fn secrets(source: &StackSource, install: &str) -> Option<Vec<SecretStatus>> {
    let prefix = format!("{install}/");
    match ferry_aws::secrets::list(&source.region, source.endpoint.as_deref(), &prefix).await {
        Ok(all) => Some(
            all.into_iter()
                .map(|s| SecretStatus {
                    name: s.name,
                    arn: s.arn,
                    last_changed: s.last_changed,
                    length: s.length,
                })
                .collect(),
        ),
        Err(e) => {
            debug!(error = %e, "the install's secrets cannot be read now");
            None
        }
    }
}
