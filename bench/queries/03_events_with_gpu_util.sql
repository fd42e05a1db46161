-- Events on nodes during the incidents, each with the GPU utilization of its node in the
-- five minutes either side (events around a window joined to metrics).
SELECT e.time, e.node, e.kind, e.reason, count(m.value) AS util_samples,
       avg(m.value) AS avg_util, min(m.value) AS min_util
FROM events e
JOIN metrics m ON m.node = e.node
WHERE e.time >= '{incident_from}' AND e.time <= '{incident_to}'
  AND m.metric = 'gpu_util'
  AND m.time >= '{incident_from_minus_5m}' AND m.time <= '{incident_to_plus_5m}'
  AND m.time >= e.time - INTERVAL '5 minutes' AND m.time <= e.time + INTERVAL '5 minutes'
GROUP BY e.event_id, e.time, e.node, e.kind, e.reason
ORDER BY e.time, e.node, e.kind, e.reason;
