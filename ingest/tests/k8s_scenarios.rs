//! The k8s decoder on the Kubernetes/Kueue files of every committed fixture scenario
//! (`fixtures/scenarios/*/{inventory.json,k8s-events.jsonl,kueue-workloads.jsonl}`,
//! written by the fixtures generator in the real formats): zero rejections, and the
//! vocabulary the analyzers query comes out.

mod k8s_common;

use std::collections::BTreeSet;
use std::path::Path;

use k8s_common::*;
use whyslow_ingest::decode::k8s::K8sDecoder;

#[test]
fn every_scenario_decodes_without_rejections() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut kinds = BTreeSet::new();
    let mut files = 0;
    for dir in &dirs {
        let mut dec = K8sDecoder::new();
        for f in [
            "inventory.json",
            "kueue-workloads.jsonl",
            "k8s-events.jsonl",
        ] {
            let p = dir.join(f);
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            files += 1;
            let name = p.display().to_string();
            let d = decode_with(&mut dec, &name, &bytes);
            assert_eq!(
                d.counts.rejected,
                0,
                "{name}: {:?}",
                d.dead
                    .iter()
                    .map(|x| (&x.source_ref, &x.error))
                    .collect::<Vec<_>>()
            );
            for r in &d.rows {
                kinds.insert(r.kind.clone());
            }
        }
    }
    assert!(files > 0, "no scenario files under {}", root.display());
    eprintln!("kinds: {kinds:?}");
    for k in [
        "scheduled",
        "pod_placed",
        "preempted",
        "evicted",
        "quota_reserved",
        "admitted",
        "pending",
        "suspended",
        "resumed",
        "node_not_ready",
        "maintenance",
        "oom_killed",
        "failed_scheduling",
        "back_off",
        "scaled",
        "image_pull_failed",
        "container_created",
        "rebooted",
    ] {
        assert!(kinds.contains(k), "{k} missing from {kinds:?}");
    }
}
