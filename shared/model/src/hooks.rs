//! Lifecycle hooks: actions whose triggers (`pre-deploy-component`, `post-provision`, ...) place
//! their steps inside a deploy, a provision or a teardown workflow, at the point the trigger
//! names. A hook's steps are ordinary workflow steps: a failing one fails the workflow like any
//! step, and can be retried or skipped.
//!
//! Placement is a pure function of the laid-out workflow: each trigger names the steps its chain
//! waits for and the steps that wait for its chain. Triggers of operations Ferry does not have
//! (enabling a component, syncing secrets, a role being enabled) never fire; [`fires`] says which
//! do, and validation warns about the others.

use crate::{ActionStepRef, SANDBOX, StepKind, Workflow, WorkflowKind};

/// An action on a lifecycle trigger, as the workflow places it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub trigger: String,
    /// The component of a `*-component` trigger.
    pub component: Option<String>,
    pub action: String,
    /// The action's step names, in order.
    pub steps: Vec<String>,
}

/// The lifecycle triggers Ferry fires, and in which workflow.
pub const FIRED_TRIGGERS: &[&str] = &[
    "pre-provision",
    "post-provision",
    "post-provision-sandbox",
    "pre-reprovision",
    "post-reprovision",
    "pre-reprovision-sandbox",
    "post-reprovision-sandbox",
    "pre-deprovision",
    "post-deprovision",
    "pre-deprovision-sandbox",
    "post-deprovision-sandbox",
    "pre-deploy-all-components",
    "post-deploy-all-components",
    "pre-teardown-all-components",
    "post-teardown-all-components",
    "pre-deploy-component",
    "post-deploy-component",
    "pre-teardown-component",
    "post-teardown-component",
    "pre-update-inputs",
    "post-update-inputs",
];

/// Whether Ferry ever fires `trigger` (`manual` and `cron` are not lifecycle triggers and fire
/// by other means).
pub fn fires(trigger: &str) -> bool {
    FIRED_TRIGGERS.contains(&trigger)
}

/// Where a hook's chain goes: after these steps, before those.
struct Place {
    after: Vec<u32>,
    before: Vec<u32>,
}

impl Workflow {
    /// Inserts the hooks whose triggers this workflow fires. A plan-only deploy fires none (it
    /// deploys nothing). Hooks that come after everything (`post-provision`, ...) go last, each
    /// after all the steps before it.
    pub fn with_hooks(mut self, hooks: &[Hook]) -> Workflow {
        if self.scope.plan_only {
            return self;
        }
        let (last, first): (Vec<&Hook>, Vec<&Hook>) = hooks
            .iter()
            .filter(|h| self.fired(&h.trigger))
            .partition(|h| is_after_all(&h.trigger));
        for h in first {
            if let Some(place) = self.place(h) {
                self.insert_chain(h, place);
            }
        }
        for h in last {
            let after = (0..self.steps.len() as u32).collect();
            self.insert_chain(
                h,
                Place {
                    after,
                    before: vec![],
                },
            );
        }
        self
    }

    /// Whether this workflow fires `trigger`.
    fn fired(&self, trigger: &str) -> bool {
        let reprovision = self.scope.components == [SANDBOX.to_string()];
        let full = self.scope.components.is_empty();
        let inputs = self.cause.as_deref() == Some("update-inputs");
        match self.kind {
            WorkflowKind::Provision if reprovision => matches!(
                trigger,
                "pre-reprovision"
                    | "post-reprovision"
                    | "pre-reprovision-sandbox"
                    | "post-reprovision-sandbox"
            ),
            WorkflowKind::Provision | WorkflowKind::DeployComponents => match trigger {
                "pre-provision" | "post-provision" | "post-provision-sandbox" => {
                    self.kind == WorkflowKind::Provision
                }
                "pre-deploy-all-components" | "post-deploy-all-components" => full,
                "pre-deploy-component" | "post-deploy-component" => true,
                "pre-update-inputs" | "post-update-inputs" => inputs,
                _ => false,
            },
            WorkflowKind::Teardown => matches!(
                trigger,
                "pre-deprovision"
                    | "post-deprovision"
                    | "pre-deprovision-sandbox"
                    | "post-deprovision-sandbox"
                    | "pre-teardown-all-components"
                    | "post-teardown-all-components"
                    | "pre-teardown-component"
                    | "post-teardown-component"
            ),
            WorkflowKind::Action | WorkflowKind::Runbook | WorkflowKind::DriftCheck => false,
        }
    }

