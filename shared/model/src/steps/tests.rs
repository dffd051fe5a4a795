//! Every transition of the step state machine, legal and illegal (long because it is every one).

use super::*;
use crate::time::at;
use crate::{Deployable, WorkflowKind};

const NOW: &str = "2026-11-22T12:00:00.000Z";

fn d(name: &str, deps: &[&str]) -> Deployable {
    Deployable::named(name, deps)
}

/// Deploy workflow `w` of install `i` over `groups` of components, a group after the one before.
fn deploy(groups: &[Vec<Deployable>]) -> Workflow {
    Workflow::deploy(
        "w".into(),
        "o".into(),
        "i".into(),
        WorkflowKind::DeployComponents,
        "c".into(),
        groups,
    )
}

/// `a` alone: build 0, sync 1, plan 2, approve 3, apply 4.
fn one() -> Workflow {
    deploy(&[vec![d("a", &[])]])
}

/// `a` (steps 0-4) and `b` (5-9), independent: both build at once.
fn two() -> Workflow {
    deploy(&[vec![d("a", &[]), d("b", &[])]])
}

fn ok(w: &mut Workflow, i: u32) {
    w.finish_step(i, StepOutcome::Succeeded("ok".into()), None, at(NOW))
        .unwrap();
}

fn statuses(w: &Workflow) -> Vec<StepStatus> {
    w.steps.iter().map(|s| s.status).collect()
}

use StepStatus::{Cancelled, Failed, NotAttempted, Pending, Running, Skipped, Succeeded, Waiting};

#[test]
fn advance_starts_ready_steps_once_with_their_ids() {
    let mut w = one();
    assert_eq!(w.advance(at(NOW)), vec![Effect::Start { step: 0 }]);
    assert_eq!(w.status, WorkflowStatus::Running);
    assert_eq!(w.steps[0].started_at.as_deref(), Some(NOW));
    assert!(
        w.advance(at(NOW)).is_empty(),
        "nothing new on the saved record"
    );

    ok(&mut w, 0);
    assert_eq!(w.advance(at(NOW)), vec![Effect::Start { step: 1 }]);
    assert_eq!(w.steps[1].job_id.as_deref(), Some("w-1"));
    ok(&mut w, 1);
    w.advance(at(NOW));
    ok(&mut w, 2);
    assert_eq!(w.advance(at(NOW)), vec![Effect::Start { step: 3 }]);
    assert_eq!(
        w.steps[3].status, Waiting,
        "an approval waits for a decision"
    );
    assert_eq!(w.steps[3].approval_id.as_deref(), Some("w-3"));
    ok(&mut w, 3);
    w.advance(at(NOW));
    ok(&mut w, 4);
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Succeeded
        }]
    );
    assert!(w.finished_at.is_some());
    assert!(w.advance(at(NOW)).is_empty(), "finished once");
}

#[test]
fn finishing_a_step_does_not_end_the_workflow_until_advance() {
    let mut w = one();
    w.advance(at(NOW));
    w.finish_step(
        0,
        StepOutcome::Failed("boom".into()),
        Some("build".into()),
        at(NOW),
    )
    .unwrap();
    assert_eq!(w.status, WorkflowStatus::Running);
    assert_eq!(w.steps[0].message.as_deref(), Some("boom"));
    assert_eq!(w.steps[0].actor.as_deref(), Some("build"));
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Failed
        }]
    );
    assert_eq!(
        statuses(&w),
        [
            Failed,
            NotAttempted,
            NotAttempted,
            NotAttempted,
            NotAttempted
        ]
    );
    assert_eq!(
        w.steps[1].message.as_deref(),
        Some("not attempted: the workflow failed")
    );
}

#[test]
fn a_failure_starts_nothing_new_and_ends_when_the_parallel_steps_end() {
    let mut w = two();
    assert_eq!(w.advance(at(NOW)).len(), 2, "both builds");
    w.finish_step(0, StepOutcome::Failed("a broke".into()), None, at(NOW))
        .unwrap();
    assert!(w.advance(at(NOW)).is_empty(), "b's build still runs");
    assert_eq!(w.status, WorkflowStatus::Running);
    ok(&mut w, 5);
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Failed
        }],
        "b's sync does not start after a's failure"
    );
}

