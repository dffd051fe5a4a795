//! The hub's trust material, kept in one directory the control plane owns, and how each party
//! connects with it.
//!
//! `HubFiles::load_or_create(dir)` makes, once, and then keeps:
//!
//! | file | what |
//! |---|---|
//! | `ca.pem`, `ca-key.pem` | Ferry's CA: signs install certificates from CSRs |
//! | `server.pem`, `server-key.pem` | the hub nats-server's TLS certificate |
//! | `services.pem`, `services-key.pem` | the control plane's client certificate |
//! | `callout.nk` | the account key that signs the users the auth callout admits |
//! | `ferry.password`, `admin.password`, `sys.password` | the NATS users' passwords |
//! | `auth.conf` | the nats-server configuration that puts all of this to use (rewritten each time) |
//! | `leafnodes.conf` | the hub's leafnode listener for installs' leaf servers (written by `hub-init`) |
//! | `route.pem`, `route-key.pem` | a cluster node's certificate for its routes to the other nodes (server and client) |
//!
//! Every client of the hub presents a certificate from the CA (`tls { verify: true }`). The
//! control plane's services then log in as user `ferry`, which may do anything in account `FERRY`
//! except change or delete the `AUDIT` stream; the operator's `admin` user may do that too.
//! Everyone else — runners — is decided by the auth callout (served by the `api` service): the
//! server asks it about each connection, with the verified client certificate, and it admits an
//! install's certificate with exactly that install's permissions (`ferry_protocol::permissions`).
//! Adding an install therefore needs no hub restart and no configuration change.

use std::path::{Path, PathBuf};

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::{Ca, PkiError, write_new};

/// The NATS account every Ferry connection lands in.
pub const ACCOUNT: &str = "FERRY";
/// The control plane's setup user: creates streams and buckets at start-up and mints the first
/// token (`ferry-server init`); may do anything but administer `AUDIT`. Each service then works
/// as its own user, allowed only what its role needs (`ferry_protocol::permissions::service`).
pub const SERVICES_USER: &str = "ferry";
/// The operator's user: may also reconfigure or delete `AUDIT`.
pub const ADMIN_USER: &str = "admin";
/// The common name of the cluster nodes' route certificate, and the subject a route must present
/// (RFC 2253, as nats-server's `verify_and_map` reads it; `sign_leaf` puts O before CN).
const ROUTE_NAME: &str = "ferry-hub-route";
const ROUTE_SUBJECT: &str = "CN=ferry-hub-route,O=ferry";
/// The system account's user (kicks connections of revoked certificates).
pub const SYS_USER: &str = "sys";

/// What the services' user may not do: change, delete, purge or erase from the audit stream.
pub const AUDIT_ADMIN_SUBJECTS: [&str; 4] = [
    "$JS.API.STREAM.UPDATE.AUDIT",
    "$JS.API.STREAM.DELETE.AUDIT",
    "$JS.API.STREAM.PURGE.AUDIT",
    "$JS.API.STREAM.MSG.DELETE.AUDIT",
];

/// The hub's trust directory.
#[derive(Debug, Clone)]
pub struct HubFiles {
    pub dir: PathBuf,
}

/// How a client of the hub proves who it is.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `(user, password)` for the configured users; `None` for runners (the callout decides).
    pub login: Option<(String, String)>,
    /// Where replies to this client's requests go (`_INBOX.<org>.<install>` for a runner, which
    /// may read no other inbox).
    pub inbox_prefix: Option<String>,
}

impl Credentials {
    /// Connect options presenting these credentials over TLS.
    pub fn connect_options(&self) -> async_nats::ConnectOptions {
        let mut o = async_nats::ConnectOptions::new();
        if let Some((user, password)) = &self.login {
            o = async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone());
        }
        if let Some(prefix) = &self.inbox_prefix {
            o = o.custom_inbox_prefix(prefix.clone());
        }
        o.require_tls(true)
            .add_root_certificates(self.ca.clone())
            .add_client_certificate(self.cert.clone(), self.key.clone())
    }
}

fn io(dir: &Path) -> impl Fn(std::io::Error) -> PkiError + '_ {
    move |error| PkiError::Store {
        dir: dir.display().to_string(),
        error,
    }
}

