-- The events cited as evidence (ids in the registered `cited` table), for the chains and
-- timelines of the report.
SELECT DISTINCT e.event_id, e.time, e.layer, e.kind, e.namespace, e.workload, e.pod, e.node,
  e.device, e.reason, e.message, e.attrs['step'] AS step, e.attrs['seconds'] AS seconds
FROM events e
JOIN cited c ON c.event_id = e.event_id;
