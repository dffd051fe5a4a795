//! Results coming back from runners on `JOB_EVENTS`.

use ferry_model::{self as m};
use ferry_protocol::messages::{EventBody, JobEvent, JobResult, Offloaded, Outcome};
use ferry_protocol::resources::{RESULTS, objects};
use ferry_protocol::subjects;
use ferry_store::{Handled, StoreError, Versioned};
use tracing::{info, warn};

use crate::control::handled;
use crate::work::Work;
use crate::{Scheduler, SchedulerError};

/// The largest result an install may send in chunks: a plan's JSON of a big Terraform module is
/// tens of megabytes; an install must not make the scheduler hold a gigabyte.
const MAX_RESULT_BYTES: usize = 64 << 20;

impl Scheduler {
    pub(crate) async fn on_job_event(&self, subject: &str, ev: JobEvent) -> Handled {
        let Some((org, install)) = subjects::org_install(subject) else {
            return Handled::Reject(format!("unexpected subject {subject}"));
        };
        let EventBody::Finished(result) = ev.body;
        let work = self
            .record_result(org, install, &ev.job_id, &ev.execution_id, *result)
            .await;
        handled(match work {
            Ok(work) => self.execute(work).await,
            Err(e) => Err(e),
        })
    }

    /// Records a result that install `install` reported for execution `execution_id` of
    /// `job_id` (checked first: another install's job, or an execution not the current one,
    /// stores nothing); the work that carries it into its install and workflow.
    pub(crate) async fn record_result(
        &self,
        org: &str,
        install: &str,
        job_id: &str,
        execution_id: &str,
        result: JobResult,
    ) -> Result<Vec<Work>, SchedulerError> {
        let Some((result, offloaded, read)) = self
            .checked_result(org, install, job_id, execution_id, result)
            .await?
        else {
            return Ok(vec![]);
        };
        let finished = finished_of(result, self.client.server_info().max_payload / 4);
        let now = m::Timestamp::now();
        // From the record just read (a change since, a renewal, costs a lost swap).
        let updated = self
            .store
            .repo::<m::Job>()
            .modify_from(Some(read), org, job_id, |j| {
                j.finish(install, execution_id, finished.clone(), now)
            })
            .await;
        let job = match updated {
            Ok(Ok(j)) => j.value,
            Ok(Err(refused)) => {
                warn!(org, install, job = job_id, "{refused}");
                return Ok(vec![]);
            }
            Err(StoreError::NotFound { .. }) => {
                warn!(org, install, job = job_id, "result for an unknown job");
                return Ok(vec![]);
            }
            Err(e) => return Err(e.into()),
        };
        self.count_finished(&job);
        if let Some(e) = job.executions.last() {
            self.runners.ended(org, install, &e.runner, job_id);
        }
        if offloaded {
            self.store
                .purge_subject(
                    RESULTS.name,
                    &subjects::result_chunks(org, install, execution_id),
                )
                .await?;
        }
        self.apply_job_result(&job).await
    }

    /// The result to record, judged by the install in the subject before anything is stored: a
    /// result for another install's job, or from an execution that is not the job's current one,
    /// stores nothing (no plan under the job's key, no outputs, no chunks read). With it, whether
    /// it came in chunks (read here, their subject purged once it is recorded).
    async fn checked_result(
        &self,
        org: &str,
        install: &str,
        job_id: &str,
        execution_id: &str,
        result: JobResult,
    ) -> Result<Option<(JobResult, bool, Versioned<m::Job>)>, SchedulerError> {
        let Some(read) = self.store.repo::<m::Job>().get(org, job_id).await? else {
            warn!(org, install, job = job_id, "result for an unknown job");
            return Ok(None);
        };
        let accepted = read.value.accepts_result(install, execution_id);
        let fresh = match accepted {
            Ok(fresh) => fresh,
            Err(refused) => {
                warn!(org, install, job = job_id, "{refused}");
                ferry_telemetry::metrics()
                    .messages_rejected
                    .get_or_create(&ferry_telemetry::consumer_label("results-refused"))
                    .inc();
                return Ok(None);
            }
        };
        let offloaded = result.offloaded.clone().filter(|_| fresh);
        let result = match &offloaded {
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
        Ok(Some((result, offloaded.is_some(), read)))
    }

    fn count_finished(&self, job: &m::Job) {
        let outcome = job.status.name();
        ferry_telemetry::metrics()
            .jobs_finished
            .get_or_create(&ferry_telemetry::OutcomeLabels {
                kind: format!("{:?}", job.kind).to_lowercase(),
                outcome: outcome.into(),
            })
            .inc();
        info!(org = %job.org, install = %job.install, workflow = %job.workflow_id, job = %job.id, component = %job.component, kind = ?job.kind, status = outcome, "job finished");
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
            ran_as: None,
            timing: Default::default(),
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
}

/// How the runner says the job ended, as the job record keeps it; outputs over `most` bytes (or
/// not a JSON object) fail it (see [`checked_outputs`]).
fn finished_of(mut result: JobResult, most: usize) -> m::Finished {
    let outputs = checked_outputs(&mut result, most);
    m::Finished {
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
        ran_as: result.ran_as,
        runner: m::RunnerPoints {
            offer_seen_us: result.timing.offer_seen_us,
            claim_sent_us: result.timing.claim_sent_us,
            granted_us: result.timing.granted_us,
            prepared_us: result.timing.prepared_us,
            identity_us: result.timing.identity_us,
            spawned_us: result.timing.spawned_us,
            exited_us: result.timing.exited_us,
        },
        grant_written_us: result.timing.grant_written_us,
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
