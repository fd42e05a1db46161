-- The ten hottest GPUs of the day, with how long they ran above 80 °C.
SELECT node, device, max(value) AS max_temp_celsius,
       sum(CASE WHEN value > 80 THEN 1 ELSE 0 END) AS samples_above_80
FROM metrics
WHERE metric = 'gpu_temp_celsius'
GROUP BY node, device
ORDER BY max_temp_celsius DESC, samples_above_80 DESC, node, device
LIMIT 10;
