-- framework.config_change: the run in progress at the onset (or started within the 10
-- minutes a pace regression's onset may be early by) started with a configuration
-- (run_started attrs; a start that repeats the one before it, run id and attrs, is the
-- same start told by another rank or replica) that sets a key differently from the
-- previous start of the same workload (keys added or changed; a removed key alone is not
-- seen); the summary lists the changed keys. Where the previous run's start is not in the
-- store (it began before the data) but that run was reporting in the hour before, the new
-- run replaced it at the onset: a changed run without its old configuration to compare is
-- weaker evidence (strength 0.6), and any cause with evidence of its own outranks it.
--
-- Without run_started events (no SDK), the configuration a trainer or server dumps in its
-- log at start-up (`config_param` events: DeepSpeed's engine configuration, MaxText's
-- `Config param` lines, Hugging Face's `TrainingArguments`, a serving launcher's `Args {
-- … }`, vLLM's `args: Namespace(…)`) stands for the run's: the dump of the pod that last
-- dumped before the onset (or within the 10 minutes a pace onset may be early by)
-- against the last dump of an earlier start, a pod whose dump began at least 5 minutes
-- before both that dump and the onset (the ranks of one start dump within moments of each
-- other; the replicas of a rollout start minutes apart, the first of them before the
-- onset is seen). Parameters that name where a run writes or who it is (`*_dir`,
-- `*_path`, `*_file`, `*_id`, `run_name`, `output*`, `logging*`, `hub*`,
-- `resume_from_checkpoint`, the process's rank, the host it runs on and its rendezvous
-- address) and object reprs (`<... object at 0x...>`) differ between any two starts
-- without changing how fast a step runs: they are not compared. Where no earlier start's
-- dump is in the store but the workload's other pods were reporting progress in the hour
-- before the dump (a start that began before the data), the new start replaced that run
-- at the onset: strength 0.6, as for the runs.
--
-- A Deployment's rollout at the onset (`symptom_rollouts`, from 30 minutes before it to
-- 10 after: a ReplicaSet scaled up while another is scaled down within 10 minutes) replaced its pods by pods of a new template (an image, arguments, resources):
-- where neither the runs nor the logged dumps tell what changed, that is the evidence,
-- at strength 0.8 (a serving rollout whose old replicas started before the data).
WITH starts AS (
  SELECT namespace, workload, run_id, time, event_id, attrs,
    lag(run_id) OVER (PARTITION BY namespace, workload ORDER BY time, event_id) AS prev_run,
    lag(attrs) OVER (PARTITION BY namespace, workload ORDER BY time, event_id) AS prev_attrs
  FROM events
  WHERE kind = 'run_started' AND workload IS NOT NULL
),
runs AS (
  SELECT namespace, workload, run_id, time, event_id, attrs,
    LAG(event_id) OVER (PARTITION BY namespace, workload ORDER BY time, event_id) AS prev_id
  FROM starts
  WHERE prev_attrs IS NULL OR (run_id IS DISTINCT FROM prev_run) OR NOT (attrs = prev_attrs)
),
current_run AS (
  SELECT s.slowdown_id, r.event_id, r.prev_id, r.time,
    row_number() OVER (PARTITION BY s.slowdown_id ORDER BY r.time DESC, r.event_id DESC) AS latest
  FROM symptoms s
  JOIN runs r ON r.workload = s.workload AND (r.namespace IS NOT DISTINCT FROM s.namespace)
    AND r.time <= s.start + INTERVAL '10 minutes' AND r.prev_id IS NOT NULL
),
replaced AS (
  SELECT s.slowdown_id, r.event_id, r.time, r.run_id, min(m.run_id) AS prev_run
  FROM symptoms s
  JOIN runs r ON r.workload = s.workload AND (r.namespace IS NOT DISTINCT FROM s.namespace)
    AND r.prev_id IS NULL
    AND r.time >= s.start - INTERVAL '30 minutes' AND r.time <= s.start + INTERVAL '10 minutes'
  JOIN metrics m ON m.workload = s.workload AND (m.namespace IS NOT DISTINCT FROM s.namespace)
    AND m.run_id IS NOT NULL AND m.run_id <> r.run_id
    AND m.time < r.time AND m.time >= r.time - INTERVAL '1 hour'
  -- The same bounds as constants (r.time is within 30 minutes before and 10 after a
  -- start), so that only the segments around the symptoms are read.
  WHERE m.time >= $first_start - INTERVAL '90 minutes'
    AND m.time < $last_end + INTERVAL '10 minutes'
    AND s.kind IN ('regression', 'throughput_drop')
  GROUP BY s.slowdown_id, r.event_id, r.time, r.run_id
),
kv AS (
  SELECT event_id, unnest(map_keys(attrs)) AS k, unnest(map_values(attrs)) AS v
  FROM runs
),
changed AS (
  SELECT c.slowdown_id, c.event_id, c.prev_id, c.time, a.k,
    b.v AS before, a.v AS after
  FROM current_run c
  JOIN kv a ON a.event_id = c.event_id
  LEFT JOIN kv b ON b.event_id = c.prev_id AND b.k = a.k
  WHERE c.latest = 1 AND (a.v IS DISTINCT FROM b.v)
),
params AS (
  SELECT namespace, workload, pod, time, event_id, attrs['param'] AS k, attrs['value'] AS v
  FROM events
  WHERE kind = 'config_param' AND workload IS NOT NULL AND pod IS NOT NULL
),
logged AS (
  SELECT DISTINCT namespace, workload, pod, k, v
  FROM params
  WHERE k IS NOT NULL
    AND NOT regexp_like(k,
      '(_dir|_path|_file|_id|^run_name|^output|^logging|^hub|^resume_from_checkpoint|^local_rank|^process_index|^global_rank|^hostname|^master_addr)$|^(output|logging|hub)')
    AND coalesce(v, '') NOT LIKE '%object at 0x%'
),
dumps AS (
  SELECT namespace, workload, pod, min(time) AS time, min(event_id) AS event_id
  FROM params
  GROUP BY namespace, workload, pod
),
logged_current AS (
  SELECT s.slowdown_id, d.namespace, d.workload, d.pod, d.time, d.event_id,
    row_number() OVER (PARTITION BY s.slowdown_id ORDER BY d.time DESC, d.pod DESC) AS latest
  FROM symptoms s
  JOIN dumps d ON d.workload = s.workload AND (d.namespace IS NOT DISTINCT FROM s.namespace)
    AND d.time <= s.start + INTERVAL '10 minutes'
),
logged_previous AS (
  SELECT c.slowdown_id, c.namespace, c.workload, c.pod, c.time, c.event_id,
    d.pod AS prev_pod, d.event_id AS prev_id,
    row_number() OVER (PARTITION BY c.slowdown_id ORDER BY d.time DESC, d.pod DESC) AS latest
  FROM logged_current c
  JOIN symptoms s ON s.slowdown_id = c.slowdown_id
  JOIN dumps d ON d.workload = c.workload AND (d.namespace IS NOT DISTINCT FROM c.namespace)
    AND d.time <= least(c.time, s.start) - INTERVAL '5 minutes'
  WHERE c.latest = 1
),
logged_replaced AS (
  SELECT c.slowdown_id, c.event_id, c.pod, c.time, min(m.pod) AS prev_pod
  FROM logged_current c
  JOIN symptoms s ON s.slowdown_id = c.slowdown_id
  JOIN metrics m ON m.workload = c.workload AND (m.namespace IS NOT DISTINCT FROM c.namespace)
    AND m.layer = 'framework' AND m.pod IS NOT NULL AND m.pod <> c.pod
    AND m.time < c.time AND m.time >= c.time - INTERVAL '1 hour'
  WHERE c.latest = 1 AND c.time >= s.start - INTERVAL '30 minutes'
    AND s.kind IN ('regression', 'throughput_drop')
    AND c.slowdown_id NOT IN (SELECT slowdown_id FROM logged_previous)
    -- (The same bounds as constants, as in `replaced`.)
    AND m.time >= $first_start - INTERVAL '90 minutes'
    AND m.time < $last_end + INTERVAL '10 minutes'
  GROUP BY c.slowdown_id, c.event_id, c.pod, c.time
),
rolled AS (
  SELECT u.slowdown_id,
    first_value(u.event_id ORDER BY u.time, u.event_id) AS event_id, min(u.time) AS time,
    first_value(u.replica_set ORDER BY u.time, u.event_id) AS new_rs,
    first_value(d.replica_set ORDER BY d.time, d.event_id) AS old_rs
  FROM symptom_rollouts u
  JOIN symptom_rollouts d ON d.slowdown_id = u.slowdown_id AND d.direction = 'down'
    AND d.replica_set <> u.replica_set
    AND d.time >= u.time - INTERVAL '10 minutes' AND d.time <= u.time + INTERVAL '10 minutes'
  WHERE u.direction = 'up'
    AND u.time >= u.onset - INTERVAL '30 minutes' AND u.time <= u.onset + INTERVAL '10 minutes'
    AND u.symptom_kind IN ('regression', 'throughput_drop', 'latency_regression')
  GROUP BY u.slowdown_id
),

logged_changed AS (
  SELECT p.slowdown_id, p.event_id, p.prev_id, p.time, a.k, b.v AS before, a.v AS after
  FROM logged_previous p
  JOIN logged a ON a.pod = p.pod AND a.workload = p.workload
    AND (a.namespace IS NOT DISTINCT FROM p.namespace)
  LEFT JOIN logged b ON b.pod = p.prev_pod AND b.workload = p.workload
    AND (b.namespace IS NOT DISTINCT FROM p.namespace) AND b.k = a.k
  WHERE p.latest = 1 AND (a.v IS DISTINCT FROM b.v)
    AND p.slowdown_id NOT IN (SELECT slowdown_id FROM changed)
)
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id), min(prev_id)) AS evidence, 1.0 AS strength,
  concat('Run configuration changed against the previous run: ',
    string_agg(concat(k, ' ', coalesce(before, '∅'), '→', coalesce(after, '∅')), ', ' ORDER BY k))
    AS summary
