//! End-to-end analysis of small hand-made logs: the seed preemption story, a GPU failure
//! chain, a clean run and the report's invariants.

mod common;

use common::{At, Log, S, T0, train};
use whyslow_analyzers::report::{self, Format};
use whyslow_analyzers::{DetectorConfig, Selection, analyze};
use whyslow_schemas::Layer;

fn preemption_log() -> Log {
    let mut log = Log::default();
    let job = At::workload("llm", "finetune").run("exp");
    let tgi = At::workload("llm", "tgi");
    let o = Layer::Orchestrator;
    log.event(
        0.0,
        o,
        "quota_reserved",
        &job,
        Some("QuotaReserved"),
        Some("Quota reserved in ClusterQueue cluster-queue"),
        &[("priority", "20"), ("cluster_queue", "cluster-queue")],
    );
    log.event(
        1.0,
        o,
        "admitted",
        &job,
        Some("Admitted"),
        None,
        &[("priority", "20"), ("cluster_queue", "cluster-queue")],
    );
    for (i, n) in ["node-0", "node-1"].iter().enumerate() {
        log.event(
            3.0,
            o,
            "scheduled",
            &job.clone().pod(&format!("finetune-{i}-abc")).on(n),
            Some("Scheduled"),
            None,
            &[],
        );
    }
    let last = train(&mut log, &job, 4, 10.0, 2400.0, 2.0, 1);
    log.event(
        2395.0,
        o,
        "scaled",
        &tgi,
        Some("ScalingReplicaSet"),
        Some("Scaled up replica set tgi-7f to 2"),
        &[],
    );
    log.event(
        2396.0,
        o,
        "quota_reserved",
        &tgi,
        Some("QuotaReserved"),
        None,
        &[("priority", "30"), ("cluster_queue", "cluster-queue")],
    );
    log.event(2396.0, o, "evicted", &job, Some("Preempted"), Some("Preempted to accommodate a workload (UID: 1234) due to prioritization in the ClusterQueue"), &[("preemption_reason", "InClusterQueue")]);
    log.event(
        2396.5,
        o,
        "admitted",
        &tgi,
        Some("Admitted"),
        None,
        &[("priority", "30")],
    );
    for (i, n) in ["node-0", "node-1"].iter().enumerate() {
        log.event(
            2397.0,
            o,
            "killing",
            &job.clone().pod(&format!("finetune-{i}-abc")).on(n),
            Some("Killing"),
            Some("Stopping container"),
            &[],
        );
    }
    log.event(
        2400.0,
        o,
        "scheduled",
        &tgi.clone().pod("tgi-7f-xyz").on("node-0"),
        Some("Scheduled"),
        None,
        &[],
    );
    for k in 0..4 {
        log.event(2400.0 + 300.0 * k as f64, o, "pending", &job, Some("Pending"), Some("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 2 more needed"), &[]);
    }
    log.event(
        3900.0,
        o,
        "admitted",
        &job,
        Some("Admitted"),
        None,
        &[("priority", "20")],
    );
    log.event(
        3905.0,
        o,
        "scheduled",
        &job.clone().pod("finetune-0-def").on("node-0"),
        Some("Scheduled"),
        None,
        &[],
    );
    log.event(
        3906.0,
        o,
        "scheduled",
        &job.clone().pod("finetune-1-def").on("node-1"),
        Some("Scheduled"),
        None,
        &[],
    );
    log.event(
        3930.0,
        Layer::Framework,
        "checkpoint_restored",
        &job,
        None,
        Some("Resuming from checkpoint-1100"),
        &[("step", "1100"), ("seconds", "12.0")],
    );
    train(&mut log, &job, 4, 3932.0, 6000.0, 2.0, 1101);
    assert_eq!(
        last, 1195,
        "steps 1..=1195 every 2 s from 10 s: the last at 2398 s"
    );
    log
}

