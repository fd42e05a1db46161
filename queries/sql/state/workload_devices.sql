-- Where each workload's pods ran according to the metrics that name them (dcgm-exporter
-- labels, SDK samples): node, device and the first and last sample seen there.
CREATE OR REPLACE VIEW workload_devices AS
SELECT namespace, workload, pod, node, device, min(time) AS since, max(time) AS until
FROM metrics
WHERE workload IS NOT NULL AND node IS NOT NULL
GROUP BY namespace, workload, pod, node, device;
