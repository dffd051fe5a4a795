//! Job claims: a runner asks to run an offered job; exactly one ask per job is granted, by a
//! compare-and-swap on the job record. The claim is also where a runner's reach is checked: the
//! subject it asked on names its install, and only that install's jobs are granted.

use ferry_model as m;
use ferry_protocol::messages::{ClaimReply, ClaimRequest};
use ferry_protocol::{decode, encode, subjects};
use futures_util::StreamExt;
use tracing::{info, warn};

use crate::{Scheduler, SchedulerError};

impl Scheduler {
    pub(crate) async fn serve_claims(self) -> Result<(), SchedulerError> {
        let mut sub = self
            .client
            .queue_subscribe(subjects::CLAIM_ALL, "scheduler".into())
            .await
            .map_err(|e| SchedulerError::Nats(e.to_string()))?;
        while let Some(msg) = sub.next().await {
            let s = self.clone();
            tokio::spawn(async move {
                let Some(reply) = msg.reply.clone() else {
                    return;
                };
                let answer = s.claim(&msg.subject, &msg.payload).await;
                if let Err(e) = s.client.publish(reply, encode(&answer).into()).await {
                    warn!(error = %e, "could not answer a claim");
                }
            });
        }
        Err(SchedulerError::Nats("claim subscription ended".into()))
    }

    async fn claim(&self, subject: &str, payload: &[u8]) -> ClaimReply {
        let refuse = |reason: String| ClaimReply::Refused { reason };
        let req = match decode::<ClaimRequest>(payload) {
            Ok(r) => r,
            Err(e) => {
                ferry_telemetry::metrics()
                    .messages_rejected
                    .get_or_create(&ferry_telemetry::consumer_label("claims"))
                    .inc();
                return refuse(e.to_string());
            }
        };
        let Some((org, install)) = subjects::org_install(subject) else {
            return refuse("bad subject".into());
        };
        let mut granted = None;
        let r = self
            .store
            .repo::<m::Job>()
            .modify(org, &req.job_id, |j| {
                if j.install != install {
                    return Err(format!(
                        "job {} is not a job of install {install}",
                        req.job_id
                    ));
                }
                if j.status != m::JobStatus::Queued {
                    return Err(format!("job {} is {:?}", req.job_id, j.status));
                }
                if j.executions.len() as u32 >= j.max_executions {
                    return Err(format!(
                        "job {} has used all {} executions",
                        req.job_id, j.max_executions
                    ));
                }
                let attempt = j.executions.len() as u32 + 1;
                let id = format!("{}-{attempt}", j.id);
                j.executions.push(m::Execution {
                    id: id.clone(),
                    attempt,
                    runner: req.runner_id.clone(),
                    status: m::ExecutionStatus::Running,
                    started_at: m::now(),
                    finished_at: None,
                });
                j.status = m::JobStatus::Running;
                granted = Some((id, attempt));
                Ok(true)
            })
            .await;
        match r {
            Ok(Ok(_)) => match granted {
                Some((execution_id, attempt)) => {
                    info!(org, install, job = %req.job_id, execution = %execution_id, runner = %req.runner_id, "job claimed");
                    ClaimReply::Granted {
                        execution_id,
                        attempt,
                    }
                }
                None => refuse("not granted".into()),
            },
            Ok(Err(reason)) => refuse(reason),
            Err(e) => refuse(e.to_string()),
        }
    }
}
