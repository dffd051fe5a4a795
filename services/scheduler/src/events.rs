//! Results coming back from runners on `JOB_EVENTS`.

use ferry_model::{self as m, StepOutcome};
use ferry_protocol::messages::{EventBody, JobEvent, JobResult, Offloaded, Outcome};
use ferry_protocol::resources::{RESULTS, objects};
use ferry_protocol::subjects;
use ferry_store::{Handled, StoreError};
use tracing::{debug, info, warn};

use crate::{Scheduler, SchedulerError, handled};

/// The largest result an install may send in chunks: a plan's JSON of a big Terraform module is
/// tens of megabytes; an install must not make the scheduler hold a gigabyte.
const MAX_RESULT_BYTES: usize = 64 << 20;

impl Scheduler {
    pub(crate) async fn on_job_event(&self, subject: &str, ev: JobEvent) -> Handled {
        let Some((org, install)) = subjects::org_install(subject) else {
            return Handled::Reject(format!("unexpected subject {subject}"));
        };
        match ev.body {
            EventBody::Started => {
                debug!(org, install, job = %ev.job_id, "job started");
                Handled::Done
            }
            EventBody::Finished(result) => handled(
                self.job_finished(org, install, &ev.job_id, &ev.execution_id, *result)
                    .await,
            ),
        }
    }