FROM changed
WHERE slowdown_id IS NOT NULL
GROUP BY slowdown_id
UNION ALL
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id)) AS evidence, 0.6 AS strength,
  concat('Run ', min(run_id), ' replaced run ', min(prev_run),
    ' at the onset; the earlier run''s configuration is not in the store to compare') AS summary
FROM replaced
WHERE slowdown_id NOT IN (SELECT slowdown_id FROM changed)
  AND slowdown_id NOT IN (SELECT slowdown_id FROM logged_changed)
  AND slowdown_id NOT IN (SELECT slowdown_id FROM rolled)
GROUP BY slowdown_id
UNION ALL
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, time,
  make_array(event_id) AS evidence, 0.8 AS strength,
  concat('A rollout replaced the workload''s pods at the onset: replica set ', new_rs,
    ' (a new pod template) took over from ', old_rs) AS summary
FROM rolled
WHERE slowdown_id NOT IN (SELECT slowdown_id FROM changed)
  AND slowdown_id NOT IN (SELECT slowdown_id FROM logged_changed)
UNION ALL
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id)) AS evidence, 0.6 AS strength,
  concat('Pod ', min(pod), ' started anew at the onset, replacing ', min(prev_pod),
    '; the earlier start''s configuration is not in the store to compare') AS summary
FROM logged_replaced
WHERE slowdown_id NOT IN (SELECT slowdown_id FROM changed)
  AND slowdown_id NOT IN (SELECT slowdown_id FROM replaced)
  AND slowdown_id NOT IN (SELECT slowdown_id FROM rolled)
GROUP BY slowdown_id
UNION ALL
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id), min(prev_id)) AS evidence, 1.0 AS strength,
  concat('The configuration the workload logged at start-up changed against the previous start''s: ',
    string_agg(concat(k, ' ', coalesce(before, '∅'), '→', coalesce(after, '∅')), ', ' ORDER BY k))
    AS summary
FROM logged_changed
GROUP BY slowdown_id;