impl HubFiles {
    /// Creates what is missing in `dir` (the CA first, once) and rewrites `auth.conf`.
    /// `server_names` are the DNS names and IP addresses the hub's certificate covers, besides
    /// `localhost` and `127.0.0.1`.
    pub fn load_or_create(dir: &Path, server_names: &[String]) -> Result<HubFiles, PkiError> {
        let ca = Ca::load_or_create(dir, "ferry")?;
        let hub = HubFiles {
            dir: dir.to_path_buf(),
        };
        if !hub.path("server.pem").exists() {
            let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
            names.extend(server_names.iter().cloned());
            let (cert, key) =
                ca.sign_leaf("ferry-hub", &names, &[ExtendedKeyUsagePurpose::ServerAuth])?;
            write_new(&hub.path("server-key.pem"), &key, 0o600).map_err(io(dir))?;
            write_new(&hub.path("server.pem"), &cert, 0o644).map_err(io(dir))?;
        }
        if !hub.path("route.pem").exists() {
            // A node both dials the other nodes' routes and accepts theirs: one certificate for
            // both ends, covering the names the nodes' route URLs use.
            let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
            names.extend(server_names.iter().cloned());
            let (cert, key) = ca.sign_leaf(
                ROUTE_NAME,
                &names,
                &[
                    ExtendedKeyUsagePurpose::ServerAuth,
                    ExtendedKeyUsagePurpose::ClientAuth,
                ],
            )?;
            write_new(&hub.path("route-key.pem"), &key, 0o600).map_err(io(dir))?;
            write_new(&hub.path("route.pem"), &cert, 0o644).map_err(io(dir))?;
        }
        if !hub.path("services.pem").exists() {
            let (cert, key) = ca.sign_leaf(
                "ferry-services",
                &[],
                &[ExtendedKeyUsagePurpose::ClientAuth],
            )?;
            write_new(&hub.path("services-key.pem"), &key, 0o600).map_err(io(dir))?;
            write_new(&hub.path("services.pem"), &cert, 0o644).map_err(io(dir))?;
        }
        if !hub.path("callout.nk").exists() {
            let seed = nkeys::KeyPair::new_account()
                .seed()
                .map_err(|e| PkiError::Key(e.to_string()))?;
            write_new(&hub.path("callout.nk"), &seed, 0o600).map_err(io(dir))?;
        }
        for user in all_users() {
            let p = hub.path(&format!("{user}.password"));
            if !p.exists() {
                write_new(&p, &hex_secret()?, 0o600).map_err(io(dir))?;
            }
        }
        // It holds the users' passwords: readable by its owner only.
        write_private(&hub.path("auth.conf"), &hub.auth_conf()?).map_err(io(dir))?;
        Ok(hub)
    }

    /// The existing trust directory `dir` (made by [`HubFiles::load_or_create`]).
    pub fn open(dir: &Path) -> Result<HubFiles, PkiError> {
        let hub = HubFiles {
            dir: dir.to_path_buf(),
        };
        let password = format!("{SERVICES_USER}.password");
        for f in ["ca.pem", "services.pem", "callout.nk", password.as_str()] {
            if !hub.path(f).exists() {
                return Err(PkiError::Store {
                    dir: dir.display().to_string(),
                    error: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!(
                            "{f} is missing: create the directory with `ferry-server hub-init`"
                        ),
                    ),
                });
            }
        }
        Ok(hub)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> Result<String, PkiError> {
        let path = self.path(name);
        std::fs::read_to_string(&path)
            .map(|s| s.trim().to_string())
            .map_err(|error| PkiError::Store {
                dir: path.display().to_string(),
                error,
            })
    }

    /// The CA, to sign install certificates.
    pub fn ca(&self) -> Result<Ca, PkiError> {
        Ca::load(&self.read("ca.pem")?, &self.read("ca-key.pem")?)
    }

    /// The key that signs the users the auth callout admits.
    pub fn callout_key(&self) -> Result<nkeys::KeyPair, PkiError> {
        nkeys::KeyPair::from_seed(&self.read("callout.nk")?)
            .map_err(|e| PkiError::Key(e.to_string()))
    }

    /// Credentials of one of the configured users (`SERVICES_USER`, `ADMIN_USER`, `SYS_USER`).
    pub fn credentials(&self, user: &str) -> Result<Credentials, PkiError> {
        Ok(Credentials {
            ca: self.path("ca.pem"),
            cert: self.path("services.pem"),
            key: self.path("services-key.pem"),
            login: Some((user.to_string(), self.read(&format!("{user}.password"))?)),
            inbox_prefix: None,
        })
    }

