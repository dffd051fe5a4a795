//! Releases: one app config version rolled out over many installs in waves, each wave gated on
//! its installs' deploys and health before the next starts.
//!
//! Like the step state machine, a release's logic is a pure function of its record: given the
//! record and the time, [`Release::next`] says what to start (deploys, health checks), when the
//! release halts, and when it is done; the scheduler performs those effects and feeds back how
//! each workflow ended ([`Release::workflow_ended`]). Every effect is recorded on the release
//! (the workflow ids it starts are derived from the release, the wave and the install) before
//! it is performed, so a scheduler restarted mid-wave starts nothing twice.

use crate::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseStatus {
    Running,
    /// Paused by a person: nothing new starts until it is resumed.
    Paused,
    /// A wave had more failures than allowed: nothing new starts; `resume` goes on.
    Halted,
    Succeeded,
    Cancelled,
}

impl ReleaseStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, ReleaseStatus::Succeeded | ReleaseStatus::Cancelled)
    }
}

/// Where one install of a wave is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetStatus {
    Pending,
    Deploying,
    /// Deployed; its health action runs.
    Checking,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Target {
    pub install: String,
    pub status: TargetStatus,
    /// The deploy's workflow, once started.
    pub deploy: Option<String>,
    /// The health action's run, once started.
    pub health: Option<String>,
    /// Why it failed.
    pub message: Option<String>,
    /// 1 for its first deploy, one more each time a resume tries it again.
    #[serde(default)]
    pub attempt: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Wave {
    pub targets: Vec<Target>,
    /// When its deploys started (ms).
    pub started_ms: Option<u64>,
    /// When every install of it passed (ms): its soak runs from then.
    pub passed_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReleaseSettings {
    /// Failed installs a wave may have and the release still go on.
    pub max_failures: u32,
    /// Least time between one wave's start and the next's (ms).
    pub delay_ms: u64,
    /// How long a wave that passed is watched before the next starts (ms).
    pub soak_ms: u64,
    /// The action run on each deployed install of a wave as its health gate.
    pub health_action: Option<String>,
    /// At most this many deploys of a wave run at once (0: all).
    pub concurrency: u32,
    /// Its deploys' plans are approved without review; otherwise each install's own setting
    /// holds, and the release waits for their decisions.
    #[serde(default)]
    pub approve_all: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Release {
    pub id: String,
    pub org: String,
    pub app: String,
    pub config_id: String,
    pub settings: ReleaseSettings,
    pub waves: Vec<Wave>,
    pub status: ReleaseStatus,
    /// Why it halted.
    pub reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

/// The mark of a release not finished: the scheduler's sweep reads these, not the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OpenRelease {
    pub org: String,
    pub id: String,
}

/// What the scheduler does for a release now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseEffect {
    /// Deploy the release's config to the install, as workflow `workflow`.
    Deploy {
        wave: usize,
        install: String,
        workflow: String,
    },
    /// Run the health action on the install, as workflow `workflow`.
    Check {
        wave: usize,
        install: String,
        workflow: String,
    },
    /// The release has just halted or ended.
    Ended,
}

/// Splits installs into waves by cumulative sizes: `1,10%,50%,100%` over 20 installs is waves of
/// 1, 1, 8 and 10 (each wave at least one install, the last one every install left). An empty
/// wave is dropped.
///
/// Every size must be more than nothing, and sizes of one kind must grow: `0%` or `0` (which
/// would leave the whole fleet to the next, or last, wave) and `50%,10%` are refused, so a typo
/// never sends a release to every install at once.
pub fn plan_waves(installs: &[String], spec: &str) -> Result<Vec<Vec<String>>, String> {
    let n = installs.len();
    let mut cuts = Vec::new();
    let (mut last_pct, mut last_count) = (0.0_f64, 0_usize);
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let upto = match part.strip_suffix('%') {
            Some(p) => {
                let pct: f64 = p
                    .parse()
                    .map_err(|_| format!("`{part}` is not a percentage"))?;
                if !(pct > 0.0 && pct <= 100.0) {
                    return Err(format!("`{part}` is not more than 0% and at most 100%"));
                }
                if pct <= last_pct {
                    return Err(format!(
                        "`{part}` is not larger than the wave before ({last_pct}%): waves are cumulative sizes"
                    ));
                }
                last_pct = pct;
                ((n as f64) * pct / 100.0).ceil() as usize
            }
            None => {
                let count = part
                    .parse::<usize>()
                    .map_err(|_| format!("`{part}` is neither a count nor a percentage"))?;
                if count == 0 {
                    return Err(format!("`{part}`: a wave has at least one install"));
                }
                if count <= last_count {
                    return Err(format!(
                        "`{part}` is not larger than the wave before ({last_count}): waves are cumulative sizes"
                    ));
                }
                last_count = count;
                count
            }
        };
        cuts.push(upto.min(n));
    }
    if cuts.is_empty() {
        return Err("no waves: give sizes like `1,10%,100%`".into());
    }
    let mut out = Vec::new();
    let mut done = 0;
    for (i, cut) in cuts.iter().enumerate() {
        let last = i + 1 == cuts.len();
        let upto = if last { n } else { (*cut).max(done + 1).min(n) };
        if upto > done {
            out.push(installs[done..upto].to_vec());
            done = upto;
        }
    }
    Ok(out)
}

/// The cause a release's workflows carry (`release R`): how a workflow's end finds its release.
pub fn release_cause(release: &str) -> String {
    format!("release {release}")
}

impl crate::Workflow {
    /// The release this workflow is a deploy or a health check of, if it is one.
    pub fn release_of(&self) -> Option<&str> {
        self.cause.as_deref()?.strip_prefix("release ")
    }
}

impl Release {
    /// A release starting at `now.ms()` over `waves`.
    pub fn new(
        id: String,
        org: &str,
        app: &str,
        config_id: &str,
        settings: ReleaseSettings,
        waves: Vec<Vec<String>>,
        now: Timestamp,
    ) -> Release {
        let now = crate::format_ms(now.ms());
        Release {
            id,
            org: org.into(),
            app: app.into(),
            config_id: config_id.into(),
            settings,
            waves: waves
                .into_iter()
                .map(|w| Wave {
                    targets: w
                        .into_iter()
                        .map(|install| Target {
                            install,
                            status: TargetStatus::Pending,
                            deploy: None,
                            health: None,
                            message: None,
                            attempt: 0,
                        })
                        .collect(),
                    started_ms: None,
                    passed_ms: None,
                })
                .collect(),
            status: ReleaseStatus::Running,
            reason: None,
            created_at: now.clone(),
            updated_at: now,
            finished_at: None,
        }
    }

    pub fn open_mark(&self) -> OpenRelease {
        OpenRelease {
            org: self.org.clone(),
            id: self.id.clone(),
        }
    }

    /// The id of the workflow the release starts for a target (`deploy` or `health`): a
    /// function of the release, the wave, the install, the attempt and the time it is decided,
    /// recorded before it is started, so a workflow is created once.
    fn workflow_id(&self, wave: usize, t: &Target, what: &str, now: Timestamp) -> String {
        let seed = format!(
            "{}/{}/{wave}/{}/{what}/{}",
            self.org, self.id, t.install, t.attempt
        );
        crate::id_at(now.ms(), &seed)
    }

    /// The wave in progress: the first that has not passed.
    pub fn current_wave(&self) -> Option<usize> {
        self.waves.iter().position(|w| w.passed_ms.is_none())
    }

    /// Advances the release at `now.ms()`: records and returns what to start, halts a wave with
    /// too many failures, moves to the next wave once this one has passed, soaked and waited its
    /// delay, and ends the release after the last.
    pub fn next(&mut self, now: Timestamp) -> Vec<ReleaseEffect> {
        if self.status != ReleaseStatus::Running {
            return vec![];
        }
        let Some(w) = self.current_wave() else {
            self.status = ReleaseStatus::Succeeded;
            self.finished_at = Some(crate::format_ms(now.ms()));
            return vec![ReleaseEffect::Ended];
        };
        // A wave starts once the previous one has soaked and the delay since its start is over.
        if self.waves[w].started_ms.is_none() {
            if let Some(prev) = w.checked_sub(1).map(|p| &self.waves[p]) {
                let soaked = prev.passed_ms.unwrap_or(0) + self.settings.soak_ms;
                let delayed = prev.started_ms.unwrap_or(0) + self.settings.delay_ms;
                if now.ms() < soaked.max(delayed) {
                    return vec![];
                }
            }
            self.waves[w].started_ms = Some(now.ms());
        }
        let failed = self.waves[w]
            .targets
            .iter()
            .filter(|t| t.status == TargetStatus::Failed)
            .count();
        if failed > self.settings.max_failures as usize {
            self.status = ReleaseStatus::Halted;
            self.updated_at = crate::format_ms(now.ms());
            self.reason = Some(format!(
                "wave {} has {failed} failed install(s), more than the {} allowed",
                w + 1,
                self.settings.max_failures
            ));
            return vec![ReleaseEffect::Ended];
        }
        let running = self.waves[w]
            .targets
            .iter()
            .filter(|t| matches!(t.status, TargetStatus::Deploying | TargetStatus::Checking))
            .count();
        let room = match self.settings.concurrency {
            0 => usize::MAX,
            c => (c as usize).saturating_sub(running),
        };
        let mut effects = Vec::new();
        let pending: Vec<usize> = self.waves[w]
            .targets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.status == TargetStatus::Pending)
            .map(|(i, _)| i)
            .take(room)
            .collect();
        for i in pending {
            self.waves[w].targets[i].attempt += 1;
            let install = self.waves[w].targets[i].install.clone();
            let workflow = self.workflow_id(w, &self.waves[w].targets[i], "deploy", now);
            let t = &mut self.waves[w].targets[i];
            t.status = TargetStatus::Deploying;
            t.deploy = Some(workflow.clone());
            effects.push(ReleaseEffect::Deploy {
                wave: w,
                install,
                workflow,
            });
        }
        let all_done = self.waves[w]
            .targets
            .iter()
            .all(|t| matches!(t.status, TargetStatus::Succeeded | TargetStatus::Failed));
        if all_done && effects.is_empty() {
            self.waves[w].passed_ms = Some(now.ms());
            // The next wave may start at once (no soak, no delay): go round again.
            effects.extend(self.next(now));
        }
        if !effects.is_empty() {
            self.updated_at = crate::format_ms(now.ms());
        }
        effects
    }

    /// How a workflow the release started ended (`succeeded`, or why not). Returns the effects
    /// that follow: the health check of a deployed install. A workflow the release does not know
    /// changes nothing.
    pub fn workflow_ended(
        &mut self,
        workflow: &str,
        outcome: Result<(), String>,
        now: Timestamp,
    ) -> Vec<ReleaseEffect> {
        let health = self.settings.health_action.clone();
        let mut effects = Vec::new();
        let (org, id) = (self.org.clone(), self.id.clone());
        for (w, wave) in self.waves.iter_mut().enumerate() {
            for t in &mut wave.targets {
                let is_deploy = t.deploy.as_deref() == Some(workflow);
                let is_check = t.health.as_deref() == Some(workflow);
                match (is_deploy, is_check, t.status, &outcome) {
                    (true, _, TargetStatus::Deploying, Ok(())) if health.is_some() => {
                        let seed = format!("{org}/{id}/{w}/{}/health/{}", t.install, t.attempt);
                        let check = crate::id_at(now.ms(), &seed);
                        t.status = TargetStatus::Checking;
                        t.health = Some(check.clone());
                        effects.push(ReleaseEffect::Check {
                            wave: w,
                            install: t.install.clone(),
                            workflow: check,
                        });
                    }
                    (true, _, TargetStatus::Deploying, Ok(()))
                    | (_, true, TargetStatus::Checking, Ok(())) => {
                        t.status = TargetStatus::Succeeded;
                    }
                    (true, _, TargetStatus::Deploying, Err(why)) => {
                        t.status = TargetStatus::Failed;
                        t.message = Some(format!("deploy {workflow}: {why}"));
                    }
                    (_, true, TargetStatus::Checking, Err(why)) => {
                        t.status = TargetStatus::Failed;
                        t.message = Some(format!("health check {workflow}: {why}"));
                    }
                    _ => continue,
                }
                self.updated_at = crate::format_ms(now.ms());
            }
        }
        effects
    }

    /// Resumes a paused or halted release at `now.ms()`: failed installs of the current wave are
    /// tried again.
    pub fn resume(&mut self, now: Timestamp) -> Result<(), String> {
        if !matches!(self.status, ReleaseStatus::Paused | ReleaseStatus::Halted) {
            return Err(format!(
                "the release is {:?}, not paused or halted",
                self.status
            ));
        }
        if let Some(w) = self.current_wave() {
            for t in &mut self.waves[w].targets {
                if t.status == TargetStatus::Failed {
                    t.status = TargetStatus::Pending;
                    t.deploy = None;
                    t.health = None;
                    t.message = None;
                }
            }
        }
        self.status = ReleaseStatus::Running;
        self.reason = None;
        self.updated_at = crate::format_ms(now.ms());
        Ok(())
    }

    /// Pauses a running release at `now.ms()`: no new deploy starts until it is resumed.
    pub fn pause(&mut self, now: Timestamp) -> Result<(), String> {
        if self.status != ReleaseStatus::Running {
            return Err(format!("the release is {:?}, not running", self.status));
        }
        self.status = ReleaseStatus::Paused;
        self.updated_at = crate::format_ms(now.ms());
        Ok(())
    }

    /// Cancels a release that has not ended, at `now.ms()`.
    pub fn cancel(&mut self, now: Timestamp) -> Result<(), String> {
        if self.status.is_terminal() {
            return Err(format!("the release has ended ({:?})", self.status));
        }
        self.status = ReleaseStatus::Cancelled;
        self.finished_at = Some(crate::format_ms(now.ms()));
        self.updated_at = self.finished_at.clone().unwrap_or_default();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_releases_workflows_name_their_release() {
        let mut w = crate::Workflow::requested(
            "w".into(),
            "o",
            "i",
            crate::WorkflowKind::DeployComponents,
            "c",
            Default::default(),
            crate::time::at("2026-11-27T10:00:00.000Z"),
        );
        assert_eq!(w.release_of(), None);
        w.cause = Some(release_cause("r1"));
        assert_eq!(w.release_of(), Some("r1"));
        w.cause = Some("update-inputs".into());
        assert_eq!(w.release_of(), None);
    }

    fn installs(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("i{i}")).collect()
    }

    fn release(n: usize, spec: &str, settings: ReleaseSettings) -> Release {
        let waves = plan_waves(&installs(n), spec).unwrap();
        Release::new(
            "r".into(),
            "o",
            "a",
            "c",
            settings,
            waves,
            Timestamp::from_ms(0),
        )
    }

    fn deploys(e: &[ReleaseEffect]) -> Vec<String> {
        e.iter()
            .filter_map(|e| match e {
                ReleaseEffect::Deploy { install, .. } => Some(install.clone()),
                _ => None,
            })
            .collect()
    }

    fn end_all(r: &mut Release, effects: &[ReleaseEffect], fail: &[&str]) -> Vec<ReleaseEffect> {
        let mut more = Vec::new();
        for e in effects {
            let (install, wf) = match e {
                ReleaseEffect::Deploy {
                    install, workflow, ..
                }
                | ReleaseEffect::Check {
                    install, workflow, ..
                } => (install, workflow),
                ReleaseEffect::Ended => continue,
            };
            let outcome =
                if fail.contains(&install.as_str()) && matches!(e, ReleaseEffect::Check { .. }) {
                    Err("exit 1".to_string())
                } else {
                    Ok(())
                };
            more.extend(r.workflow_ended(wf, outcome, Timestamp::from_ms(0)));
        }
        more
    }

    #[test]
    fn waves_are_cumulative_sizes_each_at_least_one_install() {
        let w = plan_waves(&installs(20), "1,10%,50%,100%").unwrap();
        assert_eq!(w.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 8, 10]);
        let w = plan_waves(&installs(6), "1,50%,100%").unwrap();
        assert_eq!(w.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(plan_waves(&installs(3), "1,abc").is_err());
        assert!(plan_waves(&installs(3), "150%").is_err());
    }

    #[test]
    fn a_wave_of_nothing_or_one_smaller_than_the_last_is_refused() {
        for spec in [
            "0%", "0", "0,100%", "0%,100%", "50%,10%", "5,2,100%", "10%,10%",
        ] {
            let e = plan_waves(&installs(20), spec).unwrap_err();
            assert!(e.contains('`'), "{spec}: {e}");
        }
        assert!(plan_waves(&installs(20), "100%").is_ok());
        assert!(plan_waves(&installs(20), "5,10%,20,100%").is_ok());
    }

    #[test]
    fn a_wave_starts_after_the_previous_passed_its_health_gate_and_soaked() {
        let mut r = release(
            6,
            "1,50%,100%",
            ReleaseSettings {
                health_action: Some("health".into()),
                soak_ms: 1000,
                ..Default::default()
            },
        );
        let e = r.next(Timestamp::from_ms(0));
        assert_eq!(deploys(&e), ["i1"]);
        let checks = end_all(&mut r, &e, &[]);
        assert!(matches!(&checks[..], [ReleaseEffect::Check { install, .. }] if install == "i1"));
        assert!(
            r.next(Timestamp::from_ms(10)).is_empty(),
            "the wave's health check runs"
        );
        end_all(&mut r, &checks, &[]);
        assert!(
            r.next(Timestamp::from_ms(20)).is_empty(),
            "wave 1 passed at 20: it soaks until 1020"
        );
        let e = r.next(Timestamp::from_ms(1020));
        assert_eq!(deploys(&e), ["i2", "i3"]);
        // Nothing starts twice: the deploys are recorded.
        assert!(deploys(&r.next(Timestamp::from_ms(1030))).is_empty());
    }

    #[test]
    fn a_failed_health_check_over_the_limit_halts_and_the_later_waves_never_start() {
        let mut r = release(
            6,
            "1,50%,100%",
            ReleaseSettings {
                health_action: Some("health".into()),
                ..Default::default()
            },
        );
        let e = r.next(Timestamp::from_ms(0));
        let c = end_all(&mut r, &e, &[]);
        end_all(&mut r, &c, &[]);
        let e = r.next(Timestamp::from_ms(1));
        assert_eq!(deploys(&e), ["i2", "i3"]);
        let c = end_all(&mut r, &e, &[]);
        end_all(&mut r, &c, &["i3"]);
        assert_eq!(r.next(Timestamp::from_ms(2)), [ReleaseEffect::Ended]);
        assert_eq!(r.status, ReleaseStatus::Halted);
        assert!(r.reason.as_deref().unwrap().contains("wave 2 has 1 failed"));
        assert!(r.next(Timestamp::from_ms(3)).is_empty());
        assert!(
            r.waves[2]
                .targets
                .iter()
                .all(|t| t.status == TargetStatus::Pending)
        );

        // Resumed after the fix: the failed install is deployed again, then the last wave.
        r.resume(Timestamp::from_ms(4)).unwrap();
        let e = r.next(Timestamp::from_ms(4));
        assert_eq!(deploys(&e), ["i3"]);
        let c = end_all(&mut r, &e, &[]);
        end_all(&mut r, &c, &[]);
        let e = r.next(Timestamp::from_ms(5));
        assert_eq!(deploys(&e), ["i4", "i5", "i6"]);
        let c = end_all(&mut r, &e, &[]);
        end_all(&mut r, &c, &[]);
        assert_eq!(r.next(Timestamp::from_ms(6)), [ReleaseEffect::Ended]);
        assert_eq!(r.status, ReleaseStatus::Succeeded);
    }

    #[test]
    fn a_release_is_a_function_of_the_times_it_is_given() {
        let mut r = release(1, "100%", ReleaseSettings::default());
        assert_eq!(r.created_at, crate::format_ms(0));
        r.pause(Timestamp::from_ms(1_000)).unwrap();
        assert_eq!(r.updated_at, crate::format_ms(1_000));
        r.cancel(Timestamp::from_ms(2_000)).unwrap();
        assert_eq!(
            r.finished_at.as_deref(),
            Some(crate::format_ms(2_000).as_str())
        );
        // And it reads no clock of its own.
        let clock = ["crate::", "now()"].concat();
        assert!(!include_str!("releases.rs").contains(&clock));
    }

    #[test]
    fn concurrency_bounds_a_waves_deploys_and_pause_stops_new_ones() {
        let mut r = release(
            4,
            "100%",
            ReleaseSettings {
                concurrency: 2,
                ..Default::default()
            },
        );
        let e = r.next(Timestamp::from_ms(0));
        assert_eq!(deploys(&e), ["i1", "i2"]);
        r.pause(Timestamp::from_ms(1)).unwrap();
        end_all(&mut r, &e, &[]);
        assert!(r.next(Timestamp::from_ms(1)).is_empty());
        r.resume(Timestamp::from_ms(2)).unwrap();
        assert_eq!(deploys(&r.next(Timestamp::from_ms(2))), ["i3", "i4"]);
    }
}
