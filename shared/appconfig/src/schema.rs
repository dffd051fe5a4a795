//! The app package format as data: every block, every key, its type, whether it is required, and
//! whether Ferry acts on it yet. One definition drives validation (unknown keys with "did you mean",
//! types, required keys, warnings for keys Ferry accepts but ignores), the JSON Schema editors use
//! (`ferry apps schema`), and the reference in `docs/app-config.md` (a test keeps it in sync).
//!
//! Long because it is one table: every block and key of the format in one place, so that a key is
//! added, documented and validated by one edit. Splitting it would split that one definition.

/// The type of a value.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str,
    Int,
    Bool,
    /// Any scalar: string, integer, float or boolean (input defaults, input values).
    Scalar,
    /// A Go duration string: `30s`, `5m`, `1h30m`.
    Duration,
    /// A five-field cron expression.
    Cron,
    /// A path to a file of the package (relative to the package root; `./` allowed).
    File,
    /// A path to a file of the package when it starts with `./` (the file must exist), else inline text.
    Contents,
    Enum(&'static [&'static str]),
    List(&'static Ty),
    /// A table with keys of the author's choosing, each value of the given type.
    Map(&'static Ty),
    /// Anything: kept as it is (free-form metadata, Pulumi config).
    Any,
    Table(&'static Schema),
    /// An array of tables (`[[name]]`).
    Tables(&'static Schema),
}

#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    /// False: Ferry accepts and validates the key but does not act on it yet (a warning says so).
    pub acted: bool,
    pub doc: &'static str,
}

#[derive(Debug)]
pub struct Schema {
    pub name: &'static str,
    pub doc: &'static str,
    pub groups: &'static [&'static [Field]],
    /// Unknown keys holding tables are kept as free-form metadata (metadata.toml's `[onboarding]`).
    pub free_tables: bool,
}

impl Schema {
    pub fn fields(&self) -> impl Iterator<Item = &'static Field> + '_ {
        self.groups.iter().flat_map(|g| g.iter())
    }

    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields().find(|f| f.name == name)
    }
}

const fn f(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: false,
        acted: true,
        doc,
    }
}
const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: true,
        acted: true,
        doc,
    }
}
const fn ign(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: false,
        acted: false,
        doc,
    }
}

const STR: Ty = Ty::Str;
/// Operations a role can be bound to (`operation_roles`).
pub const OPERATIONS: &[&str] = &[
    "provision",
    "deprovision",
    "reprovision",
    "deploy",
    "teardown",
    "trigger",
];

pub static OPERATION_ROLE: Schema = Schema {
    name: "operation_role",
    doc: "The role a component (or the sandbox) uses for one operation.",
    groups: &[&[
        req("operation", Ty::Enum(OPERATIONS), "the operation"),
        req("role", Ty::Str, "name of a permissions or break-glass role"),
    ]],
    free_tables: false,
};

const STRS: Ty = Ty::List(&STR);
const STR_MAP: Ty = Ty::Map(&STR);
const ANY: Ty = Ty::Any;
const SCALAR: Ty = Ty::Scalar;
const INPUT_VALUES: Ty = Ty::Map(&SCALAR);

// ---- shared pieces ----------------------------------------------------------------------------

pub static REPO: Schema = Schema {
    name: "public_repo / connected_repo",
    doc: "A git repository holding the source: `public_repo` (any public repository) or `connected_repo` (one the vendor connected).",
    groups: &[&[
        req("repo", Ty::Str, "`owner/name` of the repository"),
        f(
            "directory",
            Ty::Str,
            "directory inside the repository (default: its root)",
        ),
        f("branch", Ty::Str, "branch to build from"),
        f("tag", Ty::Str, "tag to build from, instead of a branch"),
    ]],
    free_tables: false,
};

pub static VAR_FILE: Schema = Schema {
    name: "var_file",
    doc: "A Terraform variables file.",
    groups: &[&[req(
        "contents",
        Ty::Contents,
        "`./path` of a `.tfvars` file in the package, or its contents inline",
    )]],
    free_tables: false,
};

pub static IAM_POLICY: Schema = Schema {
    name: "policy",
    doc: "One policy of a role: a managed policy by name, or a policy document.",
    groups: &[&[
        f("name", Ty::Str, "name of an inline policy"),
        f(
            "managed_policy_name",
            Ty::Str,
            "name of a cloud-managed policy to attach (e.g. `AdministratorAccess`)",
        ),
        f(
            "contents",
            Ty::Contents,
            "`./path` of a JSON policy document in the package, or the document inline",
        ),
        f(
            "gcp_predefined_role",
            Ty::Str,
            "a GCP predefined role (`roles/storage.admin`)",
        ),
        f("azure_built_in_roles", STRS, "Azure built-in role names"),
        f(
            "azure_actions",
            STRS,
            "Azure actions (`Microsoft.Storage/*/read`)",
        ),
    ]],
    free_tables: false,
};

const ROLE_FIELDS: &[Field] = &[
    req(
        "name",
        Ty::Str,
        "role name (templates allowed: `{{.nuon.install.id}}-provision`)",
    ),
    f("display_name", Ty::Str, "human-readable name"),
    f("description", Ty::Str, "what the role is for"),
    f(
        "permissions_boundary",
        Ty::Contents,
        "`./path` of a JSON permissions boundary, or the boundary inline",
    ),
    f(
        "cloud_platform",
        Ty::Enum(&["aws", "azure", "gcp"]),
        "the cloud this role is for (default: aws)",
    ),
    f("policies", Ty::Tables(&IAM_POLICY), "the role's policies"),
];

pub static ROLE: Schema = Schema {
    name: "role",
    doc: "A cloud role the customer creates for the install (permissions) or grants on demand (break glass).",
    groups: &[
        &[f(
            "type",
            Ty::Enum(&["provision", "maintenance", "deprovision", "custom"]),
            "which lifecycle the role serves",
        )],
        ROLE_FIELDS,
    ],
    free_tables: false,
};

// ---- metadata, runner, sandbox ----------------------------------------------------------------

