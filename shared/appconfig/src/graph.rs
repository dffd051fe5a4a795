use std::collections::{BTreeMap, BTreeSet};

/// Orders components into deploy stages: every component comes after all of its dependencies, and
/// the components of one stage are independent of each other (they may deploy in parallel). Names
/// within a stage are sorted so the order is stable.
///
/// `Err` carries one dependency cycle as a path that starts and ends at the same name.
pub fn deploy_stages(
    deps: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<Vec<String>>, Vec<String>> {
    let mut remaining: BTreeMap<&str, BTreeSet<&str>> = deps
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                v.iter()
                    .map(String::as_str)
                    .filter(|d| deps.contains_key(*d))
                    .collect(),
            )
        })
        .collect();
    let mut stages = Vec::new();
    while !remaining.is_empty() {
        let ready: Vec<&str> = remaining
            .iter()
            .filter(|(_, d)| d.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if ready.is_empty() {
            return Err(find_cycle(&remaining));
        }
        for r in &ready {
            remaining.remove(r);
        }
        for d in remaining.values_mut() {
            for r in &ready {
                d.remove(r);
            }
        }
        stages.push(ready.into_iter().map(str::to_string).collect());
    }
    Ok(stages)
}

fn find_cycle(graph: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    // Every node left has an unmet dependency inside the graph, so walking dependencies from any node
    // must revisit a node: the walk from its first visit is the cycle.
    let Some(start) = graph.keys().next() else {
        return vec![];
    };
    let mut path: Vec<&str> = vec![start];
    let mut cur = *start;
    loop {
        let Some(next) = graph.get(cur).and_then(|d| d.iter().next()) else {
            return vec![];
        };
        if let Some(pos) = path.iter().position(|p| p == next) {
            let mut cycle: Vec<String> = path[pos..].iter().map(|s| s.to_string()).collect();
            cycle.push(next.to_string());
            return cycle;
        }
        path.push(next);
        cur = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(edges: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn stages_group_independent_components() {
        let s = deploy_stages(&g(&[
            ("c", &["a", "b"]),
            ("a", &[]),
            ("b", &[]),
            ("d", &["c"]),
        ]))
        .unwrap();
        assert_eq!(s, vec![vec!["a", "b"], vec!["c"], vec!["d"]]);
    }

    #[test]
    fn cycles_are_reported_as_paths() {
        let c = deploy_stages(&g(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a"]),
            ("d", &[]),
        ]))
        .unwrap_err();
        assert_eq!(c, vec!["a", "b", "c", "a"]);
        let c = deploy_stages(&g(&[("a", &["a"])])).unwrap_err();
        assert_eq!(c, vec!["a", "a"]);
    }
}
