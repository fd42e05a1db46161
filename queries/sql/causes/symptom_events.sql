-- Every event in the scope of every symptom: inside [onset_from, end] (a window starting
-- before the onset), with how close it is to the symptom: the workload itself, the same
-- GPU, the same node, another node of the workload, or elsewhere in the cluster. Hardware
-- is placed by where it happened: an infrastructure event on a GPU or node of the symptom
-- has that scope even when it also names the workload (a DCGM series labelled with the
-- workload of the pod on the GPU); one that names the workload on no node known to be
-- the workload's is 'workload', as is one that names a member of the workload (a JobSet's
-- child Job, `workload_members`).
-- `time` is when the thing began: messages that state their own duration are logged when
-- it ends (an NCCL watchdog's "ran for N milliseconds", a hung task "blocked for more
-- than N seconds", an image "pulled in 11m15s", a checkpoint saved or restored "in N s", a compilation finished "in N sec"),
-- so they are dated back by it; `logged_time` is the time the source gave.
-- `symptoms` and `symptom_scope` are registered by the analyzer before the rules run;
-- `s_unplaced` says nothing placed the workload at the onset (the hardware it ran on
-- then is nowhere in its scope).
-- Computed once by the analyzer (`causes::register`) and kept as the table
-- `symptom_events` that most rules read; `$first_onset` and `$last_end` (the earliest
-- onset_from and latest end of the symptoms) repeat the join's bounds as constants, so
-- that only the segments and pages around the symptoms are read.
-- (Aliases are long on purpose: DataFusion 55 trips over a rule's alias that repeats one
-- of this view's when it pushes map lookups down.)
SELECT sym.slowdown_id, sym.kind AS symptom_kind, sym.start AS onset, sym."end" AS symptom_end,
  sym.namespace AS s_namespace, sym.workload AS s_workload, sym.unplaced AS s_unplaced,
  CASE WHEN evt.duration_seconds > 0
    THEN arrow_cast(to_timestamp_nanos(epoch_ns(evt.time)
           - CAST(evt.duration_seconds * 1e9 AS BIGINT)), 'Timestamp(Microsecond, Some("UTC"))')
    ELSE evt.time END AS time,
  evt.time AS logged_time, evt.event_id, evt.layer, evt.source, evt.kind, evt.severity, evt.cluster, evt.node, evt.device,
  evt.namespace, evt.workload, evt.pod, evt.run_id, evt.reason, evt.message, evt.attrs,
  CASE
    WHEN evt.layer = 'infrastructure' AND sg.slowdown_id IS NOT NULL THEN 'gpu'
    WHEN evt.layer = 'infrastructure' AND sn.level = 'focus' THEN 'node'
    WHEN evt.layer = 'infrastructure' AND sn.level IS NOT NULL THEN 'workload_nodes'
    WHEN evt.workload IS NOT NULL AND (evt.workload = sym.workload OR wm.member IS NOT NULL)
      AND (evt.namespace IS NOT DISTINCT FROM sym.namespace) THEN 'workload'
    WHEN sg.slowdown_id IS NOT NULL THEN 'gpu'
    WHEN sn.level = 'focus' THEN 'node'
    WHEN sn.level IS NOT NULL THEN 'workload_nodes'
    ELSE 'cluster'
  END AS scope
FROM symptoms sym
JOIN (
  SELECT *, CASE
      WHEN kind IN ('checkpoint_saved', 'checkpoint_restored') THEN TRY_CAST(attrs['seconds'] AS DOUBLE)
      WHEN kind = 'collective_timeout' THEN TRY_CAST(attrs['elapsed_ms'] AS DOUBLE) / 1000.0
      WHEN kind = 'hung_task' THEN TRY_CAST(attrs['blocked_seconds'] AS DOUBLE)
      WHEN kind = 'image_pulled' THEN TRY_CAST(attrs['pull_seconds'] AS DOUBLE)
      WHEN kind = 'compile' THEN TRY_CAST(attrs['seconds'] AS DOUBLE)
    END AS duration_seconds
  FROM events
  WHERE time >= $first_onset AND time <= $last_end
) evt ON evt.time >= sym.onset_from AND evt.time <= sym."end"
LEFT JOIN workload_members wm ON wm.member = evt.workload AND wm.workload = sym.workload
  AND (wm.namespace IS NOT DISTINCT FROM evt.namespace)
LEFT JOIN (
  SELECT slowdown_id, node, min(level) AS level FROM symptom_scope GROUP BY slowdown_id, node
) sn ON sn.slowdown_id = sym.slowdown_id AND sn.node = evt.node
LEFT JOIN (
  SELECT DISTINCT slowdown_id, node, device FROM symptom_scope
  WHERE device IS NOT NULL AND level = 'focus'
) sg ON sg.slowdown_id = sym.slowdown_id AND sg.node = evt.node AND sg.device = evt.device;
