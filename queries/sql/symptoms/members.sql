-- The workloads that are members of another (`workload_members`: a JobSet's child Jobs),
-- for the analyzer: a member's log that its whole's SDK run covers is a second copy.
SELECT namespace, member, workload FROM workload_members ORDER BY namespace, member;
