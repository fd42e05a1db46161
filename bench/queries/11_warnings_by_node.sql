-- Which nodes and workloads raised warnings or errors over the day, and of what kind?
SELECT coalesce(node, '-') AS node, coalesce(workload, '-') AS workload, kind,
       count(*) AS n, min(time) AS first_seen, max(time) AS last_seen
FROM events
WHERE severity IN ('warning', 'error', 'critical')
GROUP BY coalesce(node, '-'), coalesce(workload, '-'), kind
ORDER BY n DESC, node, workload, kind;