#[tokio::test]
async fn preemption_stall_is_blamed_on_the_preemptor() {
    let ctx = preemption_log().session().await;
    let a = analyze(&ctx, &Selection::default(), &DetectorConfig::default())
        .await
        .unwrap();
    let stalls: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.symptom.kind.as_str() == "stall")
        .collect();
    assert_eq!(
        a.findings.len(),
        1,
        "{:#?}",
        a.findings
            .iter()
            .map(|f| (&f.symptom.kind, &f.symptom.key, f.symptom.start_ns))
            .collect::<Vec<_>>()
    );
    let f = stalls[0];
    let v = &f.causes[0];
    assert_eq!(v.cause.id(), "orchestrator.preemption", "{:#?}", f.causes);
    assert!(v.summary.contains("llm/tgi"), "{}", v.summary);
    assert!(
        v.summary.contains("priority 30") && v.summary.contains("priority 20"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("cluster-queue"), "{}", v.summary);
    // Step 1195 at 2398 s is regained at 3932 + 2 * (1195 - 1101) s after the restore.
    assert_eq!(f.symptom.start_ns, T0 + 2398 * S);
    let lost = f.symptom.lost_seconds;
    assert!(
        (lost - (3932.0 + 2.0 * 94.0 - 2398.0)).abs() < 1e-6,
        "{lost}"
    );
    assert!(v.chain.iter().any(|l| l.kind == "scaled"));
    assert!(
        v.chain
            .last()
            .is_some_and(|l| l.kind == "checkpoint_restored"),
        "{:#?}",
        v.chain
    );
    let explained: f64 = f.causes.iter().map(|c| c.explained_seconds).sum();
    assert!(explained <= lost + 1e-9);
    let rep = report::build::build(&a, "mem", chrono::DateTime::UNIX_EPOCH);
    let md = report::render(&rep, &a, Format::Markdown).unwrap();
    assert!(md.contains("orchestrator.preemption"));
    let html = report::render(&rep, &a, Format::Html).unwrap();
    assert!(html.contains("<svg") && html.contains("</html>"));
}

#[tokio::test]
async fn steady_run_has_no_slowdown() {
    let mut log = Log::default();
    let job = At::workload("ml", "steady").run("r1");
    train(&mut log, &job, 4, 0.0, 3000.0, 1.5, 1);
    let ctx = log.session().await;
    let a = analyze(&ctx, &Selection::default(), &DetectorConfig::default())
        .await
        .unwrap();
    assert!(
        a.findings.is_empty(),
        "{:#?}",
        a.findings
            .iter()
            .map(|f| (&f.symptom.kind, f.symptom.lost_seconds))
            .collect::<Vec<_>>()
    );
    assert_eq!(a.workloads.len(), 1);
}

#[tokio::test]
async fn xid_79_is_the_verdict_over_the_restore_it_caused() {
    let mut log = Log::default();
    let job = At::workload("ml", "pretrain").run("r1");
    let o = Layer::Orchestrator;
    let i = Layer::Infrastructure;
    for (k, n) in ["node-0", "node-1"].iter().enumerate() {
        log.event(
            1.0,
            o,
            "scheduled",
            &job.clone().pod(&format!("pretrain-{k}-a")).on(n),
            None,
            None,
            &[],
        );
    }
    train(&mut log, &job, 4, 10.0, 1800.0, 2.0, 1);
    log.event(
        1801.0,
        i,
        "xid",
        &At::node("node-1").gpu("1"),
        Some("79"),
        Some("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."),
        &[("xid", "79")],
    );
    log.event(
        1840.0,
        i,
        "node_not_ready",
        &At::node("node-1"),
        Some("NodeNotReady"),
        Some("Node node-1 status is now: NodeNotReady"),
        &[],
    );
    log.event(
        1845.0,
        o,
        "killing",
        &job.clone().pod("pretrain-1-a").on("node-1"),
        Some("Killing"),
        None,
        &[],
    );
    log.event(
        2400.0,
        o,
        "scheduled",
        &job.clone().pod("pretrain-1-b").on("node-2"),
        None,
        None,
        &[],
    );
    log.event(
        2450.0,
        Layer::Framework,
        "checkpoint_restored",
        &job,
        None,
        Some("Resuming from checkpoint-800"),
        &[("step", "800"), ("seconds", "300")],
    );
    log.event(
        500.0,
        Layer::Framework,
        "checkpoint_saved",
        &job,
        None,
        None,
        &[("seconds", "10")],
    );
    log.event(
        1000.0,
        Layer::Framework,
        "checkpoint_saved",
        &job,
        None,
        None,
        &[("seconds", "10")],
    );
    train(&mut log, &job, 4, 2452.0, 4000.0, 2.0, 801);
    let ctx = log.session().await;
    let a = analyze(&ctx, &Selection::default(), &DetectorConfig::default())
        .await
        .unwrap();
    assert_eq!(
        a.findings.len(),
        1,
        "{:#?}",
        a.findings
            .iter()
            .map(|f| (&f.symptom.kind, f.symptom.start_ns))
            .collect::<Vec<_>>()
    );
    let f = &a.findings[0];
    assert_eq!(
        f.causes[0].cause.id(),
        "infrastructure.gpu_failure",
        "{:#?}",
        f.causes
    );
    let ids: Vec<&str> = f.causes.iter().map(|c| c.cause.id()).collect();
    assert!(ids.contains(&"infrastructure.node_failure"), "{ids:?}");
    // The restore (300 s against 10 s saves) is the workload's first: restores are judged
    // against earlier restores, never saves, so it is no evidence of its own.
    assert!(!ids.contains(&"framework.checkpoint_restore"), "{ids:?}");
    let kinds: Vec<&str> = f.causes[0].chain.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"xid"));
    assert_eq!(kinds.last(), Some(&"checkpoint_restored"));
}

