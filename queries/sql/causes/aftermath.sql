-- What the workload's framework reported after the onset of each symptom (restores from
-- a checkpoint, the run starting again): the end of each causal chain.
SELECT slowdown_id, event_id, time, layer, kind, namespace, workload, pod, node, device,
  reason, message, attrs['step'] AS step, attrs['seconds'] AS seconds
FROM symptom_events
WHERE scope = 'workload' AND kind IN ('checkpoint_restored') AND time >= onset;
