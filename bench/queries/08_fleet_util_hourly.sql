-- Fleet GPU utilization per hour (a scan of a whole metric).
SELECT date_trunc('hour', time) AS hour, count(*) AS samples, avg(value) AS avg_util,
       count(DISTINCT node) AS nodes
FROM metrics
WHERE metric = 'gpu_util'
GROUP BY date_trunc('hour', time)
ORDER BY hour;
