//! The audit records the scheduler writes, each made from the record it is about.
//!
//! An audit record's time is taken from that record (a job's end, a workflow's end, a scheduled
//! tick), never from the clock when it is written: the bus de-duplicates by action, target and
//! time, so a record written again after a failure or a crash (the scheduler retries until the
//! stream takes it) is kept once.

use serde_json::json;

use crate::{AuditEvent, BreakGlassGrant, Job, Release, ReleaseStatus, Workflow, WorkflowStatus};

/// The scheduler's own name as an actor.
pub const SCHEDULER: &str = "scheduler";

/// The most records one page of the audit reader holds, and what it holds unless asked.
pub const AUDIT_PAGE_MAX: usize = 5000;
pub const AUDIT_PAGE_DEFAULT: usize = 500;

impl AuditEvent {
    /// The install the record is about: the `install` its detail names, else its target when
    /// the action is one on installs (`install.deploy`, `action.run`, `break_glass.granted`).
    pub fn install(&self) -> Option<&str> {
        if let Some(i) = self.detail.get("install").and_then(|v| v.as_str()) {
            return Some(i);
        }
        let family = self.action.split('.').next().unwrap_or_default();
        matches!(family, "install" | "action" | "break_glass").then_some(self.target.as_str())
    }
}

impl crate::api::AuditQuery {
    /// What of the query cannot be understood, if anything: checked before any record is read.
    pub fn check(&self) -> Result<(), String> {
        if let Some(since) = &self.since
            && crate::ms_of(since).is_none()
        {
            return Err(format!(
                "since {since:?}: an RFC 3339 time (2026-11-27T10:00:00Z)"
            ));
        }
        if self.limit.is_some_and(|l| l == 0 || l > AUDIT_PAGE_MAX) {
            return Err(format!("limit: 1 to {AUDIT_PAGE_MAX}"));
        }
        // JetStream's sequences stay below 2^63, and a page starts one after `after`.
        if let Some(after) = self.after.filter(|a| *a >= (1 << 63) - 1) {
            return Err(format!(
                "after {after}: not a position this record gave (a page's `next`)"
            ));
        }
        Ok(())
    }

    /// `since` in Unix milliseconds.
    pub fn since_ms(&self) -> Option<u64> {
        self.since.as_deref().and_then(crate::ms_of)
    }

    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(AUDIT_PAGE_DEFAULT).min(AUDIT_PAGE_MAX)
    }

    /// Whether the record is one the query asks for: its install, its actor, its action (`install`
    /// asks for every `install.*`), from `since` on.
    pub fn matches(&self, e: &AuditEvent) -> bool {
        let action_ok = self.action.as_deref().is_none_or(|a| {
            e.action == a
                || e.action
                    .strip_prefix(a)
                    .is_some_and(|rest| rest.starts_with('.'))
        });
        let since_ok = self
            .since_ms()
            .is_none_or(|s| crate::ms_of(&e.at).is_some_and(|at| at >= s));
        action_ok
            && since_ok
            && self.actor.as_deref().is_none_or(|a| e.actor == a)
            && self
                .install
                .as_deref()
                .is_none_or(|i| e.install() == Some(i))
    }
}

impl AuditEvent {
    /// A job ended, by its runner's result or by the scheduler (a timeout, a lost last lease, a
    /// cancel before any runner took it). The error and the plan's summary say what policies
    /// decided, among the rest.
    pub fn job_ended(job: &Job) -> AuditEvent {
        AuditEvent {
            org: job.org.clone(),
            at: ended_at(job),
            actor: job.ended_by.clone().unwrap_or_else(|| SCHEDULER.into()),
            action: format!("job.{}", job.status.name()),
            target: job.id.clone(),
            detail: json!({
                "install": job.install,
                "kind": job.kind,
                "component": job.component,
                "workflow": job.workflow_id,
                "error": job.error,
                "plan_summary": job.plan_summary,
                "ran_as": job.ran_as,
            }),
        }
    }

    /// How a workflow ended: `succeeded`, `cancelled` or `failed`.
    pub fn workflow_ended(wf: &Workflow) -> AuditEvent {
        AuditEvent {
            org: wf.org.clone(),
            at: wf
                .finished_at
                .clone()
                .unwrap_or_else(|| wf.updated_at.clone()),
            actor: SCHEDULER.into(),
            action: format!("workflow.{}", wf.outcome()),
            target: wf.id.clone(),
            detail: json!({ "install": wf.install }),
        }
    }

