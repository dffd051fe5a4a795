//! What an app asks of the customer's account, as typed declarations: the roles of
//! `permissions/` and `break_glass`, the secrets, and the install stack (`stack.toml`). Read
//! after `roles` has checked them; `crate::stack` turns them into the install stack's template.

use super::*;

/// Which operations a role serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RoleUse {
    Provision,
    Maintenance,
    Deprovision,
    /// Named by `operation_roles` or an action step's `role`.
    Custom,
    /// Created only when the customer turns break glass on; used only with a live grant.
    BreakGlass,
}

impl RoleUse {
    pub fn name(self) -> &'static str {
        match self {
            RoleUse::Provision => "provision",
            RoleUse::Maintenance => "maintenance",
            RoleUse::Deprovision => "deprovision",
            RoleUse::Custom => "custom",
            RoleUse::BreakGlass => "break_glass",
        }
    }

    /// The role's ARN output in the install stack: its key in Nuon's `install_stack.outputs`
    /// (`name`: the role's rendered name). The stack writes it, the runner reads it back.
    pub fn output_key(self, name: &str) -> String {
        match self {
            RoleUse::Provision => "provision_iam_role_arn".into(),
            RoleUse::Maintenance => "maintenance_iam_role_arn".into(),
            RoleUse::Deprovision => "deprovision_iam_role_arn".into(),
            RoleUse::Custom => format!("custom_role_arns.{name}"),
            RoleUse::BreakGlass => format!("break_glass_role_arns.{name}"),
        }
    }

    fn of_type(t: &str) -> Option<RoleUse> {
        Some(match t {
            "provision" => RoleUse::Provision,
            "maintenance" => RoleUse::Maintenance,
            "deprovision" => RoleUse::Deprovision,
            "custom" => RoleUse::Custom,
            _ => return None,
        })
    }
}

/// A cloud role the install stack creates in the customer's account.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudRole {
    /// As written: templates allowed (`{{.nuon.install.id}}-maintenance`).
    pub name: String,
    pub used_for: RoleUse,
    pub description: Option<String>,
    /// The permissions boundary's JSON document.
    pub boundary: Option<String>,
    /// `aws` unless the role says otherwise.
    pub cloud: String,
    pub policies: Vec<RolePolicy>,
}

/// One policy of a role: a managed policy by name, or a named document.
#[derive(Debug, Clone, PartialEq)]
pub struct RolePolicy {
    pub name: Option<String>,
    pub managed_policy_name: Option<String>,
    /// The policy's JSON document.
    pub document: Option<String>,
}

/// One rule of `operation_roles`: the role `principal` (`nuon::sandbox`,
/// `nuon::component:NAME`, `nuon::action:NAME`, NAME may be `*`) uses for `operation`.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationRule {
    pub principal: String,
    pub operation: String,
    /// A role's name as declared (templates allowed).
    pub role: String,
}

/// A secret the customer provides, or the install generates, in its own account.
#[derive(Debug, Clone, PartialEq)]
pub struct Secret {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub auto_generate: bool,
    /// Its value is base64 already (`format = "base64"`).
    pub base64: bool,
    /// The value when the customer gives none (`default`).
    pub default: Option<String>,
    /// The customer may set it (a `NoEcho` stack parameter); `user_configurable = false`
    /// leaves it to its default or its generated value.
    pub user_configurable: bool,
    /// Where in the install's cluster it is copied (`kubernetes_sync`): templates allowed.
    pub kubernetes: Vec<KubeTarget>,
}

/// A place in the install's cluster a secret is copied to: a key of a Kubernetes Secret.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeTarget {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

/// `stack.toml`: the stack the customer launches.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InstallStack {
    /// `aws-cloudformation` (the default), `azure-bicep` or `gcp-terraform`.
    pub kind: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub vpc_nested_template_url: Option<String>,
    pub runner_nested_template_url: Option<String>,
    pub nested: Vec<NestedStack>,
}

/// One of `custom_nested_stacks`, in the order of its `index`.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedStack {
    pub name: String,
    pub template_url: String,
    pub index: i64,
    pub parameters: BTreeMap<String, String>,
    pub description: Option<String>,
}