pub static METADATA: Schema = Schema {
    name: "metadata.toml",
    doc: "The app's identity. Required. Other tables (e.g. `[onboarding]`) are kept as free-form metadata.",
    groups: &[&[
        req("version", Ty::Str, "the config format version, e.g. `v1`"),
        f("description", Ty::Str, "one-line description"),
        f("display_name", Ty::Str, "human-readable name"),
        f(
            "readme",
            Ty::Contents,
            "`./README.md` of the package, or the text inline",
        ),
        ign("slack_webhook_url", Ty::Str, "notifications webhook"),
    ]],
    free_tables: true,
};

pub static RUNNER: Schema = Schema {
    name: "runner.toml",
    doc: "How the install's runner is set up.",
    groups: &[&[
        Field {
            required: true,
            ..ign(
                "runner_type",
                Ty::Str,
                "where the runner runs (`aws`, `azure`, `gcp`, `kubernetes`, `local`)",
            )
        },
        ign("instance_type", Ty::Str, "machine type of the runner host"),
        ign(
            "helm_driver",
            Ty::Enum(&["configmap", "secret"]),
            "Helm storage driver",
        ),
        ign(
            "init_script_url",
            Ty::Str,
            "script that sets the runner host up",
        ),
        ign("env_vars", STR_MAP, "environment of the runner"),
        ign(
            "env_var",
            Ty::Tables(&NAME_VALUE),
            "environment of the runner, older form (`[[env_var]]` with `name`, `value`)",
        ),
    ]],
    free_tables: false,
};

pub static NAME_VALUE: Schema = Schema {
    name: "env_var",
    doc: "One environment variable.",
    groups: &[&[
        req("name", Ty::Str, "variable name"),
        req("value", Ty::Str, "value"),
    ]],
    free_tables: false,
};

const SOURCE_FIELDS: &[Field] = &[
    f(
        "directory",
        Ty::Str,
        "Ferry: a directory of the package holding the source (built and synced like any artifact)",
    ),
    ign(
        "public_repo",
        Ty::Table(&REPO),
        "a public git repository holding the source (not fetched by this version)",
    ),
    ign(
        "connected_repo",
        Ty::Table(&REPO),
        "a connected git repository holding the source (not fetched by this version)",
    ),
];