    /// The hub's leafnode listener on `listen` (`0.0.0.0:7422`): installs' leaf servers connect
    /// there over TLS with their install's certificate, which the auth callout decides on as it
    /// does for a client connection. The hub does not advertise its servers' own addresses to the
    /// leaves: an install reaches the hub only at the address it was given (a load balancer,
    /// say), never at addresses of the vendor's network.
    pub fn leafnodes_conf(&self, listen: &str) -> String {
        let q = |p: &str| format!("\"{}\"", self.path(p).display());
        format!(
            "# Written by Ferry (ferry_pki::hub).\nleafnodes {{\n  listen: \"{listen}\"\n  no_advertise: true\n  tls {{\n    cert_file: {}\n    key_file: {}\n    ca_file: {}\n    verify: true\n    timeout: 5\n  }}\n}}\n",
            q("server.pem"),
            q("server-key.pem"),
            q("ca.pem"),
        )
    }

    /// The hub's complete nats-server configuration (`nats/hub.conf` filled in) for `node`:
    /// clients on its `listen`, monitoring on its `monitor` (none when `None`), JetStream (domain
    /// `hub`) in its `store_dir`, `auth.conf` and the node's leafnode listener (`leafnodes`, a
    /// file beside it) included, and for a cluster node its routes. nats-server reads an include
    /// relative to the including file, so the configuration is written into this directory.
    pub fn hub_conf(&self, node: &HubNode) -> String {
        let monitor = match &node.monitor {
            Some(m) => format!("http: \"{m}\""),
            None => "# no monitoring port (hub-init --monitor HOST:PORT adds one)".to_string(),
        };
        let cluster = match &node.cluster {
            Some(c) => self.cluster_block(c),
            None => "# one server: no cluster (hub-init --cluster-listen and --route make one)\n"
                .to_string(),
        };
        include_str!("../../../nats/hub.conf")
            .replace("{{server_name}}", &node.server_name)
            .replace("{{listen}}", &node.listen)
            .replace("http: \"{{monitor}}\"", &monitor)
            .replace("{{store_dir}}", &node.store_dir.display().to_string())
            .replace("{{auth_conf}}", "auth.conf")
            .replace("{{leafnodes_conf}}", &node.leafnodes)
            .replace("{{cluster}}\n", &cluster)
    }

    /// A cluster node's routes: TLS both ways with the route certificate (each node dials the
    /// others and accepts them). The CA also signs installs' certificates, so being signed by it
    /// is not enough: a route must present the route certificate's subject, which no install
    /// certificate can have (the CA sets their subjects itself).
    fn cluster_block(&self, c: &ClusterRoutes) -> String {
        let q = |p: &str| format!("\"{}\"", self.path(p).display());
        let routes = c
            .routes
            .iter()
            .map(|r| format!("    \"{r}\""))
            .collect::<Vec<_>>()
            .join("\n");
        format!(
            "cluster {{\n  name: \"{name}\"\n  listen: \"{listen}\"\n  tls {{\n    cert_file: {cert}\n    key_file: {key}\n    ca_file: {ca}\n    verify_and_map: true\n    timeout: 5\n  }}\n  authorization {{ user: \"{ROUTE_SUBJECT}\" }}\n  routes: [\n{routes}\n  ]\n}}\n",
            name = c.name,
            listen = c.listen,
            cert = q("route.pem"),
            key = q("route-key.pem"),
            ca = q("ca.pem"),
        )
    }

    /// The nats-server configuration of the hub's authentication and authorization, to be
    /// included in the hub's own configuration (which says where to listen and store).
    pub fn auth_conf(&self) -> Result<String, PkiError> {
        let issuer = self.callout_key()?.public_key();
        let q = |p: &str| format!("\"{}\"", self.path(p).display());
        let deny = list(&AUDIT_ADMIN_SUBJECTS.map(String::from));
        let password = |u: &str| self.read(&format!("{u}.password"));
        let mut users = vec![
            format!(
                "{{ user: \"{SERVICES_USER}\", password: \"{}\", permissions: {{ publish: {{ deny: [{deny}] }} }} }}",
                password(SERVICES_USER)?
            ),
            format!(
                "{{ user: \"{ADMIN_USER}\", password: \"{}\" }}",
                password(ADMIN_USER)?
            ),
        ];
        for svc in ferry_protocol::permissions::SERVICES {
            let Some(g) = ferry_protocol::permissions::service(svc) else {
                continue;
            };
            users.push(format!(
                "{{ user: \"{svc}\", password: \"{}\", permissions: {{ publish: {{ allow: [{}], deny: [{deny}] }}, subscribe: {{ allow: [{}] }}, allow_responses: true }} }}",
                password(svc)?,
                list(&g.publish),
                list(&g.subscribe),
            ));
        }
        let bypass = all_users()
            .map(|u| format!("\"{u}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(format!(
            r#"# Written by Ferry (ferry_pki::hub); rewritten on each start. See docs/security.md.
tls {{
  cert_file: {server}
  key_file: {server_key}
  ca_file: {ca}
  verify: true
  timeout: 5
}}
accounts {{
  {ACCOUNT} {{
    jetstream: enabled
    users: [
      {users}
    ]
  }}
  SYS {{ users: [ {{ user: "{SYS_USER}", password: "{sys}" }} ] }}
}}
system_account: SYS
authorization {{
  auth_callout {{
    issuer: "{issuer}"
    account: {ACCOUNT}
    users: [ {bypass} ]
  }}
}}
"#,
            server = q("server.pem"),
            server_key = q("server-key.pem"),
            ca = q("ca.pem"),
            users = users.join("\n      "),
            sys = password(SYS_USER)?,
        ))
    }
}