    /// A drift check's plan found its component drifted.
    pub fn component_drifted(job: &Job) -> AuditEvent {
        AuditEvent {
            org: job.org.clone(),
            at: ended_at(job),
            actor: SCHEDULER.into(),
            action: "component.drifted".into(),
            target: format!("{}/{}", job.install, job.component),
            detail: json!({
                "install": job.install, "component": job.component,
                "workflow": job.workflow_id, "summary": job.plan_summary.clone().unwrap_or_default(),
            }),
        }
    }

    /// A release halted or ended, at `at`.
    pub fn release_ended(r: &Release, at: &str) -> AuditEvent {
        let outcome = match r.status {
            ReleaseStatus::Halted => "halted",
            ReleaseStatus::Succeeded => "succeeded",
            _ => "ended",
        };
        AuditEvent {
            org: r.org.clone(),
            at: at.to_string(),
            actor: SCHEDULER.into(),
            action: format!("release.{outcome}"),
            target: r.id.clone(),
            detail: json!({ "app": r.app, "config": r.config_id, "reason": r.reason }),
        }
    }

    /// A scheduled action fired for the tick `tick` (RFC 3339), as workflow `workflow`.
    pub fn action_scheduled(
        org: &str,
        install: &str,
        action: &str,
        workflow: &str,
        tick: &str,
    ) -> AuditEvent {
        AuditEvent {
            org: org.into(),
            at: tick.into(),
            actor: SCHEDULER.into(),
            action: "action.scheduled".into(),
            target: workflow.into(),
            detail: json!({ "install": install, "action": action, "tick": tick }),
        }
    }

    /// An action step that needs break-glass role `role` started under the API's grant, at
    /// `at` (the step's start).
    pub fn break_glass_used(
        wf: &Workflow,
        role: &str,
        grant: &BreakGlassGrant,
        action: &str,
        step: &str,
        at: &str,
    ) -> AuditEvent {
        AuditEvent {
            org: wf.org.clone(),
            at: at.into(),
            actor: SCHEDULER.into(),
            action: "break_glass.used".into(),
            target: format!("{}/{role}", wf.install),
            detail: json!({
                "granted_by": grant.by, "until": crate::format_ms(grant.until_ms),
                "action": action, "step": step, "workflow": wf.id, "install": wf.install,
            }),
        }
    }

    /// An API grant of break-glass role `role` ended (at its end).
    pub fn break_glass_expired(
        org: &str,
        install: &str,
        role: &str,
        grant: &BreakGlassGrant,
    ) -> AuditEvent {
        let until = crate::format_ms(grant.until_ms);
        AuditEvent {
            org: org.into(),
            at: until.clone(),
            actor: SCHEDULER.into(),
            action: "break_glass.expired".into(),
            target: format!("{install}/{role}"),
            detail: json!({ "granted_by": grant.by, "until": until, "install": install }),
        }
    }
}

/// When a job ended, as its records say (its creation if it has no end: never for an ended job).
fn ended_at(job: &Job) -> String {
    job.finished_at
        .clone()
        .unwrap_or_else(|| job.created_at.clone())
}

impl Workflow {
    /// How it ended as people say it: `succeeded`, `cancelled` or `failed` (`failed` too while it
    /// has not ended).
    pub fn outcome(&self) -> &'static str {
        match self.status {
            WorkflowStatus::Succeeded => "succeeded",
            WorkflowStatus::Cancelled => "cancelled",
            _ => "failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::at;
    use crate::{JobKind, JobStatus, WorkflowKind};

    const T0: &str = "2026-11-27T10:00:00.000Z";
    const END: &str = "2026-11-27T10:05:00.000Z";

    fn job() -> Job {
        let mut j = Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            2,
            JobKind::Plan,
            "db".into(),
            at(T0),
        );
        j.status = JobStatus::Finished;
        j.finished_at = Some(END.into());
        j.ended_by = Some("runner:i".into());
        j.plan_summary = Some("1 to change".into());
        j
    }