impl<'a> Loader<'a> {
    /// The roles a `permissions` or `break_glass` document declares, each with what it serves.
    pub(super) fn cloud_roles(&self, doc: &Doc, schema: &Schema, block: &str) -> Vec<CloudRole> {
        let mut found: Vec<(&Node, Option<RoleUse>)> = Vec::new();
        if std::ptr::eq(schema, &schema::ROLE) {
            found.push((&doc.root, None));
        }
        for e in doc.root.entries() {
            let used = match (block, e.key.as_str()) {
                ("break_glass", "role") => Some(RoleUse::BreakGlass),
                (_, "provision_role") => Some(RoleUse::Provision),
                (_, "maintenance_role") => Some(RoleUse::Maintenance),
                (_, "deprovision_role") => Some(RoleUse::Deprovision),
                (_, "custom_roles") => Some(RoleUse::Custom),
                (_, "roles") => None,
                _ => continue,
            };
            match &e.value.v {
                V::Table(_) => found.push((&e.value, used)),
                V::Array(items) => found.extend(items.iter().map(|i| (i, used))),
                _ => {}
            }
        }
        found
            .into_iter()
            .filter_map(|(node, used)| {
                let used = used.or_else(|| node.str_of("type").and_then(RoleUse::of_type))?;
                Some(self.cloud_role(node, used))
            })
            .collect()
    }

    fn cloud_role(&self, node: &Node, used_for: RoleUse) -> CloudRole {
        let text = |k: &str| node.str_of(k).map(String::from);
        let policies = node
            .get("policies")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .map(|p| RolePolicy {
                name: p.str_of("name").map(String::from),
                managed_policy_name: p.str_of("managed_policy_name").map(String::from),
                document: p
                    .str_of("contents")
                    .map(|c| self.contents("permissions", c)),
            })
            .collect();
        CloudRole {
            name: text("name").unwrap_or_default(),
            used_for,
            description: text("description"),
            boundary: node
                .str_of("permissions_boundary")
                .map(|c| self.contents("permissions", c)),
            cloud: text("cloud_platform").unwrap_or_else(|| "aws".into()),
            policies,
        }
    }

    /// A secret's declaration.
    pub(super) fn secret(s: &Node) -> Option<Secret> {
        let on = |k: &str| s.bool_of(k).unwrap_or(false);
        Some(Secret {
            name: s.str_of("name")?.to_string(),
            display_name: s.str_of("display_name").map(String::from),
            description: s.str_of("description").map(String::from),
            required: on("required"),
            auto_generate: on("auto_generate"),
            base64: s.str_of("format") == Some("base64"),
            default: s.str_of("default").map(String::from),
            user_configurable: s.bool_of("user_configurable") != Some(false),
            kubernetes: kube_targets(s),
        })
    }

    /// `stack.toml`, once checked.
    pub(super) fn install_stack(doc: &Doc) -> InstallStack {
        let root = &doc.root;
        let text = |k: &str| root.str_of(k).map(String::from);
        let mut nested: Vec<NestedStack> = root
            .get("custom_nested_stacks")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| {
                Some(NestedStack {
                    name: n.str_of("name")?.to_string(),
                    template_url: n.str_of("template_url")?.to_string(),
                    index: match n.get("index").map(|i| &i.v) {
                        Some(V::Int(i)) => *i,
                        _ => 0,
                    },
                    parameters: n
                        .get("parameters")
                        .map(Node::entries)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|e| Some((e.key.clone(), e.value.scalar_text()?)))
                        .collect(),
                    description: n.str_of("description").map(String::from),
                })
            })
            .collect();
        nested.sort_by_key(|n| n.index);
        InstallStack {
            kind: text("type").unwrap_or_else(|| "aws-cloudformation".into()),
            name: text("name"),
            description: text("description"),
            vpc_nested_template_url: text("vpc_nested_template_url"),
            runner_nested_template_url: text("runner_nested_template_url"),
            nested,
        }
    }
}

/// A secret's places in the cluster: each namespace of each `kubernetes_sync_targets` entry;
/// else, with `kubernetes_sync`, the one `kubernetes_secret_namespace`/`_name` name (under the
/// secret's own name as its key).
fn kube_targets(s: &Node) -> Vec<KubeTarget> {
    let targets = s
        .get("kubernetes_sync_targets")
        .map(Node::items)
        .unwrap_or_default();
    if !targets.is_empty() {
        return targets
            .iter()
            .flat_map(|t| {
                let (name, key) = (
                    t.str_of("name").unwrap_or_default(),
                    t.str_of("key").unwrap_or_default(),
                );
                t.get("namespaces")
                    .map(Node::items)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|ns| ns.as_str())
                    .map(|ns| KubeTarget {
                        namespace: ns.to_string(),
                        name: name.to_string(),
                        key: key.to_string(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    match (
        s.bool_of("kubernetes_sync"),
        s.str_of("kubernetes_secret_namespace"),
        s.str_of("kubernetes_secret_name"),
    ) {
        (Some(true), Some(ns), Some(name)) => vec![KubeTarget {
            namespace: ns.to_string(),
            name: name.to_string(),
            key: s.str_of("name").unwrap_or_default().to_string(),
        }],
        _ => vec![],
    }
}
