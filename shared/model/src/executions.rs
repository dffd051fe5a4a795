//! Which execution a runner's message speaks for, as pure functions of the job record.
//!
//! An execution has two names. Its public id, `<job>-<attempt>`, is what the API, the CLI and job
//! logs show. Its token, `<job>-<attempt>-<key>`, is what the claiming runner gets (in its own
//! inbox, nowhere else) and sends back with every event, log batch and lease renewal: the key is
//! random, and the record keeps only its SHA-256. So a message counts for an execution only if its
//! sender was granted that execution — no other install, and no reader of the API, can name it —
//! and the runner's JetStream de-duplication ids, which carry the token, cannot be pre-empted by
//! anyone who merely knows the job.

use sha2::{Digest, Sha256};

use crate::{Execution, Job};

/// The public id of attempt `attempt` at job `job`.
pub fn execution_public_id(job: &str, attempt: u32) -> String {
    format!("{job}-{attempt}")
}

/// The token a runner is granted for execution `public_id` with random `key` (empty: the token is
/// the public id, for tests and tools that need no secrecy).
pub fn execution_token(public_id: &str, key: &str) -> String {
    match key {
        "" => public_id.to_string(),
        k => format!("{public_id}-{k}"),
    }
}

/// What the record keeps of a key: its hex SHA-256 (empty for no key).
pub fn execution_key_hash(key: &str) -> String {
    if key.is_empty() {
        return String::new();
    }
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Execution {
    /// Whether `token` is this execution's token: its public id and the key whose hash it keeps.
    pub fn has_token(&self, token: &str) -> bool {
        let Some(rest) = token.strip_prefix(self.id.as_str()) else {
            return false;
        };
        match rest.strip_prefix('-') {
            None => rest.is_empty() && self.key_sha256.is_empty(),
            Some(key) => !self.key_sha256.is_empty() && execution_key_hash(key) == self.key_sha256,
        }
    }
}

impl Job {
    /// The execution `token` names, if it names one of this job's: any of them, current or ended
    /// (a lost execution's log lines are part of the job's history).
    pub fn execution_by_token(&self, token: &str) -> Option<&Execution> {
        self.executions.iter().find(|e| e.has_token(token))
    }

    /// Checks, before anything of it is stored, that a result reported by install `install` for
    /// execution `token` is one [`Job::finish`] would record: the job is the install's, and the
    /// token is its current execution's. `Ok(false)` when the job has already ended (a repeated
    /// result: nothing to store).
    pub fn accepts_result(&self, install: &str, token: &str) -> Result<bool, String> {
        if self.install != install {
            return Err(format!(
                "job {} belongs to install {}, not {install}",
                self.id, self.install
            ));
        }
        if self.status.is_terminal() {
            return Ok(false);
        }
        if self.current_execution().is_none_or(|e| !e.has_token(token)) {
            return Err(format!(
                "a result for job {} from an execution that is not its current one",
                self.id
            ));
        }
        Ok(true)
    }

    /// Checks that a log batch published on install `install`'s subject for this job, naming
    /// execution `token`, comes from an execution granted to that install; returns the execution's
    /// public id (what log readers show in place of the token).
    pub fn accepts_log(&self, install: &str, token: &str) -> Result<&str, String> {
        if self.install != install {
            return Err(format!(
                "job {} belongs to install {}, not {install}",
                self.id, self.install
            ));
        }
        self.execution_by_token(token)
            .map(|e| e.id.as_str())
            .ok_or_else(|| format!("a log batch for job {} from no execution of it", self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;
    use crate::time::at;
    use crate::{ExecutionStatus, JobKind, JobStatus};

    fn claimed(key: &str) -> (Job, String) {
        let mut j = Job::queued(
            "j".into(),
            "o".into(),
            "b".into(),
            "w".into(),
            1,
            JobKind::Plan,
            "c".into(),
            at("2026-01-01T00:00:00.000Z"),
        );
        let g = j
            .claim("b", "r", Timestamp::from_ms(0), 1_000, key)
            .unwrap();
        (j, g.execution_id)
    }

    #[test]
    fn the_record_keeps_the_public_id_and_only_a_hash_of_the_key() {
        let (j, token) = claimed("k3y");
        assert_eq!(token, "j-1-k3y");
        let e = &j.executions[0];
        assert_eq!(e.id, "j-1");
        assert!(!serde_json::to_string(&j).unwrap().contains("k3y"));
        assert!(
            !serde_json::to_string(&j.clone().redacted())
                .unwrap()
                .contains(&e.key_sha256)
        );
        assert!(e.has_token("j-1-k3y"));
        for forged in [
            "j-1", "j-1-", "j-1-k3", "j-1-k3y-", "j-1-K3Y", "j-11-k3y", "",
        ] {
            assert!(!e.has_token(forged), "{forged}");
        }
    }

    #[test]
    fn a_result_is_accepted_only_from_the_install_and_the_current_executions_token() {
        let (mut j, token) = claimed("k3y");
        assert!(
            j.accepts_result("a", &token)
                .unwrap_err()
                .contains("install b, not a")
        );
        assert!(
            j.accepts_result("b", "j-1").is_err(),
            "the public id is not the token"
        );
        assert_eq!(j.accepts_result("b", &token), Ok(true));
        j.status = JobStatus::Finished;
        assert_eq!(j.accepts_result("b", &token), Ok(false));
    }

    #[test]
    fn log_batches_count_from_any_execution_of_the_job_by_token_only() {
        let (mut j, first) = claimed("one");
        j.executions[0].status = ExecutionStatus::Lost;
        j.status = JobStatus::Queued;
        let second = j
            .claim("b", "r", Timestamp::from_ms(0), 1_000, "two")
            .unwrap()
            .execution_id;
        assert_eq!(j.accepts_log("b", &first), Ok("j-1"));
        assert_eq!(j.accepts_log("b", &second), Ok("j-2"));
        assert!(j.accepts_log("a", &second).is_err());
        assert!(j.accepts_log("b", "j-2").is_err());
        assert!(j.accepts_log("b", "j-2-one").is_err());
    }

    #[test]
    fn without_a_key_the_token_is_the_public_id() {
        let (j, token) = claimed("");
        assert_eq!(token, "j-1");
        assert!(j.executions[0].has_token("j-1"));
        assert!(!j.executions[0].has_token("j-1-x"));
    }
}