    fn indices(&self, kind: StepKind, pick: impl Fn(&str) -> bool) -> Vec<u32> {
        self.steps
            .iter()
            .filter(|s| s.kind == kind && s.action.is_none() && pick(&s.component))
            .map(|s| s.index)
            .collect()
    }

    /// Where a hook that is not "after everything" goes; `None` when its point is not in this
    /// workflow (its component is not deployed by it, say).
    fn place(&self, h: &Hook) -> Option<Place> {
        fn is(name: &str) -> impl Fn(&str) -> bool + '_ {
            move |c| c == name
        }
        let component = h.component.as_deref().unwrap_or_default();
        let sandbox_apply = self.indices(StepKind::Apply, is(SANDBOX));
        let component_plans = self.indices(StepKind::Plan, |c| c != SANDBOX);
        let place = match h.trigger.as_str() {
            "pre-provision"
            | "pre-reprovision"
            | "pre-reprovision-sandbox"
            | "pre-update-inputs" => Place {
                after: vec![],
                before: self.indices(StepKind::Plan, |_| true),
            },
            "post-provision-sandbox" | "post-reprovision-sandbox" => Place {
                after: sandbox_apply,
                before: component_plans,
            },
            "pre-deploy-all-components" => Place {
                after: sandbox_apply,
                before: component_plans,
            },
            "pre-deploy-component" => {
                let plan = self.indices(StepKind::Plan, is(component));
                Place {
                    after: plan
                        .first()
                        .and_then(|&p| self.step(p))
                        .map(|s| s.after.clone())
                        .unwrap_or_default(),
                    before: plan,
                }
            }
            "post-deploy-component" => Place {
                after: self.indices(StepKind::Apply, is(component)),
                before: vec![],
            },
            _ => self.teardown_place(&h.trigger, component)?,
        };
        // A hook bound to something this workflow does not do has no place in it.
        let bound = h.component.is_some() || h.trigger.contains("sandbox");
        if bound && place.after.is_empty() && place.before.is_empty() {
            return None;
        }
        Some(place)
    }

    /// Where a hook on a teardown's trigger goes, if `trigger` is one.
    fn teardown_place(&self, trigger: &str, component: &str) -> Option<Place> {
        fn is(name: &str) -> impl Fn(&str) -> bool + '_ {
            move |c| c == name
        }
        Some(match trigger {
            "pre-deprovision" => Place {
                after: vec![],
                before: self
                    .steps
                    .iter()
                    .filter(|s| s.after.is_empty())
                    .map(|s| s.index)
                    .collect(),
            },
            "pre-teardown-all-components" => Place {
                after: vec![],
                before: self.indices(StepKind::Teardown, |c| c != SANDBOX),
            },
            "post-teardown-all-components" => Place {
                after: self.indices(StepKind::Teardown, |c| c != SANDBOX),
                before: self.indices(StepKind::Approve, is(SANDBOX)),
            },
            "pre-teardown-component" | "pre-deprovision-sandbox" => {
                let name = if trigger == "pre-deprovision-sandbox" {
                    SANDBOX
                } else {
                    component
                };
                Place {
                    after: self.indices(StepKind::Approve, is(name)),
                    before: self.indices(StepKind::Teardown, is(name)),
                }
            }
            "post-teardown-component" => Place {
                after: self.indices(StepKind::Teardown, is(component)),
                before: vec![],
            },
            "post-deprovision-sandbox" => Place {
                after: self.indices(StepKind::Teardown, is(SANDBOX)),
                before: vec![],
            },
            _ => return None,
        })
    }

    /// Appends the hook's steps as a chain after `place.after`, and makes `place.before` wait for
    /// its last step.
    fn insert_chain(&mut self, h: &Hook, place: Place) {
        let group = place
            .before
            .iter()
            .chain(&place.after)
            .filter_map(|&i| self.step(i))
            .map(|s| s.group)
            .max()
            .unwrap_or(0);
        let mut after = place.after;
        let mut last = None;
        for name in &h.steps {
            let i = self.push_step(&h.action, group, StepKind::Action, after);
            if let Some(s) = self.step_mut(i) {
                s.action = Some(ActionStepRef {
                    step: name.clone(),
                    trigger: h.trigger.clone(),
                });
            }
            after = vec![i];
            last = Some(i);
        }
        let Some(last) = last else { return };
        for b in place.before {
            if let Some(s) = self.step_mut(b) {
                s.after.push(last);
            }
        }
    }

    /// Lays out an action run: its steps one after another.
    pub fn action_run(mut self, action: &str, steps: &[String]) -> Workflow {
        let trigger = self
            .run
            .as_ref()
            .map_or("manual".to_string(), |r| r.trigger.clone());
        let hook = Hook {
            trigger,
            component: None,
            action: action.to_string(),
            steps: steps.to_vec(),
        };
        self.insert_chain(
            &hook,
            Place {
                after: vec![],
                before: vec![],
            },
        );
        self
    }
}

