//! `ferry-server`: runs any subset of the control-plane services in one process.
//!
//! Every service talks to the others only over NATS, so running them together changes nothing but
//! the process count: ops scale a service by running more processes with a narrower `--services`.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    Api,
    Scheduler,
    Build,
    LogIngest,
    Approval,
}

impl Service {
    pub const ALL: [Service; 5] = [
        Service::Api,
        Service::Scheduler,
        Service::Build,
        Service::LogIngest,
        Service::Approval,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Service::Api => "api",
            Service::Scheduler => "scheduler",
            Service::Build => "build",
            Service::LogIngest => "log-ingest",
            Service::Approval => "approval",
        }
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Service {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Service::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown service `{s}` (expected one of: api, scheduler, build, log-ingest, approval)"))
    }
}

/// Parses `--services`: a comma-separated list, `all` for every service; duplicates are ignored.
pub fn parse_services(s: &str) -> Result<Vec<Service>, String> {
    if s.trim() == "all" {
        return Ok(Service::ALL.to_vec());
    }
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let svc: Service = part.parse()?;
        if !out.contains(&svc) {
            out.push(svc);
        }
    }
    if out.is_empty() {
        return Err("no services given".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_parse() {
        assert_eq!(parse_services("all").unwrap().len(), 5);
        assert_eq!(
            parse_services("api, scheduler,api").unwrap(),
            vec![Service::Api, Service::Scheduler]
        );
        assert!(
            parse_services("api,nope")
                .unwrap_err()
                .contains("unknown service `nope`")
        );
        assert!(parse_services("").is_err());
    }
}
