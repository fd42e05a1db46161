-- Accelerator utilization (DCGM gpu_util, TPU duty_cycle) per workload inside the
-- window, the workload named on the sample, else its pod's (`pod_workloads`), already
-- reduced to what the throughput detector reads: per workload and metric, its scrape
-- interval and, per interval-long bucket, the sum and count of the samples of all its
-- devices. Memory is bounded by workloads × buckets, not by samples.
--
-- The scrape interval is the median gap between consecutive samples of one device, read
-- from up to 16 of the workload's devices (the first by node and device: one scrape
-- configuration serves them all), so that only their samples are sorted. Without a
-- positive gap (one sample per device) `interval_ns` is NULL and the buckets are the
-- samples' own times.
--
-- Sums are of values in millionths as integers: the same bits whatever order the rows
-- come in.
WITH samples AS (
  SELECT coalesce(m.namespace, p.namespace) AS namespace,
    coalesce(m.workload, p.workload) AS workload,
    m.metric, m.node, m.device, epoch_ns(m.time) AS t, m.value
  FROM metrics m
  LEFT JOIN pod_workloads p
    ON m.pod = p.pod AND (m.namespace IS NOT DISTINCT FROM p.namespace)
  WHERE m.metric IN ('gpu_util', 'duty_cycle')
    AND m.time >= $from AND m.time <= $to
    AND coalesce(m.workload, p.workload) IS NOT NULL
),
sampled_devices AS (
  SELECT namespace, workload, metric, node, device
  FROM (
    SELECT namespace, workload, metric, node, device,
      row_number() OVER (PARTITION BY namespace, workload, metric
                         ORDER BY node NULLS FIRST, device NULLS FIRST) AS n
    FROM (SELECT DISTINCT namespace, workload, metric, node, device FROM samples) AS d
  ) AS ranked
  WHERE n <= 16
),
gaps AS (
  SELECT s.namespace, s.workload, s.metric,
    s.t - lag(s.t) OVER (PARTITION BY s.namespace, s.workload, s.metric, s.node, s.device
                         ORDER BY s.t) AS gap
  FROM samples s
  JOIN sampled_devices d
    ON s.namespace = d.namespace AND s.workload = d.workload AND s.metric = d.metric
    AND (s.node IS NOT DISTINCT FROM d.node) AND (s.device IS NOT DISTINCT FROM d.device)
),
intervals AS (
  SELECT namespace, workload, metric,
    CAST(median(CAST(gap AS DOUBLE)) AS BIGINT) AS interval_ns
  FROM gaps
  WHERE gap > 0
  GROUP BY namespace, workload, metric
)
SELECT s.namespace, s.workload, s.metric, i.interval_ns,
  CASE WHEN i.interval_ns IS NULL THEN s.t ELSE s.t / i.interval_ns END AS bucket,
  sum(CAST(round(s.value * 1000000) AS BIGINT)) AS value_millionths,
  count(*) AS samples
FROM samples s
LEFT JOIN intervals i
  ON s.namespace = i.namespace AND s.workload = i.workload AND s.metric = i.metric
GROUP BY s.namespace, s.workload, s.metric, i.interval_ns, 5
ORDER BY s.namespace, s.workload, s.metric, bucket;