    #[test]
    fn a_jobs_record_is_at_its_end_and_names_its_runner_and_outcome() {
        let a = AuditEvent::job_ended(&job());
        assert_eq!(a.at, END);
        assert_eq!(a.actor, "runner:i");
        assert_eq!(a.action, "job.finished");
        assert_eq!(a.detail["plan_summary"], "1 to change");
        // The same job makes the same record: written twice, the bus keeps it once.
        assert_eq!(a, AuditEvent::job_ended(&job()));
    }

    #[test]
    fn a_job_the_scheduler_ended_is_the_schedulers() {
        let mut j = Job::queued(
            "j".into(),
            "o".into(),
            "i".into(),
            "w".into(),
            2,
            JobKind::Apply,
            "db".into(),
            at(T0),
        );
        assert!(j.cancel_unclaimed(at(END)));
        let a = AuditEvent::job_ended(&j);
        assert_eq!(a.actor, "scheduler");
        assert_eq!(a.action, "job.not_attempted");
        assert_eq!(a.at, END);
    }

    /// Workflow `w` of install `i`, started at T0 and ended at END as `status`.
    fn ended(kind: WorkflowKind, status: WorkflowStatus) -> Workflow {
        let mut w =
            Workflow::requested("w".into(), "o", "i", kind, "c", Default::default(), at(T0));
        w.status = status;
        w.finished_at = Some(END.into());
        w
    }

    #[test]
    fn a_workflows_record_says_how_it_ended_at_its_end() {
        let a =
            AuditEvent::workflow_ended(&ended(WorkflowKind::Provision, WorkflowStatus::Cancelled));
        assert_eq!(
            (a.action.as_str(), a.at.as_str()),
            ("workflow.cancelled", END)
        );
        assert_eq!(a.detail["install"], "i");
    }

    #[test]
    fn a_drift_record_targets_the_component() {
        let a = AuditEvent::component_drifted(&job());
        assert_eq!(a.target, "i/db");
        assert_eq!(a.at, END);
        assert_eq!(a.detail["summary"], "1 to change");
    }

    #[test]
    fn a_scheduled_run_and_an_expired_grant_are_at_their_own_times() {
        let a = AuditEvent::action_scheduled("o", "i", "backup", "w", T0);
        assert_eq!((a.at.as_str(), a.target.as_str()), (T0, "w"));
        let g = BreakGlassGrant {
            by: "token:ops".into(),
            granted_at: T0.into(),
            until_ms: 1_795_000_000_000,
        };
        let e = AuditEvent::break_glass_expired("o", "i", "admin", &g);
        assert_eq!(e.at, crate::format_ms(g.until_ms));
        assert_eq!(e.target, "i/admin");
    }

    #[test]
    fn a_query_matches_by_install_actor_action_family_and_time() {
        use crate::api::AuditQuery;
        let deploy = AuditEvent::workflow_ended(&ended(
            WorkflowKind::DeployComponents,
            WorkflowStatus::Succeeded,
        ));
        let ask = |f: &dyn Fn(&mut AuditQuery)| {
            let mut q = AuditQuery::default();
            f(&mut q);
            q.matches(&deploy)
        };
        assert!(ask(&|_| ()));
        assert!(ask(&|q| q.install = Some("i".into())));
        assert!(!ask(&|q| q.install = Some("i2".into())));
        // A family is the action's first word; a prefix of a word is not a family.
        assert!(ask(&|q| q.action = Some("workflow".into())));
        assert!(ask(&|q| q.action = Some(deploy.action.clone())));
        assert!(!ask(&|q| q.action = Some("work".into())));
        assert!(ask(&|q| q.actor = Some(deploy.actor.clone())));
        assert!(!ask(&|q| q.actor = Some("token:ci".into())));
        // From `since` on, the record's own time included.
        assert!(ask(&|q| q.since = Some(END.into())));
        assert!(!ask(&|q| q.since = Some("2026-11-27T10:05:00.001Z".into())));
        // A time that is not one is refused before any record is read.
        let bad = AuditQuery {
            since: Some("yesterday".into()),
            ..AuditQuery::default()
        };
        assert!(bad.check().unwrap_err().contains("RFC 3339"));
    }

    #[test]
    fn a_position_past_any_the_record_gives_is_refused() {
        let q = |after| crate::api::AuditQuery {
            after: Some(after),
            ..Default::default()
        };
        assert!(q(u64::MAX).check().unwrap_err().contains("not a position"));
        assert!(q((1 << 63) - 1).check().is_err());
        assert!(q(12).check().is_ok());
    }
}
