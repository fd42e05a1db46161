-- Each workload's progress times (`state/workload_progress.sql`), as the live analyzer
-- reads them one segment of `metrics` at a time and keeps them between analyses
-- (`analyze/segment_rows.rs`): the view `checkpoint_ops` then reads the kept rows instead
-- of every framework sample of the store at each analysis.
SELECT namespace, workload, t FROM workload_progress;
