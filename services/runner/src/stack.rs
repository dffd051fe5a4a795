//! The install stack, reported: a runner that runs in one (`--stack-name`) reads its status and
//! outputs in the customer's account with the host's own identity, and sends them to the
//! control plane over its connection (`StackReport` on its install's subject), at start and
//! then every minute, so a stack update (break glass turned on, a parameter changed) shows up.

use std::time::Duration;

use ferry_protocol::codec::encode;
use ferry_protocol::messages::StackReport;
use ferry_protocol::subjects;
use tracing::{debug, info, warn};

/// Where the install stack is.
#[derive(Debug, Clone)]
pub struct StackSource {
    pub name: String,
    pub region: String,
    pub endpoint: Option<String>,
}

const EVERY: Duration = Duration::from_secs(60);

/// Reads and reports the stack until the runner stops; nothing when it runs in none.
pub async fn report(
    client: async_nats::Client,
    org: String,
    install: String,
    source: Option<StackSource>,
) {
    let Some(source) = source else {
        return;
    };
    let mut failing = false;
    loop {
        match ferry_aws::stack::describe_stack(
            &source.region,
            source.endpoint.as_deref(),
            &source.name,
        )
        .await
        {
            Ok(stack) => {
                if failing {
                    info!(stack = %source.name, "the install stack can be read again");
                    failing = false;
                }
                let report = StackReport {
                    stack_id: stack.id,
                    status: stack.status,
                    outputs: stack.outputs,
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
        tokio::time::sleep(EVERY).await;
    }
}