/// The hub's client addresses from `urls`: one URL, or a cluster's nodes comma-separated (a
/// client given them all starts at any node that answers and moves to another when its node
/// goes away).
pub fn addrs(urls: &str) -> std::io::Result<Vec<async_nats::ServerAddr>> {
    urls.split(',')
        .map(|u| u.trim().parse::<async_nats::ServerAddr>())
        .collect()
}

/// One hub nats-server: where it listens and stores, and its cluster when it is one of several.
#[derive(Debug, Clone)]
pub struct HubNode {
    /// Unique in a cluster (JetStream's Raft groups name their peers by it).
    pub server_name: String,
    pub listen: String,
    pub monitor: Option<String>,
    pub store_dir: PathBuf,
    /// The file (in the hub directory) with this node's leafnode listener.
    pub leafnodes: String,
    pub cluster: Option<ClusterRoutes>,
}

/// A node's place in a cluster: the cluster's name, where this node listens for routes, and every
/// node's route URL (`tls://hub-2:6222`; its own may be among them: nats-server skips it).
#[derive(Debug, Clone)]
pub struct ClusterRoutes {
    pub name: String,
    pub listen: String,
    pub routes: Vec<String>,
}

/// Replaces `path` with `text`, readable by its owner only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An older file keeps its mode on open: set it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(text.as_bytes())
}

/// Every configured user: the setup user, the operator, the system user, one per service.
fn all_users() -> impl Iterator<Item = &'static str> {
    [SERVICES_USER, ADMIN_USER, SYS_USER]
        .into_iter()
        .chain(ferry_protocol::permissions::SERVICES)
}

fn list(subjects: &[String]) -> String {
    subjects
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn hex_secret() -> Result<String, PkiError> {
    let mut b = [0u8; 24];
    getrandom::fill(&mut b).map_err(PkiError::Random)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Ca {
    /// A certificate and its new key for a party of the control plane itself (the hub's server
    /// certificate, the services' client certificate): `names` become DNS or IP SANs.
    pub fn sign_leaf(
        &self,
        common_name: &str,
        names: &[String],
        usages: &[ExtendedKeyUsagePurpose],
    ) -> Result<(String, String), PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "ferry");
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        for n in names {
            params
                .subject_alt_names
                .push(match n.parse::<std::net::IpAddr>() {
                    Ok(ip) => SanType::IpAddress(ip),
                    Err(_) => SanType::DnsName(n.as_str().try_into()?),
                });
        }
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&crate::random_serial()?));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = usages.to_vec();
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(825);
        let cert = params.signed_by(&key, self.issuer())?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_trust_directory_is_made_once_and_its_secrets_stay_private() {
        let dir = tempfile::tempdir().unwrap();
        let hub = HubFiles::load_or_create(dir.path(), &["hub.example.com".into()]).unwrap();
        let ca = std::fs::read_to_string(hub.path("ca.pem")).unwrap();
        let password = std::fs::read_to_string(hub.path("api.password")).unwrap();
        // Again, as every `hub-init` does: what exists is kept.
        let hub = HubFiles::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(std::fs::read_to_string(hub.path("ca.pem")).unwrap(), ca);
        assert_eq!(
            std::fs::read_to_string(hub.path("api.password")).unwrap(),
            password
        );
        for secret in [
            "auth.conf",
            "ca-key.pem",
            "callout.nk",
            "api.password",
            "admin.password",
        ] {
            let mode = std::fs::metadata(hub.path(secret))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{secret}");
        }
        let conf = std::fs::read_to_string(hub.path("auth.conf")).unwrap();
        for user in all_users() {
            assert!(conf.contains(&format!("user: \"{user}\"")), "{user}");
        }
        assert!(conf.contains("verify: true"));
        assert!(conf.contains(&hub.callout_key().unwrap().public_key()));
        assert!(conf.contains("\"$JS.API.STREAM.DELETE.AUDIT\""));
        assert!(hub.credentials("api").unwrap().login.is_some());
    }
}