#[test]
fn a_plan_without_changes_skips_its_approval_and_apply() {
    let mut w = one();
    for i in 0..2 {
        w.advance(at(NOW));
        ok(&mut w, i);
    }
    w.advance(at(NOW));
    w.finish_step(
        2,
        StepOutcome::NoChanges("no changes".into()),
        None,
        at(NOW),
    )
    .unwrap();
    assert_eq!(
        statuses(&w),
        [Succeeded, Succeeded, Succeeded, Skipped, Skipped]
    );
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Succeeded
        }]
    );
}

#[test]
fn illegal_finishes_are_refused_and_change_nothing() {
    let mut w = one();
    w.advance(at(NOW));
    let before = w.clone();
    let out = |m: &str| StepOutcome::Succeeded(m.into());
    assert_eq!(
        w.finish_step(1, out("x"), None, at(NOW)),
        Err(Illegal::NotStarted {
            step: 1,
            status: Pending
        })
    );
    assert_eq!(
        w.finish_step(9, out("x"), None, at(NOW)),
        Err(Illegal::NoSuchStep(9))
    );
    assert_eq!(
        w.finish_step(0, StepOutcome::NoChanges("x".into()), None, at(NOW)),
        Err(Illegal::NotAPlan {
            step: 0,
            kind: StepKind::Build
        })
    );
    assert_eq!(w, before);
    ok(&mut w, 0);
    assert_eq!(
        w.finish_step(0, StepOutcome::Failed("late".into()), None, at(NOW)),
        Err(Illegal::AlreadyEnded {
            step: 0,
            status: Succeeded
        }),
        "a duplicate result does not overwrite the first"
    );
    w.steps.iter_mut().for_each(|s| s.status = Succeeded);
    w.advance(at(NOW));
    w.steps[4].status = Running;
    assert_eq!(
        w.finish_step(4, out("x"), None, at(NOW)),
        Err(Illegal::WorkflowEnded(WorkflowStatus::Succeeded))
    );
}

#[test]
fn cancel_stops_what_has_not_started_and_asks_running_jobs_to_stop() {
    let mut w = two();
    w.advance(at(NOW));
    for i in [0, 5] {
        ok(&mut w, i);
    }
    w.advance(at(NOW));
    ok(&mut w, 1);
    w.advance(at(NOW)); // a plans (2) while b syncs (6)
    ok(&mut w, 2);
    w.advance(at(NOW)); // a's approval waits (3)
    assert_eq!(w.steps[3].status, Waiting);
    assert_eq!(w.steps[6].status, Running);

    let effects = w.cancel("alice", at(NOW)).unwrap();
    assert_eq!(
        effects,
        vec![Effect::CancelJob {
            step: 6,
            job_id: "w-6".into()
        }]
    );
    assert_eq!(w.steps[3].status, Cancelled, "the approval is withdrawn");
    assert_eq!(w.steps[4].status, NotAttempted);
    assert_eq!(
        w.steps[4].message.as_deref(),
        Some("not attempted: the workflow was cancelled")
    );
    assert_eq!(w.steps[4].actor.as_deref(), Some("alice"));
    assert_eq!(
        w.status,
        WorkflowStatus::Running,
        "until the job has stopped"
    );
    assert!(w.advance(at(NOW)).is_empty());

    w.finish_step(6, StepOutcome::Cancelled("cancelled".into()), None, at(NOW))
        .unwrap();
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Cancelled
        }]
    );
    assert_eq!(
        w.cancel("alice", at(NOW)),
        Err(Illegal::WorkflowEnded(WorkflowStatus::Cancelled))
    );
}

#[test]
fn cancel_with_nothing_running_ends_at_once_and_a_build_is_abandoned() {
    let mut w = one();
    w.advance(at(NOW));
    assert_eq!(
        w.cancel("bob", at(NOW)).unwrap(),
        vec![Effect::Finished {
            status: WorkflowStatus::Cancelled
        }]
    );
    assert_eq!(
        statuses(&w),
        [
            Cancelled,
            NotAttempted,
            NotAttempted,
            NotAttempted,
            NotAttempted
        ]
    );
    // The build's late result is refused.
    assert!(
        w.finish_step(0, StepOutcome::Succeeded("x".into()), None, at(NOW))
            .is_err()
    );
}

