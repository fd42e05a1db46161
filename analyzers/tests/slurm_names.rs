//! A Slurm job named as its users name it, end to end: slurmctld and the job's output file
//! (`slurm-4711.out`, torchtitan's step lines) tell job 4711 by its id, sacct tells its
//! name, `llama-pretrain`. The job is preempted and requeued at 09:00 and trains again
//! from 09:20. Ingested into a real store and analyzed, the report names the workload
//! `llama-pretrain` with run `4711` (one workload, not two), its stall is blamed on the
//! preemption, and a selection finds it by its name as by its id.

use std::fmt::Write as _;

use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};

const SLURMCTLD: &str = "\
[2026-11-29T08:00:00.000] sched: Allocate JobId=4711 NodeList=gpu-[01-02] #CPUs=128 Partition=train
[2026-11-29T09:00:00.000] preempted JobId=4711 has been requeued to reclaim resources for JobId=4800
[2026-11-29T09:00:01.000] sched: Allocate JobId=4800 NodeList=gpu-[01-02] #CPUs=128 Partition=urgent
[2026-11-29T09:20:00.000] sched: Allocate JobId=4711 NodeList=gpu-[03-04] #CPUs=128 Partition=train
";

const SACCT: &str = "\
JobID|JobName|Partition|State|Start|End|NodeList
4711|llama-pretrain|train|COMPLETED|2026-11-29T09:20:00|2026-11-29T11:00:00|gpu-[03-04]
4711.batch|batch||COMPLETED|2026-11-29T09:20:00|2026-11-29T11:00:00|gpu-03
4800|urgent-eval|urgent|COMPLETED|2026-11-29T09:00:01|2026-11-29T09:19:30|gpu-[01-02]
";

/// torchtitan's step lines every 10 steps of 3 s, from `from` to `to` (seconds after
/// 08:00), counting from `step`.
fn steps(out: &mut String, from: i64, to: i64, mut step: i64) -> i64 {
    let mut t = from;
    while t < to {
        let when = chrono::DateTime::from_timestamp(1_795_939_200 + t, 0).unwrap();
        writeln!(
            out,
            "[rank0]:[titan] {},000 - root - INFO - step: {step}  loss: 3.1000  grad_norm:  0.5000  memory: 48.00GiB(60.00%)  tps: 4,400  tflops: 150.00  mfu: 15.00%",
            when.format("%Y-%m-%d %H:%M:%S")
        )
        .unwrap();
        t += 30;
        step += 10;
    }
    step
}

#[tokio::test]
async fn a_slurm_job_is_named_by_its_name_with_its_id_as_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("slurm")).unwrap();
    std::fs::write(input.join("slurm/slurmctld.log"), SLURMCTLD).unwrap();
    std::fs::write(input.join("slurm/sacct.txt"), SACCT).unwrap();
    let mut out = String::new();
    // 08:00..09:00, preempted, 09:20..11:00 from the step it had reached.
    let reached = steps(&mut out, 60, 3600, 10);
    steps(&mut out, 20 * 60 + 3600 + 60, 3 * 3600, reached);
    std::fs::write(input.join("slurm/slurm-4711.out"), out).unwrap();
    let store = dir.path().join("store");
    ingest_dir(&input, &store).unwrap();

    let (report, _) = analyze_store(&store, &Selection::default()).await.unwrap();
    let mine: Vec<_> = report
        .workloads
        .iter()
        .filter(|w| w.workload.as_deref() == Some("llama-pretrain"))
        .collect();
    assert_eq!(mine.len(), 1, "{:#?}", report.workloads);
    assert_eq!(mine[0].run_id.as_deref(), Some("4711"));
    assert!(
        report
            .workloads
            .iter()
            .all(|w| w.workload.as_deref() != Some("4711")),
        "{:#?}",
        report.workloads
    );
    let stalls: Vec<_> = report
        .slowdowns
        .iter()
        .filter(|s| s.workload.as_deref() == Some("llama-pretrain"))
        .collect();
    assert_eq!(stalls.len(), 1, "{:#?}", report.slowdowns);
    let s = stalls[0];
    assert_eq!(s.run_id.as_deref(), Some("4711"));
    assert_eq!(
        s.causes.first().map(|c| c.cause.as_str()),
        Some("orchestrator.preemption"),
        "{s:#?}"
    );

    for by in ["llama-pretrain", "4711"] {
        let sel = Selection {
            workload: Some(by.to_string()),
            ..Selection::default()
        };
        let (r, _) = analyze_store(&store, &sel).await.unwrap();
        assert_eq!(r.slowdowns.len(), 1, "selected by {by}: {:#?}", r.slowdowns);
        assert_eq!(r.slowdowns[0].workload.as_deref(), Some("llama-pretrain"));
    }
}
