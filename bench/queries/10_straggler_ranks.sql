-- Which rank of the job computed slowest around the thermal incident? (straggler)
SELECT rank, count(*) AS steps, avg(value) AS avg_compute_seconds,
       max(value) AS max_compute_seconds
FROM metrics
WHERE metric = 'compute_seconds' AND workload = '{workload}'
  AND time >= '{node_from}' AND time <= '{node_to}'
GROUP BY rank
ORDER BY avg_compute_seconds DESC, rank;