#[test]
fn a_job_that_succeeds_after_cancel_ends_the_workflow_without_starting_more() {
    let mut w = one();
    w.advance(at(NOW));
    ok(&mut w, 0);
    w.advance(at(NOW));
    w.cancel("bob", at(NOW)).unwrap();
    ok(&mut w, 1);
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Cancelled
        }]
    );
    assert_eq!(
        statuses(&w),
        [
            Succeeded,
            Succeeded,
            NotAttempted,
            NotAttempted,
            NotAttempted
        ]
    );
}

#[test]
fn a_step_cancelled_alone_stops_the_workflow_once_the_others_end() {
    let mut w = two();
    w.advance(at(NOW));
    w.finish_step(
        0,
        StepOutcome::Cancelled("job cancelled".into()),
        None,
        at(NOW),
    )
    .unwrap();
    assert!(
        w.advance(at(NOW)).is_empty(),
        "b's build still runs; nothing new starts"
    );
    ok(&mut w, 5);
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Cancelled
        }]
    );
}

#[test]
fn retry_runs_a_failed_step_again_under_a_new_id() {
    let mut w = one();
    w.advance(at(NOW));
    ok(&mut w, 0);
    w.advance(at(NOW));
    assert_eq!(
        w.retry(1, "ann", at(NOW)),
        Err(Illegal::StillRunning(WorkflowStatus::Running))
    );
    w.finish_step(1, StepOutcome::Failed("lost".into()), None, at(NOW))
        .unwrap();
    w.advance(at(NOW));
    assert_eq!(w.status, WorkflowStatus::Failed);
    assert_eq!(
        w.retry(0, "ann", at(NOW)),
        Err(Illegal::NotRetryable {
            step: 0,
            status: Succeeded
        })
    );
    assert_eq!(w.retry(7, "ann", at(NOW)), Err(Illegal::NoSuchStep(7)));

    assert_eq!(
        w.retry(1, "ann", at(NOW)).unwrap(),
        vec![Effect::Start { step: 1 }]
    );
    assert_eq!(w.status, WorkflowStatus::Running);
    assert!(w.finished_at.is_none());
    assert_eq!(w.steps[1].attempt, 2);
    assert_eq!(w.steps[1].job_id.as_deref(), Some("w-1-2"));
    assert_eq!(w.steps[1].status, Running);
    assert_eq!(w.steps[1].message, None);
}

#[test]
fn retrying_a_failed_apply_plans_and_asks_again() {
    let mut w = one();
    for i in 0..4 {
        w.advance(at(NOW));
        ok(&mut w, i);
    }
    w.advance(at(NOW));
    w.finish_step(4, StepOutcome::Failed("apply failed".into()), None, at(NOW))
        .unwrap();
    w.advance(at(NOW));
    assert_eq!(
        w.retry(4, "ann", at(NOW)).unwrap(),
        vec![Effect::Start { step: 2 }]
    );
    assert_eq!(
        statuses(&w),
        [Succeeded, Succeeded, Running, Pending, Pending]
    );
    assert_eq!(w.steps[2].job_id.as_deref(), Some("w-2-2"));
    w.finish_step(2, StepOutcome::Succeeded("plan".into()), None, at(NOW))
        .unwrap();
    w.advance(at(NOW));
    assert_eq!(
        w.steps[3].approval_id.as_deref(),
        Some("w-3-2"),
        "a new approval"
    );
}

#[test]
fn retry_after_cancel_picks_up_the_steps_not_attempted() {
    let mut w = one();
    w.advance(at(NOW));
    ok(&mut w, 0);
    w.advance(at(NOW));
    w.cancel("bob", at(NOW)).unwrap();
    w.finish_step(1, StepOutcome::Cancelled("stopped".into()), None, at(NOW))
        .unwrap();
    w.advance(at(NOW));
    assert_eq!(w.status, WorkflowStatus::Cancelled);
    assert_eq!(
        w.retry(1, "ann", at(NOW)).unwrap(),
        vec![Effect::Start { step: 1 }]
    );
    assert!(!w.cancel_requested);
    assert_eq!(
        statuses(&w),
        [Succeeded, Running, Pending, Pending, Pending]
    );
}