/// Triggers whose hooks run after everything else the workflow does.
fn is_after_all(trigger: &str) -> bool {
    matches!(
        trigger,
        "post-provision"
            | "post-reprovision"
            | "post-deploy-all-components"
            | "post-update-inputs"
            | "post-deprovision"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;
    use crate::{Deployable as D, StepStatus};

    fn deploy(kind: WorkflowKind) -> Workflow {
        Workflow::deploy(
            "w".into(),
            "o".into(),
            "i".into(),
            kind,
            "c".into(),
            &[
                vec![D::named("sandbox", &[])],
                vec![D::named("db", &[])],
                vec![D::named("web", &["db"])],
            ],
        )
    }

    fn hook(trigger: &str, component: Option<&str>, steps: &[&str]) -> Hook {
        Hook {
            trigger: trigger.into(),
            component: component.map(String::from),
            action: format!("on-{trigger}"),
            steps: steps.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn index(w: &Workflow, component: &str, kind: StepKind) -> u32 {
        w.steps
            .iter()
            .find(|s| s.component == component && s.kind == kind && s.action.is_none())
            .map(|s| s.index)
            .unwrap()
    }

    fn hook_steps<'a>(w: &'a Workflow, trigger: &str) -> Vec<&'a crate::Step> {
        w.steps
            .iter()
            .filter(|s| s.action.as_ref().is_some_and(|a| a.trigger == trigger))
            .collect()
    }

    #[test]
    fn a_pre_deploy_hook_runs_its_steps_in_order_before_the_components_plan() {
        let w = deploy(WorkflowKind::DeployComponents).with_hooks(&[hook(
            "pre-deploy-component",
            Some("web"),
            &["check", "migrate"],
        )]);
        let steps = hook_steps(&w, "pre-deploy-component");
        assert_eq!(steps.len(), 2);
        let plan = w.step(index(&w, "web", StepKind::Plan)).unwrap();
        // The hook waits for what web's plan waited for (db's apply among them) ...
        assert!(steps[0].after.contains(&index(&w, "db", StepKind::Apply)));
        // ... its second step for its first, and web's plan for its last.
        assert_eq!(steps[1].after, vec![steps[0].index]);
        assert!(plan.after.contains(&steps[1].index));
        assert_eq!(steps[1].action.as_ref().unwrap().step, "migrate");
    }

    #[test]
    fn post_hooks_after_everything_wait_for_every_step_and_component_hooks_for_their_apply() {
        let w = deploy(WorkflowKind::Provision).with_hooks(&[
            hook("post-provision", None, &["notify"]),
            hook("post-deploy-component", Some("db"), &["seed"]),
            hook("post-provision-sandbox", None, &["label"]),
        ]);
        let seed = hook_steps(&w, "post-deploy-component")[0];
        assert_eq!(seed.after, vec![index(&w, "db", StepKind::Apply)]);
        let label = hook_steps(&w, "post-provision-sandbox")[0];
        assert_eq!(label.after, vec![index(&w, "sandbox", StepKind::Apply)]);
        let db_plan = w.step(index(&w, "db", StepKind::Plan)).unwrap();
        assert!(db_plan.after.contains(&label.index));
        let notify = hook_steps(&w, "post-provision")[0];
        assert_eq!(notify.after.len(), w.steps.len() - 1);
        assert!(notify.after.contains(&seed.index));
    }

    #[test]
    fn each_workflow_fires_only_its_own_triggers() {
        let all: Vec<Hook> = FIRED_TRIGGERS
            .iter()
            .map(|t| {
                let c = t.ends_with("-component").then_some("web");
                hook(t, c, &["s"])
            })
            .collect();
        let fired = |w: &Workflow| {
            let mut t: Vec<String> = w
                .steps
                .iter()
                .filter_map(|s| s.action.as_ref().map(|a| a.trigger.clone()))
                .collect();
            t.sort();
            t
        };
        let deploy_fires = fired(&deploy(WorkflowKind::DeployComponents).with_hooks(&all));
        assert_eq!(
            deploy_fires,
            [
                "post-deploy-all-components",
                "post-deploy-component",
                "pre-deploy-all-components",
                "pre-deploy-component"
            ]
        );
        let mut w = deploy(WorkflowKind::DeployComponents);
        w.cause = Some("update-inputs".into());
        assert!(fired(&w.with_hooks(&all)).contains(&"pre-update-inputs".to_string()));
        let mut w = deploy(WorkflowKind::Provision);
        w.scope.components = vec![SANDBOX.into()];
        let w = Workflow {
            steps: w.steps.into_iter().take(5).collect(),
            ..w
        };
        assert_eq!(
            fired(&w.with_hooks(&all)),
            [
                "post-reprovision",
                "post-reprovision-sandbox",
                "pre-reprovision",
                "pre-reprovision-sandbox"
            ]
        );
        let mut plan_only = deploy(WorkflowKind::DeployComponents);
        plan_only.scope.plan_only = true;
        assert!(fired(&plan_only.with_hooks(&all)).is_empty());
    }

    #[test]
    fn teardown_hooks_wrap_the_components_then_the_sandbox() {
        let w = Workflow::teardown(
            "w".into(),
            "o".into(),
            "i".into(),
            "c".into(),
            &[vec!["sandbox".into()], vec!["web".into()]],
        )
        .with_hooks(&[
            hook("pre-teardown-component", Some("web"), &["backup"]),
            hook("post-teardown-all-components", None, &["report"]),
            hook("pre-deprovision-sandbox", None, &["drain"]),
        ]);
        let backup = hook_steps(&w, "pre-teardown-component")[0];
        assert_eq!(backup.after, vec![index(&w, "web", StepKind::Approve)]);
        assert!(
            w.step(index(&w, "web", StepKind::Teardown))
                .unwrap()
                .after
                .contains(&backup.index)
        );
        let report = hook_steps(&w, "post-teardown-all-components")[0];
        assert!(
            w.step(index(&w, "sandbox", StepKind::Approve))
                .unwrap()
                .after
                .contains(&report.index)
        );
        let drain = hook_steps(&w, "pre-deprovision-sandbox")[0];
        assert!(
            w.step(index(&w, "sandbox", StepKind::Teardown))
                .unwrap()
                .after
                .contains(&drain.index)
        );
    }

    #[test]
    fn a_failing_hook_step_stops_the_workflow_and_a_retry_runs_it_again() {
        let mut w = deploy(WorkflowKind::DeployComponents).with_hooks(&[hook(
            "pre-deploy-all-components",
            None,
            &["check"],
        )]);
        let check = hook_steps(&w, "pre-deploy-all-components")[0].index;
        for s in &mut w.steps {
            if matches!(s.kind, StepKind::Build | StepKind::Sync)
                || s.component == SANDBOX && s.action.is_none()
            {
                s.status = StepStatus::Succeeded;
            }
        }
        assert_eq!(w.ready_steps(), vec![check]);
        w.advance(Timestamp::from_ms(0));
        w.finish_step(
            check,
            crate::StepOutcome::Failed("exit 1".into()),
            None,
            Timestamp::from_ms(0),
        )
        .unwrap();
        w.advance(Timestamp::from_ms(0));
        assert_eq!(w.status, crate::WorkflowStatus::Failed);
        let effects = w.retry(check, "someone", Timestamp::from_ms(0)).unwrap();
        assert!(effects.contains(&crate::Effect::Start { step: check }));
        assert_eq!(w.step(check).unwrap().attempt, 2);
    }
}
