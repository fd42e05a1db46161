-- What did one node's GPUs report around the thermal incident? (time range on one node)
SELECT metric, device, count(*) AS samples, min(value) AS min_value, avg(value) AS avg_value,
       max(value) AS max_value
FROM metrics
WHERE node = '{node}' AND time >= '{node_from}' AND time <= '{node_to}'
GROUP BY metric, device
ORDER BY metric, device;