#[test]
fn a_workflow_is_laid_out_once_or_fails_with_the_reason() {
    let laid = one();
    let mut w = one();
    w.steps.clear();
    assert!(
        w.advance(at(NOW)).is_empty(),
        "no steps: neither started nor finished"
    );
    assert_eq!(w.status, WorkflowStatus::Pending);
    assert_eq!(
        w.lay_out(Ok(laid.steps.clone()), at(NOW)).unwrap(),
        vec![Effect::Start { step: 0 }]
    );
    assert_eq!(
        w.lay_out(Ok(laid.steps.clone()), at(NOW)),
        Err(Illegal::AlreadyLaidOut)
    );

    let mut w = one();
    w.steps.clear();
    assert_eq!(
        w.lay_out(Err("component `x` cannot be deployed".into()), at(NOW))
            .unwrap(),
        vec![Effect::Finished {
            status: WorkflowStatus::Failed
        }]
    );
    assert_eq!(w.error.as_deref(), Some("component `x` cannot be deployed"));
    assert_eq!(
        w.lay_out(Ok(laid.steps), at(NOW)),
        Err(Illegal::WorkflowEnded(WorkflowStatus::Failed))
    );
}

#[test]
fn a_teardown_runs_in_reverse_deploy_order_each_after_its_approval_with_the_sandbox_last() {
    let stages: Vec<Vec<String>> = vec![
        vec!["sandbox".into()],
        vec!["a".into(), "b".into()],
        vec!["c".into()],
    ];
    let mut w = Workflow::teardown("w".into(), "o".into(), "i".into(), "c".into(), &stages);
    // Starts each round's steps, finishes them, and says which started: `component kind`.
    let round = |w: &mut Workflow| -> Vec<String> {
        let started: Vec<u32> = w
            .advance(at(NOW))
            .iter()
            .filter_map(|e| match e {
                Effect::Start { step } => Some(*step),
                _ => None,
            })
            .collect();
        let names = started
            .iter()
            .map(|&i| {
                let s = &w.steps[i as usize];
                format!("{} {}", s.component, s.kind.label())
            })
            .collect();
        for i in started {
            ok(w, i);
        }
        names
    };
    assert_eq!(
        round(&mut w),
        ["c approve"],
        "a destroy waits for a decision"
    );
    assert_eq!(round(&mut w), ["c teardown"]);
    assert_eq!(round(&mut w), ["a approve", "b approve"]);
    assert_eq!(round(&mut w), ["a teardown", "b teardown"]);
    assert_eq!(
        round(&mut w),
        ["sandbox approve"],
        "the sandbox waits for a and b"
    );
    assert_eq!(round(&mut w), ["sandbox teardown"]);
    assert_eq!(
        w.advance(at(NOW)),
        vec![Effect::Finished {
            status: WorkflowStatus::Succeeded
        }]
    );
}

/// a; b and c depend on a; d depends on b and c.
fn diamond() -> Workflow {
    deploy(&[
        vec![d("a", &[])],
        vec![d("b", &["a"]), d("c", &["a"])],
        vec![d("d", &["b", "c"])],
    ])
}

/// Runs every step that starts until `stop` (a component's approve) waits.
fn run_until_waiting(w: &mut Workflow, stop: &str) -> u32 {
    loop {
        for e in w.advance(at(NOW)) {
            let Effect::Start { step } = e else { continue };
            let s = &w.steps[step as usize];
            if !(s.kind == StepKind::Approve && s.component == stop) {
                ok(w, step);
            }
        }
        if let Some(s) = w.find(stop, StepKind::Approve)
            && s.status == Waiting
        {
            return s.index;
        }
    }
}