pub static SANDBOX: Schema = Schema {
    name: "sandbox.toml",
    doc: "The install's base infrastructure, deployed before any component; its outputs are `{{.nuon.install.sandbox.outputs.X}}`.",
    groups: &[
        &[
            f(
                "type",
                Ty::Enum(&["terraform", "script", "pulumi"]),
                "how the sandbox is deployed (default: terraform)",
            ),
            ign(
                "terraform_version",
                Ty::Str,
                "Terraform version (Ferry uses the runner's terraform)",
            ),
            f("vars", STR_MAP, "Terraform variables (templates allowed)"),
            ign(
                "var_file",
                Ty::Tables(&VAR_FILE),
                "Terraform variables files",
            ),
            f(
                "env_vars",
                STR_MAP,
                "environment variables for the sandbox's tools (templates allowed)",
            ),
            ign(
                "aws_delegation_iam_role_arn",
                Ty::Str,
                "role to assume for delegated accounts",
            ),
            f(
                "operation_roles",
                Ty::Tables(&OPERATION_ROLE),
                "the role of the install's account each operation runs as (`[[operation_roles]]` with `operation`, `role`), before `operation_roles.toml`'s rules",
            ),
            f(
                "drift_schedule",
                Ty::Cron,
                "cron schedule (UTC) of drift checks: a plan that applies nothing and marks the component drifted when it has changes",
            ),
            f(
                "skip_noops",
                Ty::Bool,
                "skip the apply when the plan has no changes (Ferry always does)",
            ),
            ign(
                "max_auto_retries",
                Ty::Int,
                "automatic retries of a failed deploy",
            ),
            ign(
                "auto_approve_on_policies_passing",
                Ty::Bool,
                "approve plans whose policies all pass",
            ),
            ign("runtime", Ty::Str, "Pulumi runtime (pulumi sandboxes)"),
            ign("pulumi_config", ANY, "Pulumi config (pulumi sandboxes)"),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

// ---- inputs, secrets ---------------------------------------------------------------------------

pub static INPUT: Schema = Schema {
    name: "input",
    doc: "One input the customer (or vendor) sets per install: `{{.nuon.inputs.inputs.NAME}}`.",
    groups: &[&[
        req("name", Ty::Str, "name used in templates"),
        f("display_name", Ty::Str, "label in the installer"),
        f("description", Ty::Str, "help text in the installer"),
        f("group", Ty::Str, "name of the input group it belongs to"),
        f("default", Ty::Scalar, "value when none is given"),
        f(
            "required",
            Ty::Bool,
            "an install must set it (when it has no default)",
        ),
        f(
            "sensitive",
            Ty::Bool,
            "hide the value after the install is created",
        ),
        f(
            "type",
            Ty::Enum(&["string", "number", "bool", "list", "json"]),
            "value type (default: string)",
        ),
        ign("internal", Ty::Bool, "settable by the vendor only"),
        ign(
            "user_configurable",
            Ty::Bool,
            "the customer may change it after install",
        ),
    ]],
    free_tables: false,
};

pub static INPUT_GROUP: Schema = Schema {
    name: "group",
    doc: "A group of inputs, shown together in the installer.",
    groups: &[&[
        req("name", Ty::Str, "name inputs refer to"),
        f("display_name", Ty::Str, "label in the installer"),
        f("description", Ty::Str, "help text"),
    ]],
    free_tables: false,
};

pub static INPUTS: Schema = Schema {
    name: "inputs.toml",
    doc: "The app's inputs and input groups. `inputs/*.toml` and `input_groups/*.toml` may split them over files.",
    groups: &[&[
        f("input", Ty::Tables(&INPUT), "inputs"),
        f("group", Ty::Tables(&INPUT_GROUP), "input groups"),
    ]],
    free_tables: false,
};

pub static SYNC_TARGET: Schema = Schema {
    name: "kubernetes_sync_target",
    doc: "Where a secret is copied in the install's cluster.",
    groups: &[&[
        req(
            "namespaces",
            STRS,
            "namespaces the Kubernetes secret is created in (at least one)",
        ),
        req("name", Ty::Str, "name of the Kubernetes secret"),
        req("key", Ty::Str, "key inside the secret"),
    ]],
    free_tables: false,
};

pub static SECRET: Schema = Schema {
    name: "secret",
    doc: "A secret the customer provides (or the install generates). Values stay in the install: the control plane stores references only.",
    groups: &[&[
        req(
            "name",
            Ty::Str,
            "name used in templates: `{{.nuon.secrets.NAME}}`",
        ),
        f("display_name", Ty::Str, "label"),
        f("description", Ty::Str, "help text"),
        f("required", Ty::Bool, "the install must provide it"),
        f(
            "default",
            Ty::Str,
            "value when none is given (the stack parameter's default)",
        ),
        f(
            "auto_generate",
            Ty::Bool,
            "generate a random value in the install",
        ),
        f(
            "format",
            Ty::Enum(&["base64", ""]),
            "`base64` when the value is base64-encoded (copied into a Kubernetes Secret as it is)",
        ),
        f(
            "user_configurable",
            Ty::Bool,
            "`false`: the customer is not asked for it (no stack parameter): it takes its `default`",
        ),
        f(
            "kubernetes_sync",
            Ty::Bool,
            "copy the secret into the install's cluster: each Kubernetes component's apply writes it (with `kubernetes_secret_namespace` and `kubernetes_secret_name`, under the secret's name as its key) before its own objects",
        ),
        f(
            "kubernetes_secret_namespace",
            Ty::Str,
            "namespace to copy it to (templates allowed)",
        ),
        f(
            "kubernetes_secret_name",
            Ty::Str,
            "name of the Kubernetes Secret to copy it to (templates allowed)",
        ),
        f(
            "kubernetes_sync_targets",
            Ty::Tables(&SYNC_TARGET),
            "several places to copy it to (each namespace, Secret name and key)",
        ),
    ]],
    free_tables: false,
};

pub static SECRETS: Schema = Schema {
    name: "secrets.toml",
    doc: "The app's secrets (`[[secret]]`), or `secrets/**/*.toml` with one secret per file.",
    groups: &[&[f("secret", Ty::Tables(&SECRET), "secrets")]],
    free_tables: false,
};

// ---- permissions, policies, break glass, stack, installer, roles ---------------------------------

pub static PERMISSIONS: Schema = Schema {
    name: "permissions.toml",
    doc: "The roles the customer creates for the install; or `permissions/*.toml` with one role per file (with `type`).",
    groups: &[&[
        f("provision_role", Ty::Table(&ROLE), "role used to provision"),
        f(
            "maintenance_role",
            Ty::Table(&ROLE),
            "role used for day-2 operations",
        ),
        f(
            "deprovision_role",
            Ty::Table(&ROLE),
            "role used to tear down",
        ),
        f("custom_roles", Ty::Tables(&ROLE), "further roles"),
        f("roles", Ty::Tables(&ROLE), "roles, each with a `type`"),
    ]],
    free_tables: false,
};

pub static POLICY: Schema = Schema {
    name: "policy",
    doc: "A policy checked against plans: OPA (Rego) or Kyverno (YAML).",
    groups: &[&[
        req(
            "type",
            Ty::Enum(&[
                "sandbox",
                "terraform_module",
                "helm_chart",
                "kubernetes_manifest",
                "kubernetes_cluster",
                "container_image",
                "docker_build",
                "job",
                "pulumi",
                "script",
                "action",
            ]),
            "what the policy checks",
        ),
        f("name", Ty::Str, "policy name (default: the file's name)"),
        f(
            "engine",
            Ty::Enum(&["opa", "kyverno"]),
            "policy engine (default: opa for `.rego`, kyverno for `.yaml`, else by type)",
        ),
        f(
            "components",
            STRS,
            "components it applies to (default, or `[\"*\"]`: every component of its type)",
        ),
        ign(
            "sandbox",
            Ty::Bool,
            "evaluate only during sandbox operations",
        ),
        req(
            "contents",
            Ty::Contents,
            "`./path` of the `.rego` or `.yaml` policy (relative to the file that defines it), a URL, or the policy inline",
        ),
    ]],
    free_tables: false,
};

pub static POLICIES: Schema = Schema {
    name: "policies.toml",
    doc: "Policies over plans. OPA (Rego) policies are compiled at validation (a policy that does not compile is an error) and evaluated by the install's runner against each plan: those of type `terraform_module` and `sandbox` with `input.plan` (`terraform show -json`), those of type `helm_chart`, `kubernetes_manifest` and `job` with each rendered Kubernetes object as `input` (as conftest gives them). A `deny` blocks the apply, a `warn` shows on the plan. Kyverno (`kubernetes_cluster`) policies and OPA policies of other types are kept but not enforced: validation warns about each by name, and the plans they reach say so. The Rego contract (package, `deny`, `warn`, `input` per type) and examples: see \"Policy reference\" above.",
    groups: &[&[f("policy", Ty::Tables(&POLICY), "policies")]],
    free_tables: false,
};

pub static BREAK_GLASS: Schema = Schema {
    name: "break_glass.toml",
    doc: "Elevated roles the customer grants for a limited time (on the runner host: `ferry-runner break-glass grant ROLE --for 1h`; or with a `customer` token: `ferry break-glass grant INSTALL ROLE --for 1h`); actions naming one in `break_glass_role` are refused without a live grant. The install stack (`ferry installs stack`) creates their IAM roles only while the customer's `EnableBreakGlass` parameter is `true`.",
    groups: &[&[f("role", Ty::Tables(&ROLE), "break-glass roles")]],
    free_tables: false,
};

pub static NESTED_STACK: Schema = Schema {
    name: "custom_nested_stack",
    doc: "A further template nested in the install stack.",
    groups: &[&[
        req("name", Ty::Str, "stack name"),
        req("template_url", Ty::Str, "URL of the template"),
        f("index", Ty::Int, "order among nested stacks"),
        f(
            "parameters",
            STR_MAP,
            "template parameters (templates allowed)",
        ),
        f("description", Ty::Str, "what it creates"),
    ]],
    free_tables: false,
};

pub static STACK: Schema = Schema {
    name: "stack.toml",
    doc: "The install stack the customer launches in their account (CloudFormation, Bicep, ...).",
    groups: &[&[
        f(
            "type",
            Ty::Enum(&["aws-cloudformation", "azure-bicep", "gcp-terraform"]),
            "kind of stack",
        ),
        f("name", Ty::Str, "stack name (templates allowed)"),
        f("description", Ty::Str, "stack description"),
        f("vpc_nested_template_url", Ty::Str, "template of the VPC"),
        f(
            "runner_nested_template_url",
            Ty::Str,
            "the vendor's template of the runner host, nested instead of Ferry's own machines: it gets `VpcId`, `SubnetId`, `InstanceProfileArn`, `ImageId`, `InstanceType`, `RunnerBundleUrl`, `RunnerBundleSha256`, `BootstrapTokenSecret` and `InstallStackName` (see docs/install-stack.md)",
        ),
        f(
            "custom_nested_stacks",
            Ty::Tables(&NESTED_STACK),
            "further nested templates",
        ),
    ]],
    free_tables: false,
};

pub static INSTALLER: Schema = Schema {
    name: "installer.toml",
    doc: "The customer-facing installer page.",
    groups: &[&[
        ign("name", Ty::Str, "installer name"),
        ign("description", Ty::Str, "installer description"),
        ign("slug", Ty::Str, "URL slug"),
        ign("documentation_url", Ty::Str, "link"),
        ign("community_url", Ty::Str, "link"),
        ign("homepage_url", Ty::Str, "link"),
        ign("github_url", Ty::Str, "link"),
        ign("logo_url", Ty::Str, "image"),
        ign("favicon_url", Ty::Str, "image"),
        ign("demo_url", Ty::Str, "link"),
        ign(
            "post_install_markdown",
            Ty::Contents,
            "shown after installing",
        ),
        ign("copyright_markdown", Ty::Contents, "footer copyright"),
        ign("footer_markdown", Ty::Contents, "footer"),
        ign("apps", STRS, "apps offered"),
    ]],
    free_tables: false,
};

pub static OPERATION_RULE: Schema = Schema {
    name: "rule",
    doc: "Which role a principal uses for an operation.",
    groups: &[&[
        req(
            "principal",
            Ty::Str,
            "who: `nuon::component:NAME`, `nuon::sandbox` or `nuon::action:NAME` (NAME may be `*`)",
        ),
        req("operation", Ty::Enum(OPERATIONS), "which operation"),
        req("role", Ty::Str, "name of a permissions or break-glass role"),
    ]],
    free_tables: false,
};

pub static OPERATION_ROLES: Schema = Schema {
    name: "operation_roles.toml",
    doc: "Rules mapping (principal, operation) to the role it runs with.",
    groups: &[&[
        Field {
            required: true,
            ..ign("type", Ty::Enum(&["matrix"]), "the rule format: `matrix`")
        },
        f(
            "rules",
            Ty::Tables(&OPERATION_RULE),
            "rules: the first for the principal by name, else for `NAME = *`, decides the role of the install's account a job runs as (a runner in an install stack assumes it)",
        ),
    ]],
    free_tables: false,
};

pub static KUBERNETES_CONTEXT: Schema = Schema {
    name: "kubernetes_context",
    doc: "A named Kubernetes cluster connection that components and actions can target.",
    groups: &[&[
        req(
            "name",
            Ty::Str,
            "name components and actions use in `kubernetes_context`",
        ),
        f(
            "component",
            Ty::Str,
            "component whose outputs describe the cluster (default: the sandbox)",
        ),
        f("description", Ty::Str, "what the cluster is"),
        f(
            "default",
            Ty::Bool,
            "used when a component or action names none",
        ),
    ]],
    free_tables: false,
};

pub static KUBERNETES_CONTEXTS: Schema = Schema {
    name: "kubernetes_contexts.toml",
    doc: "Named Kubernetes contexts.",
    groups: &[&[ign(
        "kubernetes_context",
        Ty::Tables(&KUBERNETES_CONTEXT),
        "contexts",
    )]],
    free_tables: false,
};

// ---- components ----------------------------------------------------------------------------------

const COMPONENT_COMMON: &[Field] = &[
    req(
        "name",
        Ty::Str,
        "component name: lowercase letters, digits, `-` and `_`",
    ),
    req("type", Ty::Enum(COMPONENT_TYPE_NAMES), "component type"),
    f(
        "dependencies",
        STRS,
        "components deployed before this one (references to their outputs add more)",
    ),
    ign(
        "var_name",
        Ty::Str,
        "name of the component in templates, if not its name",
    ),
    ign(
        "max_auto_retries",
        Ty::Int,
        "automatic retries of a failed deploy",
    ),
    f(
        "drift_schedule",
        Ty::Cron,
        "cron schedule (UTC) of drift checks: a plan that applies nothing and marks the component drifted when it has changes",
    ),
    f(
        "operation_roles",
        Ty::Tables(&OPERATION_ROLE),
        "the role of the install's account each operation runs as (`[[operation_roles]]` with `operation`, `role`), before `operation_roles.toml`'s rules",
    ),
    f("labels", STR_MAP, "labels"),
    f(
        "skip_noops",
        Ty::Bool,
        "skip the apply when the plan has no changes (Ferry always does)",
    ),
    f(
        "timeout",
        Ty::Duration,
        "longest a plan or apply may run (default 30m); past it the job is killed and timed out",
    ),
    ign("build_timeout", Ty::Duration, "build timeout"),
    f(
        "deploy_timeout",
        Ty::Duration,
        "the same as `timeout` (wins over it)",
    ),
    ign(
        "toggleable",
        Ty::Bool,
        "the component can be disabled per install",
    ),
    ign(
        "default_enabled",
        Ty::Bool,
        "enabled in new installs (toggleable components)",
    ),
    ign(
        "kubernetes_context",
        Ty::Str,
        "named Kubernetes context to deploy into",
    ),
    ign(
        "auto_approve_on_policies_passing",
        Ty::Bool,
        "approve plans whose policies all pass",
    ),
    ign("health", ANY, "health checking settings"),
];

pub static HELM_VALUE: Schema = Schema {
    name: "value",
    doc: "One Helm value (older form; prefer `[values]`).",
    groups: &[&[
        req("name", Ty::Str, "value path"),
        req("value", Ty::Str, "value (templates allowed)"),
    ]],
    free_tables: false,
};

pub static HELM_VALUES_FILE: Schema = Schema {
    name: "values_file",
    doc: "A Helm values file.",
    groups: &[&[
        f("path", Ty::File, "path of a values file in the package"),
        f("source", Ty::File, "older name of `path`"),
        f(
            "contents",
            Ty::Contents,
            "`./path` of a values file, or YAML inline (templates allowed)",
        ),
    ]],
    free_tables: false,
};

pub static HELM_REPO: Schema = Schema {
    name: "helm_repo",
    doc: "A Helm chart repository.",
    groups: &[&[
        req("repo_url", Ty::Str, "URL of the chart repository"),
        req("chart", Ty::Str, "chart name in the repository"),
        f("version", Ty::Str, "chart version"),
    ]],
    free_tables: false,
};

pub static KUSTOMIZE: Schema = Schema {
    name: "kustomize",
    doc: "Build the manifest with kustomize.",
    groups: &[&[
        req(
            "path",
            Ty::Str,
            "kustomization directory, relative to the source",
        ),
        f("patches", STRS, "patch files applied after the build"),
        f(
            "enable_helm",
            Ty::Bool,
            "inflate Helm charts during the build",
        ),
        f(
            "load_restrictor",
            Ty::Enum(&["none", "rootOnly"]),
            "which files kustomize may load",
        ),
    ]],
    free_tables: false,
};

pub static IMAGE_PUBLIC: Schema = Schema {
    name: "public",
    doc: "An image from a public registry.",
    groups: &[&[
        req(
            "image_url",
            Ty::Str,
            "image repository (`docker.io/library/nginx`)",
        ),
        f("tag", Ty::Str, "tag (templates allowed; default `latest`)"),
        ign(
            "update_policy",
            Ty::Str,
            "semver constraint picking the tag at build time",
        ),
    ]],
    free_tables: false,
};

pub static IMAGE_ECR: Schema = Schema {
    name: "aws_ecr",
    doc: "An image from Amazon ECR.",
    groups: &[&[
        ign("iam_role_arn", Ty::Str, "role that may pull the image"),
        ign("connection", Ty::Str, "named cloud connection"),
        req("region", Ty::Str, "region of the repository"),
        req("image_url", Ty::Str, "repository URL without tag"),
        f("tag", Ty::Str, "tag (templates allowed; default `latest`)"),
        ign(
            "update_policy",
            Ty::Str,
            "semver constraint picking the tag at build time",
        ),
    ]],
    free_tables: false,
};

pub static IMAGE_GAR: Schema = Schema {
    name: "gcp_gar",
    doc: "An image from Google Artifact Registry.",
    groups: &[&[
        req("gcp_project_id", Ty::Str, "project"),
        req("region", Ty::Str, "region"),
        req("image_url", Ty::Str, "repository URL without tag"),
        f("tag", Ty::Str, "tag"),
        f(
            "service_account_email",
            Ty::Str,
            "service account to impersonate",
        ),
        f(
            "workload_identity_provider",
            Ty::Str,
            "workload identity provider",
        ),
        f(
            "update_policy",
            Ty::Str,
            "semver constraint picking the tag at build time",
        ),
    ]],
    free_tables: false,
};

pub static IMAGE_ACR: Schema = Schema {
    name: "azure_acr",
    doc: "An image from Azure Container Registry.",
    groups: &[&[
        req("image_url", Ty::Str, "repository URL without tag"),
        req("registry_url", Ty::Str, "login server"),
        f("tag", Ty::Str, "tag"),
        f("tenant_id", Ty::Str, "tenant of the registry"),
        f("client_id", Ty::Str, "app registration allowed to pull"),
        f(
            "client_secret_name",
            Ty::Str,
            "name of the secret holding the client secret",
        ),
        f(
            "client_certificate_name",
            Ty::Str,
            "name of the secret holding the client certificate",
        ),
        f(
            "update_policy",
            Ty::Str,
            "semver constraint picking the tag at build time",
        ),
    ]],
    free_tables: false,
};

pub static TERRAFORM_MODULE: Schema = Schema {
    name: "terraform_module component",
    doc: "A Terraform module: planned, approved and applied in the install; outputs become component outputs.",
    groups: &[
        COMPONENT_COMMON,
        &[
            ign(
                "terraform_version",
                Ty::Str,
                "Terraform version (Ferry uses the runner's terraform)",
            ),
            f("vars", STR_MAP, "Terraform variables (templates allowed)"),
            ign(
                "var_file",
                Ty::Tables(&VAR_FILE),
                "Terraform variables files",
            ),
            f(
                "env_vars",
                STR_MAP,
                "environment variables for terraform (templates allowed)",
            ),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

pub static HELM_CHART: Schema = Schema {
    name: "helm_chart component",
    doc: "A Helm chart deployed into the install's cluster.",
    groups: &[
        COMPONENT_COMMON,
        &[
            req("chart_name", Ty::Str, "release name"),
            f(
                "namespace",
                Ty::Str,
                "namespace (default: the install id; templates allowed)",
            ),
            f(
                "storage_driver",
                Ty::Enum(&["configmap", "secret"]),
                "Helm storage driver",
            ),
            f("values", STR_MAP, "values by path (templates allowed)"),
            f("value", Ty::Tables(&HELM_VALUE), "values, older form"),
            f("values_file", Ty::Tables(&HELM_VALUES_FILE), "values files"),
            f(
                "helm_repo",
                Ty::Table(&HELM_REPO),
                "chart from a Helm repository",
            ),
            f("take_ownership", Ty::Bool, "adopt existing resources"),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

pub static KUBERNETES_MANIFEST: Schema = Schema {
    name: "kubernetes_manifest component",
    doc: "Kubernetes manifests: inline or a file (`manifest`) or built with kustomize (`kustomize`).",
    groups: &[
        COMPONENT_COMMON,
        &[
            f(
                "manifest",
                Ty::Contents,
                "`./path` of a YAML manifest, or the YAML inline (templates allowed)",
            ),
            f(
                "kustomize",
                Ty::Table(&KUSTOMIZE),
                "build the manifest with kustomize from the source",
            ),
            req("namespace", Ty::Str, "namespace (templates allowed)"),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

pub static CONTAINER_IMAGE: Schema = Schema {
    name: "container_image component",
    doc: "An existing container image, copied into the install's registry.",
    groups: &[
        COMPONENT_COMMON,
        &[
            f("public", Ty::Table(&IMAGE_PUBLIC), "from a public registry"),
            f(
                "aws_ecr",
                Ty::Table(&IMAGE_ECR),
                "from Amazon ECR (credentials from `GetAuthorizationToken`, under the runner host's AWS identity)",
            ),
            ign(
                "gcp_gar",
                Ty::Table(&IMAGE_GAR),
                "from Google Artifact Registry (checked; not copied by this version)",
            ),
            ign(
                "azure_acr",
                Ty::Table(&IMAGE_ACR),
                "from Azure Container Registry (checked; not copied by this version)",
            ),
            ign("verification", ANY, "signature verification settings"),
        ],
    ],
    free_tables: false,
};

pub static DOCKER_BUILD: Schema = Schema {
    name: "docker_build component",
    doc: "A container image built from a Dockerfile.",
    groups: &[
        COMPONENT_COMMON,
        &[
            f(
                "dockerfile",
                Ty::Str,
                "Dockerfile path inside the source (default: `Dockerfile`)",
            ),
            f("build_args", STR_MAP, "build arguments"),
            f("env_vars", STR_MAP, "environment of the build"),
            f("target", Ty::Str, "build stage"),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

pub static JOB: Schema = Schema {
    name: "job component",
    doc: "A container run to completion in the install's cluster.",
    groups: &[
        COMPONENT_COMMON,
        &[
            req(
                "image_url",
                Ty::Str,
                "image (templates allowed: another component's image output)",
            ),
            req("tag", Ty::Str, "tag"),
            f("cmd", STRS, "command"),
            f("args", STRS, "arguments"),
            f("env_vars", STR_MAP, "environment (templates allowed)"),
        ],
    ],
    free_tables: false,
};

pub static PULUMI: Schema = Schema {
    name: "pulumi component",
    doc: "A Pulumi program.",
    groups: &[
        COMPONENT_COMMON,
        &[
            req(
                "runtime",
                Ty::Enum(&["nodejs", "python", "go", "dotnet", "java", "yaml"]),
                "program runtime",
            ),
            f(
                "config",
                ANY,
                "stack configuration (templates allowed in strings)",
            ),
            f("env_vars", STR_MAP, "environment (templates allowed)"),
            f(
                "source",
                Ty::Str,
                "directory of the package holding the program (same as `directory`)",
            ),
        ],
        SOURCE_FIELDS,
    ],
    free_tables: false,
};

pub static SCRIPT: Schema = Schema {
    name: "script component",
    doc: "Ferry's own: `plan.sh` (optional), `apply.sh` and `teardown.sh` (optional) from `directory`, run with `sh`. The script writes its outputs as a JSON object to `$FERRY_OUTPUTS`.",
    groups: &[
        COMPONENT_COMMON,
        &[
            req(
                "directory",
                Ty::Str,
                "directory of the package holding the scripts",
            ),
            f(
                "env_vars",
                STR_MAP,
                "environment of the scripts (templates allowed)",
            ),
            f(
                "vars",
                STR_MAP,
                "further values, passed as environment too (templates allowed)",
            ),
        ],
    ],
    free_tables: false,
};

/// Component types: name, schema, and whether this version can deploy them.
pub const COMPONENT_TYPES: &[(&str, &Schema, bool)] = &[
    ("terraform_module", &TERRAFORM_MODULE, true),
    ("script", &SCRIPT, true),
    ("helm_chart", &HELM_CHART, true),
    ("kubernetes_manifest", &KUBERNETES_MANIFEST, true),
    ("container_image", &CONTAINER_IMAGE, true),
    ("external_image", &CONTAINER_IMAGE, true),
    ("docker_build", &DOCKER_BUILD, false),
    ("job", &JOB, true),
    ("pulumi", &PULUMI, false),
];

pub const COMPONENT_TYPE_NAMES: &[&str] = &[
    "terraform_module",
    "script",
    "helm_chart",
    "kubernetes_manifest",
    "container_image",
    "external_image",
    "docker_build",
    "job",
    "pulumi",
];

pub fn component_schema(kind: &str) -> Option<(&'static Schema, bool)> {
    COMPONENT_TYPES
        .iter()
        .find(|(n, _, _)| *n == kind)
        .map(|(_, s, p)| (*s, *p))
}

// ---- actions, runbooks, installs -----------------------------------------------------------------

pub const TRIGGER_TYPES: &[&str] = &[
    "manual",
    "cron",
    "pre-provision",
    "post-provision",
    "post-provision-sandbox",
    "pre-reprovision",
    "post-reprovision",
    "pre-deprovision",
    "post-deprovision",
    "pre-deploy-all-components",
    "post-deploy-all-components",
    "pre-teardown-all-components",
    "post-teardown-all-components",
    "pre-deploy-component",
    "post-deploy-component",
    "pre-teardown-component",
    "post-teardown-component",
    "pre-enable-component",
    "post-enable-component",
    "pre-disable-component",
    "post-disable-component",
    "pre-deprovision-sandbox",
    "post-deprovision-sandbox",
    "pre-reprovision-sandbox",
    "post-reprovision-sandbox",
    "pre-update-inputs",
    "post-update-inputs",
    "pre-component-deploy",
    "post-component-deploy",
    "pre-secrets-sync",
    "post-secrets-sync",
    "role-enabled",
    "role-disabled",
];

/// Triggers that name the component they follow.
pub const COMPONENT_TRIGGERS: &[&str] = &[
    "pre-component-deploy",
    "post-component-deploy",
    "pre-deploy-component",
    "post-deploy-component",
    "pre-teardown-component",
    "post-teardown-component",
    "pre-enable-component",
    "post-enable-component",
    "pre-disable-component",
    "post-disable-component",
];

pub static TRIGGER: Schema = Schema {
    name: "trigger",
    doc: "When an action runs.",
    groups: &[&[
        req(
            "type",
            Ty::Enum(TRIGGER_TYPES),
            "manual, cron, or a lifecycle hook",
        ),
        f(
            "cron_schedule",
            Ty::Cron,
            "schedule of a `cron` trigger (an empty one never fires)",
        ),
        f(
            "component_name",
            Ty::Str,
            "the component of a component lifecycle trigger",
        ),
        f("index", Ty::Int, "tells several manual triggers apart"),
    ]],
    free_tables: false,
};

pub static ACTION_INPUT: Schema = Schema {
    name: "input",
    doc: "A value the person running the action provides.",
    groups: &[&[
        req(
            "name",
            Ty::Str,
            "name (an environment variable of the steps)",
        ),
        f("display_name", Ty::Str, "label"),
        f("description", Ty::Str, "help text"),
        f("default", Ty::Scalar, "value when none is given"),
        f("required", Ty::Bool, "must be given"),
        f(
            "type",
            Ty::Enum(&["string", "number", "bool"]),
            "value type",
        ),
    ]],
    free_tables: false,
};

pub static STEP: Schema = Schema {
    name: "step",
    doc: "One step of an action: a command, or a script inline or from a file.",
    groups: &[&[
        req("name", Ty::Str, "step name"),
        f("description", Ty::Str, "what it does"),
        f("command", Ty::Str, "command line (templates allowed)"),
        f(
            "inline_contents",
            Ty::Contents,
            "`./path` of a script in the package, or the script inline (templates allowed)",
        ),
        f("env_vars", STR_MAP, "environment (templates allowed)"),
        ign(
            "public_repo",
            Ty::Table(&REPO),
            "repository the script comes from",
        ),
        ign(
            "connected_repo",
            Ty::Table(&REPO),
            "repository the script comes from",
        ),
        ign("enable_kube_config", Ty::Bool, "provide KUBECONFIG"),
        f(
            "role",
            Ty::Str,
            "the role of the install's account the step runs as (default: the maintenance role; a runner in an install stack assumes it)",
        ),
        f(
            "inputs",
            Ty::Tables(&ACTION_INPUT),
            "values asked for when the step runs",
        ),
    ]],
    free_tables: false,
};

pub static ACTION: Schema = Schema {
    name: "action",
    doc: "An operation the install's runner runs, a job per step: by hand (`ferry actions run`), on a `cron` schedule (UTC), or at its place in deploy, provision and teardown workflows (lifecycle triggers; those of operations Ferry does not have never fire, with a warning).",
    groups: &[&[
        req("name", Ty::Str, "action name"),
        f("description", Ty::Str, "what it does"),
        req(
            "timeout",
            Ty::Duration,
            "longest run of each step (`30s`, `5m`; at most `1h`)",
        ),
        f("labels", STR_MAP, "labels"),
        req("triggers", Ty::Tables(&TRIGGER), "when it runs"),
        req("steps", Ty::Tables(&STEP), "what it runs, in order"),
        f(
            "dependencies",
            STRS,
            "components it needs (references to their outputs add more)",
        ),
        f(
            "break_glass_role",
            Ty::Str,
            "a break-glass role that must be granted on the runner host (`ferry-runner break-glass grant ROLE --for 1h`) for its steps to run",
        ),
        f(
            "role",
            Ty::Str,
            "the role of the install's account its steps run as, where a step names none (default: the maintenance role)",
        ),
        ign("enable_kube_config", Ty::Bool, "provide KUBECONFIG"),
        ign("image", Ty::Str, "container image the steps run in"),
        ign("kubernetes_context", Ty::Str, "named Kubernetes context"),
        f(
            "inputs",
            Ty::Tables(&ACTION_INPUT),
            "values asked for when the action runs",
        ),
    ]],
    free_tables: false,
};

pub static RUNBOOK_STEP: Schema = Schema {
    name: "step",
    doc: "One step of a runbook.",
    groups: &[&[
        req("name", Ty::Str, "step name"),
        req(
            "type",
            Ty::Enum(&[
                "deploy",
                "component_deploy",
                "action",
                "sandbox_reprovision",
                "sandbox_deprovision",
                "component_tear_down",
            ]),
            "deploy a component (`deploy`, also written `component_deploy`), run an action, reprovision or deprovision the sandbox, or tear a component down",
        ),
        f(
            "component_name",
            Ty::Str,
            "the component (`deploy`, `component_tear_down`)",
        ),
        f(
            "deploy_dependents",
            Ty::Bool,
            "also deploy what depends on the component (`deploy`)",
        ),
        f(
            "deploy_dependencies",
            Ty::Bool,
            "read as `deploy_dependents` (`deploy`)",
        ),
        f(
            "plan_only",
            Ty::Bool,
            "only plan the component, apply nothing (`deploy`)",
        ),
        f(
            "skip_component_deploys",
            Ty::Bool,
            "reprovision the sandbox alone, not the components after it (`sandbox_reprovision`)",
        ),
        f(
            "action_name",
            Ty::Str,
            "a declared action (`action`; or give the action inline)",
        ),
        f(
            "command",
            Ty::Str,
            "inline action: command line (templates allowed)",
        ),
        f(
            "inline_contents",
            Ty::Contents,
            "inline action: `./path` of a script (relative to the package root), or the script inline",
        ),
        f(
            "env_vars",
            STR_MAP,
            "inline action: environment (templates allowed)",
        ),
        f("timeout", Ty::Duration, "inline action: longest run"),
        f(
            "role",
            Ty::Str,
            "inline action: the role of the install's account it runs as",
        ),
        f("description", Ty::Str, "what it does"),
    ]],
    free_tables: false,
};

pub static RUNBOOK: Schema = Schema {
    name: "runbook",
    doc: "An ordered procedure run by `ferry runbooks run INSTALL NAME` as one workflow: component deploys and teardowns, the sandbox's reprovision or deprovision, and actions, each after the one before, with approvals where the install asks for them.",
    groups: &[&[
        req("name", Ty::Str, "runbook name"),
        f("description", Ty::Str, "what it does"),
        f(
            "readme",
            Ty::Contents,
            "`./path` of its documentation, or the text inline",
        ),
        f("labels", STR_MAP, "labels"),
        req("steps", Ty::Tables(&RUNBOOK_STEP), "steps, in order"),
    ]],
    free_tables: false,
};

pub static AWS_ACCOUNT: Schema = Schema {
    name: "aws_account",
    doc: "The install's AWS account.",
    groups: &[&[
        req("region", Ty::Str, "region"),
        f("iam_role_arn", Ty::Str, "role Ferry's runner uses"),
    ]],
    free_tables: false,
};

pub static AZURE_ACCOUNT: Schema = Schema {
    name: "azure_account",
    doc: "The install's Azure subscription.",
    groups: &[&[
        req("location", Ty::Str, "location"),
        f("subscription_id", Ty::Str, "subscription"),
        f("subscription_tenant_id", Ty::Str, "tenant"),
    ]],
    free_tables: false,
};

pub static GCP_ACCOUNT: Schema = Schema {
    name: "gcp_account",
    doc: "The install's GCP project.",
    groups: &[&[
        req("project_id", Ty::Str, "project"),
        req("region", Ty::Str, "region"),
    ]],
    free_tables: false,
};

pub static INSTALL: Schema = Schema {
    name: "install",
    doc: "An install declared with the app (for CI and demos): its account and input values.",
    groups: &[&[
        req("name", Ty::Str, "install name"),
        f("description", Ty::Str, "what it is for"),
        f(
            "approval_option",
            Ty::Str,
            "`approve-all` approves every plan without review; `prompt` (or anything else) waits for a person",
        ),
        f(
            "approve_all",
            Ty::Bool,
            "Ferry's older spelling of `approval_option = \"approve-all\"`",
        ),
        ign("aws_account", Ty::Table(&AWS_ACCOUNT), "AWS account"),
        ign(
            "azure_account",
            Ty::Table(&AZURE_ACCOUNT),
            "Azure subscription",
        ),
        ign("gcp_account", Ty::Table(&GCP_ACCOUNT), "GCP project"),
        f(
            "inputs",
            Ty::List(&INPUT_VALUES),
            "input values by input name (`[[inputs]]`, one table per input group or one for all)",
        ),
    ]],
    free_tables: false,
};

pub static INPUT_GROUPS: Schema = Schema {
    name: "input_groups.toml",
    doc: "Input groups; or `input_groups/*.toml` with one group per file.",
    groups: &[&[f("group", Ty::Tables(&INPUT_GROUP), "input groups")]],
    free_tables: false,
};

/// A top-level block of the package: `NAME.toml`, and/or a directory `NAME/`.
pub struct Block {
    pub name: &'static str,
    /// Schema of `NAME.toml`; `None` when `NAME.toml` holds `[[NAME]]` tables, each like one file of
    /// the directory form (`components.toml` with `[[components]]`).
    pub file: Option<&'static Schema>,
    pub dir: Dir,
}

#[derive(Debug, Clone, Copy)]
pub enum Dir {
    /// No directory form.
    None,
    /// `NAME/**/*.toml`, read recursively, one item per file with the item's keys at the top level
    /// (Nuon's form). A file holding the keys of `NAME.toml` instead (`[[input]]`, `[[policy]]`) is
    /// read like `NAME.toml` (Ferry's older form).
    Items(&'static Schema),
    /// `components/**/*.toml`: one component per file, its schema chosen by its `type`.
    Components,
}

/// Nuon files and folders Ferry knows but does not use: not warned about as unknown.
pub const IGNORED_NUON_FILES: &[(&str, &str)] = &[
    ("branch.toml", "Nuon's app-branch settings"),
    ("branches", "Nuon's app-branch settings"),
];

pub static INSTALLS_CONFIG: Schema = Schema {
    name: "installs.toml",
    doc: "Where installs are kept (Nuon's form: `[connected_repo]`); or `[[installs]]` tables, one per install.",
    groups: &[&[ign(
        "connected_repo",
        Ty::Table(&REPO),
        "a repository holding the installs",
    )]],
    free_tables: false,
};

pub const BLOCKS: &[Block] = &[
    Block {
        name: "metadata",
        file: Some(&METADATA),
        dir: Dir::None,
    },
    Block {
        name: "runner",
        file: Some(&RUNNER),
        dir: Dir::None,
    },
    Block {
        name: "sandbox",
        file: Some(&SANDBOX),
        dir: Dir::None,
    },
    Block {
        name: "inputs",
        file: Some(&INPUTS),
        dir: Dir::Items(&INPUT),
    },
    Block {
        name: "input_groups",
        file: Some(&INPUT_GROUPS),
        dir: Dir::Items(&INPUT_GROUP),
    },
    Block {
        name: "secrets",
        file: Some(&SECRETS),
        dir: Dir::Items(&SECRET),
    },
    Block {
        name: "permissions",
        file: Some(&PERMISSIONS),
        dir: Dir::Items(&ROLE),
    },
    Block {
        name: "policies",
        file: Some(&POLICIES),
        dir: Dir::Items(&POLICY),
    },
    Block {
        name: "break_glass",
        file: Some(&BREAK_GLASS),
        dir: Dir::Items(&ROLE),
    },
    Block {
        name: "stack",
        file: Some(&STACK),
        dir: Dir::None,
    },
    Block {
        name: "installer",
        file: Some(&INSTALLER),
        dir: Dir::None,
    },
    Block {
        name: "operation_roles",
        file: Some(&OPERATION_ROLES),
        dir: Dir::None,
    },
    Block {
        name: "kubernetes_contexts",
        file: Some(&KUBERNETES_CONTEXTS),
        dir: Dir::Items(&KUBERNETES_CONTEXT),
    },
    Block {
        name: "components",
        file: None,
        dir: Dir::Components,
    },
    Block {
        name: "actions",
        file: None,
        dir: Dir::Items(&ACTION),
    },
    Block {
        name: "runbooks",
        file: None,
        dir: Dir::Items(&RUNBOOK),
    },
    Block {
        name: "installs",
        file: None,
        dir: Dir::Items(&INSTALL),
    },
];
