//! Where an execution's time went, from its job's offer to its plugin's exit (`ferry jobs get
//! --timing`, `loadtest deploys`).
//!
//! Each point is µs since the epoch. The control plane's points (offered, record written, claim
//! arrived, claim decided) are by its clock; the runner's (offer seen, claim sent, grant back,
//! prepared, identity, plugin spawned and exited) by the runner host's. Every span is measured
//! between two points of the same clock, so the spans are true whatever the two clocks' offset;
//! only [`Timing::offer_to_spawn_us`] joins the clocks, and says so.

use serde::{Deserialize, Serialize};

/// One execution's points. 0 where a point was not reached (or not known: a claim another
/// scheduler decided knows no record write; a job granted at its offer has no claim's points, and
/// its runner's `offer_seen_us` is when the grant was announced, `granted_us` when it was made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Timing {
    /// The scheduler started offering the job: record, offer and doorbell sent together.
    pub offered_us: u64,
    /// The job record's write was acknowledged.
    pub written_us: u64,
    /// The runner's claim reached the scheduler.
    pub claimed_us: u64,
    /// The scheduler decided the claim (its compare-and-swap of the record left).
    pub decided_us: u64,
    /// The runner's own points.
    pub runner: RunnerPoints,
}

/// The runner's points of an execution, by its host's clock (as the runner reports them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerPoints {
    pub offer_seen_us: u64,
    pub claim_sent_us: u64,
    pub granted_us: u64,
    pub prepared_us: u64,
    pub identity_us: u64,
    pub spawned_us: u64,
    pub exited_us: u64,
}

/// A span of an execution: what it is, whose clock measured it, how long it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Span {
    /// A stable short name (`record_write`, `claim_trip`, ...): what loadtests group by.
    pub name: &'static str,
    /// What the span covers, for people.
    pub what: &'static str,
    /// `control plane` or `runner`.
    pub clock: &'static str,
    pub micros: u64,
}

/// Every span, in order: name, what it covers, whose clock, and its two ends.
type Rule = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Timing) -> (u64, u64),
);

const CP: &str = "control plane";
const RUNNER: &str = "runner";

const SPANS: &[Rule] = &[
    (
        "record_write",
        "the job record's write, acknowledged",
        CP,
        |t| (t.offered_us, t.written_us),
    ),
    (
        "offer_to_claim",
        "the doorbell to the runner, its claim back to the scheduler",
        CP,
        |t| (t.offered_us, t.claimed_us),
    ),
    (
        "runner_reacts",
        "the runner, from the offer seen to its claim sent",
        RUNNER,
        |t| (t.runner.offer_seen_us, t.runner.claim_sent_us),
    ),
    (
        "claim_decided",
        "the scheduler deciding the claim",
        CP,
        |t| (t.claimed_us, t.decided_us),
    ),
    (
        "claim_round_trip",
        "the claim, from sent to the grant back at the runner",
        RUNNER,
        |t| (t.runner.claim_sent_us, t.runner.granted_us),
    ),
    (
        "grant_wait",
        "granted at the offer: the runner, from the grant announced to the grant made",
        RUNNER,
        |t| {
            if t.runner.claim_sent_us == 0 {
                (t.runner.offer_seen_us, t.runner.granted_us)
            } else {
                (0, 0)
            }
        },
    ),
    (
        "prepare",
        "the artifact checked and unpacked, the job file written",
        RUNNER,
        |t| (t.runner.granted_us, t.runner.prepared_us),
    ),
    ("identity", "the role to run as assumed", RUNNER, |t| {
        (t.runner.prepared_us, t.runner.identity_us)
    }),
    ("spawn", "the plugin process started", RUNNER, |t| {
        (t.runner.identity_us, t.runner.spawned_us)
    }),
    (
        "plugin",
        "the plugin process, from start to exit",
        RUNNER,
        |t| (t.runner.spawned_us, t.runner.exited_us),
    ),
];

