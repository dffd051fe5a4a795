//! The binary codec for everything on the runner protocol and the control stream.
//!
//! Frame: `[version: u8][kind: u8][postcard payload]`. postcard (not bincode, which is unmaintained:
//! RUSTSEC-2025-0141) is compact, stable and documented. postcard is not self-describing, so the two
//! header bytes are what lets a receiver refuse a message it cannot read instead of misreading it: the
//! version says which schema generation wrote it, the kind says which message type it is.

use serde::{Serialize, de::DeserializeOwned};

/// The protocol generation this build speaks. Bump it when a message changes shape.
pub const PROTOCOL_VERSION: u8 = 14;

/// A type that travels on the wire. `KIND` is unique per type (checked by a unit test).
pub trait Message: Serialize + DeserializeOwned {
    const KIND: u8;
    const NAME: &'static str;
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("empty message")]
    Empty,
    #[error("message too short: {0} bytes")]
    Truncated(usize),
    #[error("unsupported protocol version {got} (this build speaks version {supported})")]
    UnsupportedVersion { got: u8, supported: u8 },
    #[error("expected a {expected} message (kind {expected_kind}), got kind {got}")]
    WrongKind {
        expected: &'static str,
        expected_kind: u8,
        got: u8,
    },
    #[error("malformed {kind} message: {reason}")]
    Malformed { kind: &'static str, reason: String },
}

pub fn encode<M: Message>(msg: &M) -> Vec<u8> {
    let out = vec![PROTOCOL_VERSION, M::KIND];
    // Serializing our own plain data types into a Vec cannot fail: postcard only errors on types it
    // cannot represent (e.g. maps with unknown length), which the messages module never uses.
    match postcard::to_extend(msg, out) {
        Ok(v) => v,
        Err(e) => unreachable!("postcard cannot encode {}: {e}", M::NAME),
    }
}

pub fn decode<M: Message>(bytes: &[u8]) -> Result<M, CodecError> {
    match bytes {
        [] => Err(CodecError::Empty),
        [_] => Err(CodecError::Truncated(1)),
        [version, kind, payload @ ..] => {
            if *version != PROTOCOL_VERSION {
                return Err(CodecError::UnsupportedVersion {
                    got: *version,
                    supported: PROTOCOL_VERSION,
                });
            }
            if *kind != M::KIND {
                return Err(CodecError::WrongKind {
                    expected: M::NAME,
                    expected_kind: M::KIND,
                    got: *kind,
                });
            }
            let (msg, rest) =
                postcard::take_from_bytes::<M>(payload).map_err(|e| CodecError::Malformed {
                    kind: M::NAME,
                    reason: e.to_string(),
                })?;
            if !rest.is_empty() {
                return Err(CodecError::Malformed {
                    kind: M::NAME,
                    reason: format!("{} trailing bytes", rest.len()),
                });
            }
            Ok(msg)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::*;

    fn offer() -> JobOffer {
        JobOffer {
            job_id: "01jobid".into(),
            org: "acme".into(),
            install: "prod".into(),
            workflow_id: "01wf".into(),
            spec: JobSpec::Plan(ComponentJob {
                component: "db".into(),
                kind: ComponentKind::Terraform,
                artifact_digest: "sha256:abc".into(),
                vars: vec![("region".into(), "eu".into())],
                env: vec![],
                applied_digest: None,
                redact: vec![],
                settings: Default::default(),
                timeout_secs: None,
                cluster: None,
                policies: vec![],
                run_as: None,
                secret_syncs: vec![],
            }),
            timeouts: Timeouts::default(),
        }
    }

    #[test]
    fn round_trip() {
        let o = offer();
        let bytes = encode(&o);
        assert_eq!(bytes[0], PROTOCOL_VERSION);
        assert_eq!(bytes[1], JobOffer::KIND);
        assert_eq!(decode::<JobOffer>(&bytes).unwrap(), o);

        let ev = JobEvent {
            job_id: "j".into(),
            execution_id: "e".into(),
            seq: 3,
            at_ms: 17,
            body: EventBody::Finished(Box::new(JobResult {
                status: Outcome::Succeeded,
                outputs_json: r#"{"a":1}"#.into(),
                plan: Some(PlanData {
                    digest: "sha256:x".into(),
                    changes: true,
                    summary: "1 to add".into(),
                    diff_json: br#"{"resource_changes":[]}"#.to_vec(),
                }),
                error: None,
                sensitive_outputs: vec![],
                offloaded: None,
                ran_as: None,
                timing: Default::default(),
            })),
        };
        assert_eq!(decode::<JobEvent>(&encode(&ev)).unwrap(), ev);
    }

    #[test]
    fn unknown_version_is_a_typed_error() {
        let mut bytes = encode(&offer());
        bytes[0] = 99;
        assert_eq!(
            decode::<JobOffer>(&bytes),
            Err(CodecError::UnsupportedVersion {
                got: 99,
                supported: PROTOCOL_VERSION
            })
        );
    }

    #[test]
    fn wrong_kind_is_a_typed_error() {
        let bytes = encode(&offer());
        assert!(
            matches!(decode::<JobEvent>(&bytes), Err(CodecError::WrongKind { got, .. }) if got == JobOffer::KIND)
        );
    }

    #[test]
    fn garbage_and_truncation_are_typed_errors() {
        assert_eq!(decode::<JobOffer>(&[]), Err(CodecError::Empty));
        assert_eq!(
            decode::<JobOffer>(&[PROTOCOL_VERSION]),
            Err(CodecError::Truncated(1))
        );
        let garbage = [
            PROTOCOL_VERSION,
            JobOffer::KIND,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
        ];
        assert!(matches!(
            decode::<JobOffer>(&garbage),
            Err(CodecError::Malformed { .. })
        ));
        let full = encode(&offer());
        for cut in 2..full.len() {
            assert!(
                decode::<JobOffer>(&full[..cut]).is_err(),
                "prefix of {cut} bytes decoded"
            );
        }
        let mut trailing = full.clone();
        trailing.push(0);
        assert!(matches!(
            decode::<JobOffer>(&trailing),
            Err(CodecError::Malformed { .. })
        ));
    }

    #[test]
    fn kinds_are_unique() {
        let kinds = [
            JobOffer::KIND,
            ClaimRequest::KIND,
            Doorbell::KIND,
            ClaimReply::KIND,
            JobEvent::KIND,
            LogBatch::KIND,
            Heartbeat::KIND,
            Control::KIND,
        ];
        let mut sorted = kinds.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), kinds.len());
    }
}