#[test]
fn denying_with_skip_dependents_skips_exactly_the_transitive_dependents() {
    let mut w = diamond();
    let approve = run_until_waiting(&mut w, "c");
    w.finish_step(
        approve,
        StepOutcome::Skipped {
            message: "plan denied".into(),
            dependents: true,
        },
        Some("alice".into()),
        at(NOW),
    )
    .unwrap();
    fn status(w: &Workflow, c: &str, k: StepKind) -> StepStatus {
        w.find(c, k).unwrap().status
    }
    assert_eq!(status(&w, "c", StepKind::Approve), Skipped);
    assert_eq!(status(&w, "c", StepKind::Apply), Skipped);
    for k in [StepKind::Plan, StepKind::Approve, StepKind::Apply] {
        assert_eq!(status(&w, "d", k), Skipped, "{k:?}");
    }
    assert_eq!(
        w.find("d", StepKind::Plan).unwrap().message.as_deref(),
        Some("skipped: it depends on c, whose plan was denied")
    );
    assert_ne!(
        status(&w, "b", StepKind::Apply),
        Skipped,
        "b does not depend on c"
    );
    // b goes on to the end; the workflow succeeds with the skipped part.
    loop {
        let effects = w.advance(at(NOW));
        if effects.iter().any(|e| matches!(e, Effect::Finished { .. })) {
            break;
        }
        for e in effects {
            if let Effect::Start { step } = e {
                ok(&mut w, step);
            }
        }
    }
    assert_eq!(w.status, WorkflowStatus::Succeeded);
    assert_eq!(status(&w, "b", StepKind::Apply), Succeeded);
}

#[test]
fn denying_with_skip_current_lets_dependents_run() {
    let mut w = diamond();
    let approve = run_until_waiting(&mut w, "c");
    w.finish_step(
        approve,
        StepOutcome::Skipped {
            message: "plan denied".into(),
            dependents: false,
        },
        None,
        at(NOW),
    )
    .unwrap();
    assert_eq!(w.find("c", StepKind::Apply).unwrap().status, Skipped);
    assert_eq!(w.find("d", StepKind::Plan).unwrap().status, Pending);
    assert_eq!(
        w.finish_step(
            0,
            StepOutcome::Skipped {
                message: "x".into(),
                dependents: false
            },
            None,
            at(NOW)
        ),
        Err(Illegal::AlreadyEnded {
            step: 0,
            status: Succeeded
        })
    );
}

#[test]
fn skipping_a_waiting_approval_skips_its_apply_and_records_who() {
    let mut w = diamond();
    let approve = run_until_waiting(&mut w, "c");
    w.skip(approve, "ann", at(NOW)).unwrap();
    assert_eq!(w.find("c", StepKind::Apply).unwrap().status, Skipped);
    let s = &w.steps[approve as usize];
    assert_eq!(s.message.as_deref(), Some("skipped by ann"));
    assert_eq!(
        s.responses,
        vec![crate::Response {
            actor: "ann".into(),
            at: NOW.into(),
            action: "skip".into()
        }]
    );
    // What depends on c runs on (with what c has deployed).
    assert_eq!(w.find("d", StepKind::Plan).unwrap().status, Pending);
    // Twice: it has ended.
    assert!(matches!(
        w.skip(approve, "ann", at(NOW)),
        Err(Illegal::AlreadyEnded { .. })
    ));
}

#[test]
fn skipping_a_failed_step_runs_an_ended_workflow_on() {
    let mut w = diamond();
    // Run everything but the plans of b and c, which stay running.
    let held = |w: &Workflow, i: u32| {
        let s = &w.steps[i as usize];
        s.kind == StepKind::Plan && (s.component == "b" || s.component == "c")
    };
    loop {
        let started = w.advance(at(NOW));
        if started.is_empty() {
            break;
        }
        for e in started {
            if let Effect::Start { step } = e
                && !held(&w, step)
            {
                ok(&mut w, step);
            }
        }
    }
    let plan_b = w.find("b", StepKind::Plan).unwrap().index;
    assert_eq!(w.steps[plan_b as usize].status, Running);
    assert_eq!(w.steps[plan_b as usize].kind, StepKind::Plan);
    // A running step cannot be skipped: cancel it first.
    assert_eq!(
        w.skip(plan_b, "ann", at(NOW)),
        Err(Illegal::Running(plan_b))
    );
    w.finish_step(plan_b, StepOutcome::Failed("boom".into()), None, at(NOW))
        .unwrap();
    // c's plan is still running: the workflow has not ended, so the failure cannot be skipped yet.
    let plan_c = w.find("c", StepKind::Plan).unwrap().index;
    assert!(matches!(
        w.skip(plan_b, "ann", at(NOW)),
        Err(Illegal::NotEndedYet { .. })
    ));
    w.finish_step(plan_c, StepOutcome::Succeeded("ok".into()), None, at(NOW))
        .unwrap();
    w.advance(at(NOW));
    assert_eq!(w.status, WorkflowStatus::Failed);
    assert_eq!(w.find("d", StepKind::Plan).unwrap().status, NotAttempted);

    let effects = w.skip(plan_b, "ann", at(NOW)).unwrap();
    assert_eq!(w.status, WorkflowStatus::Running);
    for k in [StepKind::Plan, StepKind::Approve, StepKind::Apply] {
        assert_eq!(w.find("b", k).unwrap().status, Skipped, "{k:?}");
    }
    // c's approval starts; d waits for c's apply, pending again rather than "not attempted".
    let approve_c = w.find("c", StepKind::Approve).unwrap().index;
    assert_eq!(effects, vec![Effect::Start { step: approve_c }]);
    assert_eq!(w.find("d", StepKind::Plan).unwrap().status, Pending);
}

