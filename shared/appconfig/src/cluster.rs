//! Which Kubernetes cluster an install's components deploy into, read from its sandbox's outputs.
//!
//! Two shapes are understood, first match wins:
//! * a `kubeconfig` output: a whole kubeconfig (YAML or JSON), for sandboxes that make or find a
//!   cluster themselves (a script sandbox, a Terraform module with a `kubeconfig` output);
//! * Nuon's AWS sandboxes' `cluster` object (`name`, `endpoint`, `certificate_authority_data`) with
//!   `account.region`: an EKS cluster, reached with `aws eks get-token` on the runner host, under the
//!   runner's own AWS identity (as Nuon's runner does).
//!
//! Neither: `None`, and the runner uses its own cluster (in-cluster service account, or its
//! `--kubeconfig`).

use ferry_protocol::messages::ClusterAccess;
use serde_json::{Value, json};

/// The cluster the sandbox's outputs name, or why they name one badly.
pub fn access(
    sandbox_outputs: &serde_json::Map<String, Value>,
) -> Result<Option<ClusterAccess>, String> {
    if let Some(k) = sandbox_outputs.get("kubeconfig") {
        let Some(text) = k.as_str().filter(|t| !t.trim().is_empty()) else {
            return Err("the sandbox's `kubeconfig` output is not a kubeconfig (a string)".into());
        };
        return Ok(Some(ClusterAccess {
            kubeconfig: text.to_string(),
            server: server_of(text).unwrap_or_else(|| "(its current context)".into()),
            source: "the sandbox's `kubeconfig` output".into(),
        }));
    }
    let Some(cluster) = sandbox_outputs.get("cluster").filter(|c| c.is_object()) else {
        return Ok(None);
    };
    let field = |k: &str| cluster[k].as_str().filter(|s| !s.is_empty());
    let (Some(name), Some(endpoint), Some(ca)) = (
        field("name"),
        field("endpoint"),
        field("certificate_authority_data"),
    ) else {
        return Ok(None);
    };
    let region = sandbox_outputs
        .get("account")
        .and_then(|a| a["region"].as_str())
        .ok_or(
            "the sandbox's `cluster` output names an EKS cluster but `account.region` is missing",
        )?;
    let kubeconfig = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca}}],
        "users": [{"name": "ferry-runner", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
            "interactiveMode": "Never",
        }}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "ferry-runner"}}],
        "current-context": name,
    });
    Ok(Some(ClusterAccess {
        kubeconfig: kubeconfig.to_string(),
        server: endpoint.to_string(),
        source: format!("the sandbox's `cluster` output (EKS cluster `{name}` in {region})"),
    }))
}

/// The `server:` of a kubeconfig's first cluster, read as text: enough for a message, and it needs
/// no YAML parser in the control plane.
fn server_of(kubeconfig: &str) -> Option<String> {
    if let Ok(v) = serde_json::from_str::<Value>(kubeconfig) {
        return v["clusters"][0]["cluster"]["server"]
            .as_str()
            .map(str::to_string);
    }
    kubeconfig.lines().find_map(|l| {
        let v = l.trim().strip_prefix("server:")?.trim();
        Some(v.trim_matches(['"', '\'']).to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_kubeconfig_output_is_used_as_it_is() {
        let k =
            "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: c\n";
        let a = access(&outputs(json!({"kubeconfig": k, "cluster": {"name": "x"}})))
            .unwrap()
            .unwrap();
        assert_eq!(a.kubeconfig, k);
        assert_eq!(a.server, "https://10.0.0.1:6443");
        assert_eq!(a.source, "the sandbox's `kubeconfig` output");
        assert!(access(&outputs(json!({"kubeconfig": 3}))).is_err());
    }

    #[test]
    fn nuons_eks_outputs_give_an_aws_authenticated_kubeconfig() {
        let o = outputs(json!({
            "cluster": {"name": "prod", "endpoint": "https://abc.eks.amazonaws.com",
                        "certificate_authority_data": "Q0E="},
            "account": {"region": "eu-west-1"}
        }));
        let a = access(&o).unwrap().unwrap();
        let k: Value = serde_json::from_str(&a.kubeconfig).unwrap();
        assert_eq!(
            k["clusters"][0]["cluster"]["server"],
            "https://abc.eks.amazonaws.com"
        );
        assert_eq!(
            k["clusters"][0]["cluster"]["certificate-authority-data"],
            "Q0E="
        );
        assert_eq!(k["users"][0]["user"]["exec"]["command"], "aws");
        assert_eq!(
            k["users"][0]["user"]["exec"]["args"],
            json!([
                "eks",
                "get-token",
                "--cluster-name",
                "prod",
                "--region",
                "eu-west-1",
                "--output",
                "json"
            ])
        );
        assert_eq!(k["current-context"], "prod");
        assert_eq!(a.server, "https://abc.eks.amazonaws.com");
        let mut no_region = o.clone();
        no_region.remove("account");
        assert!(access(&no_region).unwrap_err().contains("account.region"));
    }

    #[test]
    fn a_sandbox_without_a_cluster_names_none() {
        assert_eq!(access(&outputs(json!({"vpc": {"id": "v"}}))).unwrap(), None);
        assert_eq!(
            access(&outputs(json!({"cluster": {"name": "half"}}))).unwrap(),
            None
        );
    }
}
