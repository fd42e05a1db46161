-- Everything measured for one pod of the fleet (a needle: one pod among thousands).
SELECT metric, count(*) AS samples, min(time) AS first_seen, max(time) AS last_seen,
       avg(value) AS avg_value
FROM metrics
WHERE pod = '{pod}'
GROUP BY metric
ORDER BY metric;