#[tokio::test(flavor = "current_thread")]
async fn one_checkpoint_told_by_many_sources_is_one_operation() {
    use arrow::array::{Array, Int64Array};
    let mut log = Log::default();
    let job = At::workload("ml", "ft");
    let f = Layer::Framework;
    // A restore told by the trainer's log line at its start and by two ranks' SDK events at
    // its end with their durations; a second restore much later, told once.
    log.event(
        100.0,
        f,
        "checkpoint_restored",
        &job,
        None,
        Some("Loading states from ckpt-800"),
        &[("step", "800")],
    );
    log.event(
        122.0,
        f,
        "checkpoint_restored",
        &job,
        None,
        None,
        &[("step", "800"), ("seconds", "22")],
    );
    log.event(
        123.0,
        f,
        "checkpoint_restored",
        &job,
        None,
        None,
        &[("step", "800"), ("seconds", "21.5")],
    );
    log.event(
        3000.0,
        f,
        "checkpoint_restored",
        &job,
        None,
        None,
        &[("step", "1600"), ("seconds", "23")],
    );
    // Two saves 30 s apart are two saves.
    log.event(
        500.0,
        f,
        "checkpoint_saved",
        &job,
        None,
        None,
        &[("step", "900"), ("seconds", "14")],
    );
    log.event(
        530.0,
        f,
        "checkpoint_saved",
        &job,
        None,
        None,
        &[("step", "910"), ("seconds", "14")],
    );
    let ctx = log.session().await;
    let rows = |q: &'static str| {
        let ctx = &ctx;
        async move {
            let batches = ctx.sql(q).await.unwrap().collect().await.unwrap();
            let mut out = Vec::new();
            for b in &batches {
                let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                let n = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
                for i in 0..b.num_rows() {
                    out.push((a.value(i), n.value(i)));
                }
            }
            out
        }
    };
    // Restores: the first told three times (longest 22 s), the second once.
    assert_eq!(
        rows(
            "SELECT CAST(op_seconds * 10 AS BIGINT), CAST(count(*) AS BIGINT) FROM checkpoint_ops \
             WHERE kind = 'checkpoint_restored' GROUP BY op, op_seconds ORDER BY op"
        )
        .await,
        vec![(220, 3), (230, 1)]
    );
    // Saves: two operations of one report each.
    assert_eq!(
        rows(
            "SELECT CAST(op AS BIGINT) AS o, CAST(count(*) AS BIGINT) AS n FROM checkpoint_ops \
             WHERE kind = 'checkpoint_saved' GROUP BY op ORDER BY o"
        )
        .await,
        vec![(1, 1), (2, 1)]
    );
}

/// A JobSet's child Job (`workload_members`) waiting for its pod while the JobSet's run is
/// stopped: the wait is the JobSet's stall, not a slowdown of a workload of its own, and
/// the child Job is no workload of the report's (it is the JobSet's).
#[tokio::test]
async fn a_jobset_members_wait_is_its_wholes_stall() {
    let mut log = Log::default();
    let o = Layer::Orchestrator;
    let whole = At::workload("ft", "llm").run("r1");
    let member = At::workload("ft", "llm-slice-0");
    log.event(
        0.0,
        o,
        "config",
        &member,
        None,
        None,
        &[
            ("workload_kind", "Job"),
            ("owner_kind", "JobSet"),
            ("owner_name", "llm"),
        ],
    );
    let last = train(&mut log, &whole, 2, 0.0, 1200.0, 2.0, 1);
    let pod = "llm-slice-0-0-xk2lp";
    log.event(
        1210.0,
        o,
        "created",
        &member,
        None,
        Some(&format!("Created pod: {pod}")),
        &[("child_kind", "Pod"), ("child_name", pod)],
    );
    for t in [1215.0, 1500.0, 1900.0, 2300.0] {
        log.event(
            t,
            o,
            "failed_scheduling",
            &member.clone().pod(pod),
            Some("FailedScheduling"),
            Some("0/4 nodes are available: 4 Insufficient google.com/tpu."),
            &[],
        );
    }
    log.event(
        2350.0,
        o,
        "scheduled",
        &member.clone().pod(pod).on("node-0"),
        None,
        None,
        &[],
    );
    train(&mut log, &whole, 2, 2400.0, 3600.0, 2.0, last + 1);
    let ctx = log.session().await;
    let a = analyze(&ctx, &Selection::default(), &DetectorConfig::default())
        .await
        .unwrap();
    let found: Vec<_> = a
        .findings
        .iter()
        .map(|f| (f.symptom.key.workload.clone(), f.symptom.kind))
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0.as_deref(), Some("llm"), "{found:#?}");
    let names: Vec<_> = a.workloads.iter().map(|w| w.key.workload.clone()).collect();
    assert_eq!(names, vec![Some("llm".to_string())]);
}
