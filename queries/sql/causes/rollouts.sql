-- The steps of the rollouts in each symptom's scope: the deployment controller scaling
-- one ReplicaSet of the workload up while another is scaled down within 10 minutes (its
-- pods replaced by pods of a new template at the same count). One row per `scaled` event
-- that is such a step, with its ReplicaSet and direction. `scale_change` leaves them out
-- (no scale change) and `config_change` reads a rollout at the onset as a new pod
-- template. Computed once per analysis over `symptom_events` and kept as the table
-- `symptom_rollouts`.
SELECT DISTINCT a.slowdown_id, a.symptom_kind, a.onset, a.event_id, a.time,
  a.attrs['replica_set'] AS replica_set, a.attrs['direction'] AS direction
FROM symptom_events a
JOIN symptom_events b ON b.slowdown_id = a.slowdown_id AND b.kind = 'scaled'
  AND b.scope = 'workload' AND b.attrs['replica_set'] <> a.attrs['replica_set']
  AND b.attrs['direction'] <> a.attrs['direction']
  AND b.time >= a.time - INTERVAL '10 minutes' AND b.time <= a.time + INTERVAL '10 minutes'
WHERE a.kind = 'scaled' AND a.scope = 'workload'