#[test]
fn a_stale_plan_is_planned_and_approved_again_before_its_apply() {
    let mut w = one();
    let approve = run_until_waiting(&mut w, "a");
    let effects = w
        .replan(approve, "the plan is older than 72h", at(NOW))
        .unwrap();
    assert_eq!(effects, vec![Effect::Start { step: 2 }]);
    assert_eq!(
        statuses(&w),
        [Succeeded, Succeeded, Running, Pending, Pending]
    );
    assert_eq!(
        w.steps[2].job_id.as_deref(),
        Some("w-2-2"),
        "a new plan job"
    );
    assert_eq!(
        w.steps[3].message.as_deref(),
        Some("planned again: the plan is older than 72h")
    );
    // Only a waiting approval sends its plan back.
    assert!(w.replan(4, "x", at(NOW)).is_err());
    assert!(w.replan(3, "x", at(NOW)).is_err(), "not waiting any more");
    ok(&mut w, 2);
    w.advance(at(NOW));
    assert_eq!(
        w.steps[3].approval_id.as_deref(),
        Some("w-3-2"),
        "asked again"
    );
}

#[test]
fn a_removed_component_is_torn_down_after_every_apply_behind_its_own_approval() {
    let mut w = one().with_removals(&["old".to_string()]);
    let approve = w.find("old", StepKind::Approve).unwrap().clone();
    let teardown = w.find("old", StepKind::Teardown).unwrap().clone();
    assert_eq!(
        approve.after,
        vec![w.find("a", StepKind::Apply).unwrap().index]
    );
    assert_eq!(teardown.after, vec![approve.index]);
    // Denied with skip-current: the teardown is skipped, the workflow succeeds.
    run_until_waiting(&mut w, "old");
    w.finish_step(
        approve.index,
        StepOutcome::Skipped {
            message: "plan denied; its apply is skipped".into(),
            dependents: false,
        },
        None,
        at(NOW),
    )
    .unwrap();
    assert_eq!(w.steps[teardown.index as usize].status, Skipped);
    w.advance(at(NOW));
    assert_eq!(w.status, WorkflowStatus::Succeeded);
}

/// Changes to one workflow applied together, then one advance, leave the record that applying
/// each with an advance of its own leaves, and start the same steps: the executor saves ends
/// that come together (two reused builds) in one write (`scheduler/src/effects.rs`).
#[test]
fn ends_applied_together_start_what_they_would_one_by_one() {
    let building = || {
        let mut w = two();
        w.advance(at(NOW));
        w
    };
    let w = building();
    let ends: Vec<Change> = ["a", "b"]
        .iter()
        .map(|c| {
            let i = w.find(c, StepKind::Build).unwrap().index;
            Change::finish(i, StepOutcome::Succeeded("reused".into()), "build")
        })
        .collect();
    let (mut one_by_one, mut started) = (building(), Vec::new());
    for c in &ends {
        one_by_one.apply(c, at(NOW)).unwrap();
        started.extend(one_by_one.advance(at(NOW)));
    }
    let mut together = building();
    for c in &ends {
        together.apply(c, at(NOW)).unwrap();
    }
    let mut at_once = together.advance(at(NOW));
    let key = |e: &Effect| format!("{e:?}");
    started.sort_by_key(key);
    at_once.sort_by_key(key);
    assert_eq!(started.len(), 2, "each build's sync starts: {started:?}");
    assert_eq!(started, at_once);
    assert_eq!(one_by_one, together);
}
