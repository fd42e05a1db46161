-- What happened on one node in the hours around the incident? (events, time range, one node)
SELECT time, source, kind, severity, device, workload, pod, reason, message
FROM events
WHERE node = '{node}' AND time >= '{data_from}' AND time <= '{data_to}'
ORDER BY time, source, kind;