impl Timing {
    /// The spans whose two ends are both known, in the order they happen.
    pub fn spans(&self) -> Vec<Span> {
        SPANS
            .iter()
            .filter_map(|(name, what, clock, ends)| {
                let (from, to) = ends(self);
                (from > 0 && to >= from).then(|| Span {
                    name,
                    what,
                    clock,
                    micros: to - from,
                })
            })
            .collect()
    }

    /// From the offer to the plugin's start, joining the two clocks: exact when the runner's
    /// clock is the control plane's (one host, as in the loadtests), otherwise off by their
    /// offset.
    pub fn offer_to_spawn_us(&self) -> Option<u64> {
        let (from, to) = (self.offered_us, self.runner.spawned_us);
        (from > 0 && to >= from).then(|| to - from)
    }

    /// Whether the execution was granted at its job's offer, no claim asked
    /// (`pregrants.rs`): its claim's points are 0, its decision's is not.
    pub fn granted_at_offer(&self) -> bool {
        self.claimed_us == 0 && self.runner.claim_sent_us == 0 && self.decided_us > 0
    }

    /// The names of every span [`Timing::spans`] may give, in order.
    pub fn span_names() -> impl Iterator<Item = &'static str> {
        SPANS.iter().map(|r| r.0)
    }
}

impl crate::Job {
    /// Marks the control plane's points of the execution this claim just granted: when the
    /// record's write was acknowledged (0: not known here), the claim arrived, it was decided.
    pub fn time_claim(&mut self, written_us: u64, claimed_us: u64, decided_us: u64) {
        let offered_us = self.offered_us;
        if let Some(e) = self.executions.last_mut() {
            e.timing = Timing {
                offered_us,
                written_us,
                claimed_us,
                decided_us,
                runner: e.timing.runner,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_span_is_measured_on_one_clock_and_unknown_ends_give_none() {
        // The runner's clock is 10 s behind the control plane's: no span shows it.
        let skew = 10_000_000;
        let t = Timing {
            offered_us: 100_000_000,
            written_us: 100_000_400,
            claimed_us: 100_001_000,
            decided_us: 100_001_200,
            runner: RunnerPoints {
                offer_seen_us: 100_000_300 - skew,
                claim_sent_us: 100_000_350 - skew,
                granted_us: 100_001_900 - skew,
                prepared_us: 100_003_900 - skew,
                identity_us: 100_003_900 - skew,
                spawned_us: 100_004_400 - skew,
                exited_us: 0,
            },
        };
        let spans: Vec<(&str, u64)> = t.spans().iter().map(|s| (s.name, s.micros)).collect();
        assert_eq!(
            spans,
            vec![
                ("record_write", 400),
                ("offer_to_claim", 1000),
                ("runner_reacts", 50),
                ("claim_decided", 200),
                ("claim_round_trip", 1550),
                ("prepare", 2000),
                ("identity", 0),
                ("spawn", 500),
            ]
        );
        // Joining the clocks shows the skew: said, not hidden.
        assert_eq!(t.offer_to_spawn_us(), None);
        let same = Timing {
            runner: RunnerPoints {
                spawned_us: 100_004_400,
                ..t.runner
            },
            ..t
        };
        assert_eq!(same.offer_to_spawn_us(), Some(4400));
        assert_eq!(Timing::default().spans(), vec![]);
        assert!(!t.granted_at_offer() && !Timing::default().granted_at_offer());
        // Granted at the offer: no claim's points, so no claim's spans.
        let granted = Timing {
            claimed_us: 0,
            runner: RunnerPoints {
                claim_sent_us: 0,
                ..same.runner
            },
            ..same
        };
        assert!(granted.granted_at_offer());
        let names: Vec<&str> = granted.spans().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["record_write", "grant_wait", "prepare", "identity", "spawn"],
            "{granted:?}"
        );
        assert_eq!(Timing::span_names().count(), SPANS.len());
    }
}
