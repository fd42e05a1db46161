-- A serving engine's samples (vLLM, TGI, or any exporter writing the same whyslow names:
-- request latency quantiles and the requests they were measured on, request and token
-- rates, queue depth, KV cache use, preemptions) with the workload each belongs to: the
-- one the sample names, else its pod's (any controller: a Deployment's replicas
-- included), else the workload whose name the pod's name extends
-- (`<deployment>-<hash>-<id>`, the longest such name), as a scrape of a replica that
-- started before the data names only its pod; and when no event names the workload at all
-- (replicas that ran through the window untouched), the owner the pod's name gives by
-- Kubernetes' naming rules (`pod_owner`). A router that logs each request instead of being
-- scraped (TGI's and TEI's `Success` lines: one `request_seconds` and
-- `time_per_output_token_seconds` row per request) gives the same series per replica and
-- minute: the requests' p50/p95/p99 (continuous percentiles), how many there were, and
-- the rate they were served at. A replica whose router is also scraped keeps the scrape's
-- series only (the same requests counted twice would double their weight).
CREATE OR REPLACE VIEW serving_samples AS
WITH scraped AS (
  SELECT DISTINCT coalesce(namespace, '') AS namespace, pod FROM metrics
  WHERE metric = 'request_seconds_observations' AND pod IS NOT NULL
),
requests AS (
  SELECT arrow_cast(date_bin(INTERVAL '1 minute', m.time, TIMESTAMP '1970-01-01T00:00:00Z'),
      'Timestamp(Microsecond, Some("UTC"))') AS time,
    m.source, m.metric, m.cluster, m.node, m.namespace, m.workload, m.pod,
    percentile_cont(0.5) WITHIN GROUP (ORDER BY m.value) AS p50,
    percentile_cont(0.95) WITHIN GROUP (ORDER BY m.value) AS p95,
    percentile_cont(0.99) WITHIN GROUP (ORDER BY m.value) AS p99,
    CAST(count(*) AS DOUBLE) AS n
  FROM metrics m
  LEFT JOIN scraped s ON s.pod = m.pod AND s.namespace = coalesce(m.namespace, '')
  WHERE m.metric IN ('request_seconds', 'time_per_output_token_seconds')
    AND m.value = m.value AND s.pod IS NULL
  GROUP BY date_bin(INTERVAL '1 minute', m.time, TIMESTAMP '1970-01-01T00:00:00Z'),
    m.source, m.metric, m.cluster, m.node, m.namespace, m.workload, m.pod
),
serving AS (
  SELECT r.time, r.source,
    CASE k.part WHEN 'rate' THEN 'requests_succeeded_per_second'
      ELSE concat(r.metric, k.part) END AS metric,
    CASE k.part WHEN '_p50' THEN r.p50 WHEN '_p95' THEN r.p95 WHEN '_p99' THEN r.p99
      WHEN '_observations' THEN r.n ELSE r.n / 60.0 END AS value,
    r.cluster, r.node, r.namespace, r.workload, r.pod
  FROM requests r
  CROSS JOIN (VALUES ('_p50'), ('_p95'), ('_p99'), ('_observations'), ('rate')) AS k(part)
  WHERE k.part <> 'rate' OR r.metric = 'request_seconds'
  -- The scraped series in two lists: DataFusion prunes pages and row groups by an IN list
  -- of at most 20 values, and reads every page for a longer one (1000 nodes x a day:
  -- 1.1 s for no serving sample at all, 0.35 s in two).
  UNION ALL
  SELECT time, source, metric, value, cluster, node, namespace, workload, pod FROM metrics
  WHERE metric IN ('ttft_seconds_p50', 'ttft_seconds_p95', 'ttft_seconds_p99',
                   'ttft_seconds_observations',
                   'inter_token_seconds_p50', 'inter_token_seconds_p95',
                   'inter_token_seconds_p99', 'inter_token_seconds_observations',
                   'time_per_output_token_seconds_p50', 'time_per_output_token_seconds_p95',
                   'time_per_output_token_seconds_p99',
                   'time_per_output_token_seconds_observations')
  UNION ALL
  SELECT time, source, metric, value, cluster, node, namespace, workload, pod FROM metrics
  WHERE metric IN ('request_seconds_p50', 'request_seconds_p95', 'request_seconds_p99',
                   'request_seconds_observations',
                   'requests_per_second', 'requests_succeeded_per_second',
                   'prompt_tokens_per_second', 'generation_tokens_per_second',
                   'requests_waiting', 'requests_running', 'kv_cache_usage',
                   'preemptions_per_second')
),
pods AS (
  SELECT DISTINCT namespace, pod FROM serving WHERE workload IS NULL AND pod IS NOT NULL
),
placed AS (
  SELECT namespace, pod, min(workload) AS workload
  FROM pod_placements WHERE pod IS NOT NULL AND workload IS NOT NULL
  GROUP BY namespace, pod
),
named AS (
  SELECT namespace, pod, workload FROM (
    SELECT p.namespace, p.pod, w.workload,
      row_number() OVER (PARTITION BY p.namespace, p.pod
                         ORDER BY length(w.workload) DESC, w.workload) AS rn
    FROM pods p
    JOIN (SELECT DISTINCT namespace, workload FROM events WHERE workload IS NOT NULL) w
      ON (p.namespace IS NOT DISTINCT FROM w.namespace)
      AND starts_with(p.pod, concat(w.workload, '-'))
  ) x WHERE rn = 1
),
owners AS (
  SELECT p.namespace, p.pod, coalesce(pl.workload, n.workload, pod_owner(p.pod)) AS workload
  FROM pods p
  LEFT JOIN placed pl ON pl.pod = p.pod AND (pl.namespace IS NOT DISTINCT FROM p.namespace)
  LEFT JOIN named n ON n.pod = p.pod AND (n.namespace IS NOT DISTINCT FROM p.namespace)
)
SELECT s.time, s.source, s.metric, s.value, s.cluster, s.node, s.namespace,
  coalesce(s.workload, o.workload) AS workload, s.pod
FROM serving s
LEFT JOIN owners o ON o.pod = s.pod AND (o.namespace IS NOT DISTINCT FROM s.namespace)
  AND s.workload IS NULL;
