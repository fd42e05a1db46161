-- Every metric sample inside the window, with what identifies its series: the one scan of
-- the samples the analysis makes. The reader (`analyze/metric_scan.rs`) folds the rows as
-- they stream into every series' first and last sample (`series_extents`, as
-- `symptoms/series_extents.sql` defines it), the workloads' accelerator utilization
-- (gpu_util, duty_cycle: scrape interval and per-interval sums) and the straggler
-- candidates' GPU activity (sm_active, tensor_active, power_watts: per-minute means),
-- naming a sample's workload from its pod where it names none (`pod_workloads`). Rows
-- come unordered, in runs of one series (a segment stores its rows series by series, in
-- time order).
--
-- Cost: the columns of a day of 1000 nodes (104M samples) take 2–3 s to decode; three
-- queries that each read what they needed took 5.2 s (extents 2.3, utilization 1.4,
-- activity 1.5). Over a store, the analysis reads these same rows straight from the
-- segments with the key columns as dictionaries (`whyslow_queries::dictionary_scan`:
-- no string decoded or compared per row); this query is what that read must equal
-- (`analyzers/tests/segment_scan.rs`), and what runs over in-memory tables.
SELECT namespace, workload, pod, node, device, metric, time, value
FROM metrics
WHERE time >= $from AND time <= $to;