    async fn job_finished(
        &self,
        org: &str,
        install: &str,
        job_id: &str,
        execution_id: &str,
        result: JobResult,
    ) -> Result<(), SchedulerError> {
        // Judged by the install in the subject before anything is stored: a result for another
        // install's job, or from an execution that is not the job's current one, stores nothing
        // (no plan under the job's key, no outputs, no chunks read).
        let accepted = match self.store.repo::<m::Job>().get(org, job_id).await? {
            None => {
                warn!(org, install, job = job_id, "result for an unknown job");
                return Ok(());
            }
            Some(j) => j.value.accepts_result(install, execution_id),
        };
        let fresh = match accepted {
            Ok(fresh) => fresh,
            Err(refused) => {
                warn!(org, install, job = job_id, "{refused}");
                ferry_telemetry::metrics()
                    .messages_rejected
                    .get_or_create(&ferry_telemetry::consumer_label("results-refused"))
                    .inc();
                return Ok(());
            }
        };
        let offloaded = result.offloaded.clone().filter(|_| fresh);
        let mut result = match &offloaded {
            Some(o) => self.offloaded_result(org, install, execution_id, o).await?,
            None => result,
        };
        // The plan file stays in the install; its changes (secrets masked) are kept for review,
        // stored before the job record says "planned" (and only for a result that will be
        // recorded: a repeated one keeps the first's).
        if let Some(plan) = result
            .plan
            .as_ref()
            .filter(|p| fresh && !p.diff_json.is_empty())
        {
            self.store
                .put_object(
                    objects::PLANS,
                    &objects::plan_json(org, job_id),
                    &plan.diff_json,
                )
                .await?;
        }
        let outputs = checked_outputs(&mut result, self.client.server_info().max_payload / 4);
        let finished = m::Finished {
            status: match result.status {
                Outcome::Succeeded => m::ExecutionStatus::Finished,
                Outcome::Failed => m::ExecutionStatus::Failed,
                Outcome::Cancelled => m::ExecutionStatus::Cancelled,
                Outcome::TimedOut => m::ExecutionStatus::TimedOut,
            },
            outputs,
            sensitive_outputs: result.sensitive_outputs,
            error: result.error,
            plan: result.plan.map(|p| m::PlanMade {
                digest: p.digest,
                changes: p.changes,
                summary: p.summary,
            }),
        };
        let now = m::now();
        let updated = self
            .store
            .repo::<m::Job>()
            .modify(org, job_id, |j| {
                j.finish(install, execution_id, finished.clone(), &now)
            })
            .await;
        let job = match updated {
            Ok(Ok(j)) => j,
            Ok(Err(refused)) => {
                warn!(org, install, job = job_id, "{refused}");
                return Ok(());
            }
            Err(StoreError::NotFound { .. }) => {
                warn!(org, install, job = job_id, "result for an unknown job");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let outcome = job.status.name().to_string();
        ferry_telemetry::metrics()
            .jobs_finished
            .get_or_create(&ferry_telemetry::OutcomeLabels {
                kind: format!("{:?}", job.kind).to_lowercase(),
                outcome: outcome.clone(),
            })
            .inc();
        info!(org, install, workflow = %job.workflow_id, job = job_id, component = %job.component, kind = ?job.kind, status = %outcome, "job finished");
        let _ = self
            .store
            .bus()
            .audit(&m::AuditEvent {
                org: org.into(),
                at: m::now(),
                actor: format!("runner:{install}"),
                action: format!("job.{outcome}"),
                target: job_id.into(),
                // The error and the plan's summary say what policies decided, among the rest.
                detail: serde_json::json!({
                    "kind": job.kind,
                    "component": job.component,
                    "workflow": job.workflow_id,
                    "error": job.error,
                    "plan_summary": job.plan_summary,
                }),
            })
            .await;
        if offloaded.is_some() {
            self.store
                .purge_subject(
                    RESULTS.name,
                    &subjects::result_chunks(org, install, execution_id),
                )
                .await?;
        }
        self.apply_job_result(&job).await
    }

    /// The result a runner sent in chunks because it did not fit in a message, at most
    /// [`MAX_RESULT_BYTES`]. Only the subject derived from the reporting install and execution is
    /// read: a runner cannot point at another's result.
    async fn offloaded_result(
        &self,
        org: &str,
        install: &str,
        execution_id: &str,
        o: &Offloaded,
    ) -> Result<JobResult, SchedulerError> {
        let failed = |why: String| JobResult {
            status: Outcome::Failed,
            outputs_json: "{}".into(),
            plan: None,
            error: Some(why),
            sensitive_outputs: vec![],
            offloaded: None,
        };
        let subject = subjects::result_chunks(org, install, execution_id);
        let Some(bytes) = self
            .store
            .read_chunks(RESULTS.name, &subject, o.chunks, MAX_RESULT_BYTES)
            .await?
        else {
            return Ok(failed(format!(
                "the result's {} chunks are not all there, or are more than {} MiB",
                o.chunks,
                MAX_RESULT_BYTES >> 20
            )));
        };
        // Hashing and decoding tens of megabytes is work for the blocking pool, not a worker.
        let digest = o.digest.clone();
        let checked = tokio::task::spawn_blocking(move || {
            if ferry_artifacts::sha256_digest(&bytes) != digest {
                return failed("the result's chunks do not match its digest".into());
            }
            match ferry_protocol::decode::<JobResult>(&bytes) {
                Ok(r) if r.offloaded.is_none() => r,
                Ok(_) => failed("the offloaded result points further".into()),
                Err(e) => failed(format!("the offloaded result is unreadable: {e}")),
            }
        })
        .await;
        Ok(checked.unwrap_or_else(|e| failed(format!("reading the offloaded result: {e}"))))
    }

    /// Carries a finished job's result into the install and the workflow. Idempotent.
    pub(crate) async fn apply_job_result(&self, job: &m::Job) -> Result<(), SchedulerError> {
        let (org, wf_id) = (job.org.as_str(), job.workflow_id.as_str());
        if job.kind == m::JobKind::Plan && self.is_drift_check(org, wf_id).await? {
            let outcome = self.drift_checked(job).await?;
            return self
                .complete_step(org, wf_id, job.step, outcome, Some("runner".into()))
                .await;
        }
        if job.status != m::JobStatus::Finished {
            if matches!(job.kind, m::JobKind::Plan | m::JobKind::Apply) {
                self.update_component(job, |c| c.status = m::ComponentStatus::Failed)
                    .await?;
            }
            if job.kind == m::JobKind::Action {
                self.action_step_failed(job).await?;
            }
            let status = job.status.name();
            let msg = job.error.clone().unwrap_or_else(|| format!("job {status}"));
            let outcome = if matches!(
                job.status,
                m::JobStatus::Cancelled | m::JobStatus::NotAttempted
            ) {
                StepOutcome::Cancelled(msg)
            } else {
                StepOutcome::Failed(msg)
            };
            return self
                .complete_step(org, wf_id, job.step, outcome, Some("runner".into()))
                .await;
        }
        let outcome = match job.kind {
            m::JobKind::Sync => StepOutcome::Succeeded("artifact synced to the install".into()),
            m::JobKind::Action => self.action_step_finished(job).await?,
            m::JobKind::Plan => {
                let summary = job.plan_summary.clone().unwrap_or_default();
                if job.plan_changes.unwrap_or(true) {
                    StepOutcome::Succeeded(summary)
                } else {
                    self.update_component(job, |c| c.status = m::ComponentStatus::Active)
                        .await?;
                    StepOutcome::NoChanges(summary)
                }
            }
            m::JobKind::Teardown => {
                self.store
                    .repo::<m::Install>()
                    .modify(&job.org, &job.install, |i| {
                        if job.component == m::SANDBOX {
                            i.sandbox = Default::default();
                        } else {
                            i.components.remove(&job.component);
                        }
                        i.updated_at = m::now();
                        Ok::<bool, ()>(true)
                    })
                    .await?
                    .ok();
                StepOutcome::Succeeded("torn down".into())
            }
            m::JobKind::Apply => {
                let outputs = job.outputs.clone();
                let digest = job.plan_digest.clone();
                self.update_component(job, |c| {
                    c.status = m::ComponentStatus::Active;
                    // Applied: whatever drifted is as the config says again.
                    c.drift = None;
                    c.outputs = outputs.clone();
                    c.sensitive_outputs = job.sensitive_outputs.clone();
                    if digest.is_some() {
                        c.applied_digest = digest.clone();
                    }
                })
                .await?;
                StepOutcome::Succeeded("applied".into())
            }
        };
        self.complete_step(org, wf_id, job.step, outcome, Some("runner".into()))
            .await
    }

    async fn is_drift_check(&self, org: &str, workflow: &str) -> Result<bool, SchedulerError> {
        Ok(self
            .store
            .repo::<m::Workflow>()
            .get(org, workflow)
            .await?
            .is_some_and(|w| w.value.kind == m::WorkflowKind::DriftCheck))
    }

    async fn update_component(
        &self,
        job: &m::Job,
        f: impl Fn(&mut m::ComponentState),
    ) -> Result<(), SchedulerError> {
        self.store
            .repo::<m::Install>()
            .modify(&job.org, &job.install, |i| {
                let c = i.component_mut(&job.component);
                let before = c.clone();
                f(c);
                c.last_job = Some(job.id.clone());
                if *c == before {
                    return Ok::<bool, ()>(false);
                }
                c.updated_at = Some(m::now());
                i.updated_at = m::now();
                Ok(true)
            })
            .await?
            // The closure never refuses: nothing to report.
            .ok();
        Ok(())
    }
}

/// The result's outputs, or a failed result saying why there are none: outputs live in the job's
/// and the install's records, a record must fit in a message, and the install's holds every
/// component's, so a component gets at most `most` bytes of them.
fn checked_outputs(result: &mut JobResult, most: usize) -> m::Outputs {
    let mut fail = |why: String| {
        if result.status == Outcome::Succeeded {
            result.status = Outcome::Failed;
            result.error = Some(why);
        }
        m::Outputs::default()
    };
    if result.outputs_json.len() > most {
        return fail(format!(
            "the component's outputs are {} bytes, more than the {most} an install record can \
             hold: put large values in the install's own storage and output their location",
            result.outputs_json.len()
        ));
    }
    match serde_json::from_str(&result.outputs_json) {
        Ok(o) => o,
        Err(e) => fail(format!("outputs are not a JSON object: {e}")),
    }
}
