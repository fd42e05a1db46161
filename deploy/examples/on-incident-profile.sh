#!/bin/sh
# An example `--on-incident` hook: when an incident opens, ask the slowed-down job's own
# profiler for a short capture, then record where the trace is as a `profile_captured`
# envelope record, so that the next report (and the incident's next revision) lists it
# under the slowdown's "Profiles to open".
#
#   whyslow stream … --on-incident '["/hooks/on-incident-profile.sh"]'
#
# whyslow runs the hook with the incident's JSON on stdin (the report's slowdown object
# plus incident_id, revision, status) and kills it after 60 s, so the capture is short.
# Nothing here is whyslow's: the profiler endpoint, the trace directory and the tools
# this calls (sh, jq, curl or python with jax, kubectl) are yours, and must be installed
# where the hook runs (the worker's image has none of them: build your own on top of it,
# or have this script call a service of yours instead).
#
# PROFILER selects what is called (both as documented upstream):
#   jax   `python -m jax.collect_profile` against the profiler server the job started
#         with `jax.profiler.start_server(JAX_PROFILER_PORT)`, on the incident's first
#         pod (its IP from kubectl); the trace goes to TRACE_DIR/<incident id>, which
#         XProf opens (`xprof --logdir=…`). Needs jax, tensorflow and xprof here.
#   vllm  `curl -X POST $VLLM_URL/start_profile`, then `/stop_profile`: vLLM's torch
#         profiler endpoints, served when the server runs with VLLM_TORCH_PROFILER_DIR;
#         the traces land in that directory (give it as TRACE_DIR).
# The record is ingested with `whyslow ingest --format envelope -` into WHYSLOW_STORE
# (set in the worker's environment; the store takes concurrent writers).
set -eu

PROFILER=${PROFILER:-jax}
CAPTURE_SECONDS=${CAPTURE_SECONDS:-20}
TRACE_DIR=${TRACE_DIR:?set TRACE_DIR: where the traces are written (a path or gs:// URL)}

incident=$(cat)
field() { printf '%s' "$incident" | jq -r "$1 // empty"; }
status=$(field .status)
[ "$status" = opened ] || exit 0
id=$(field .incident_id)
namespace=$(field .namespace)
workload=$(field .workload)
run_id=$(field .run_id)
pod=$(field '.pods[0]')

case "$PROFILER" in
jax)
	host=$(kubectl -n "$namespace" get pod "$pod" -o jsonpath='{.status.podIP}')
	url="$TRACE_DIR/$id"
	python -m jax.collect_profile --host "$host" --log_dir "$url" --no_perfetto_link \
		"${JAX_PROFILER_PORT:-9999}" "$((CAPTURE_SECONDS * 1000))" >&2
	;;
vllm)
	: "${VLLM_URL:?set VLLM_URL: the vLLM server, e.g. http://tgi.llm.svc:8000}"
	curl -fsS -X POST "$VLLM_URL/start_profile" >&2
	sleep "$CAPTURE_SECONDS"
	curl -fsS -X POST "$VLLM_URL/stop_profile" >&2
	url=$TRACE_DIR
	;;
*)
	echo "unknown PROFILER '$PROFILER' (jax or vllm)" >&2
	exit 2
	;;
esac

# The capture ended now and ran CAPTURE_SECONDS: the report lists it on every slowdown of
# this workload (and run) whose interval it overlaps.
jq -cn --arg time "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg ns "$namespace" \
	--arg w "$workload" --arg run "$run_id" --arg url "$url" \
	--arg incident "$id" --argjson secs "$CAPTURE_SECONDS" \
	'{time: $time, layer: "framework", source: "on-incident", kind: "profile_captured",
	  namespace: $ns, workload: $w, attrs: {url: $url, duration_seconds: $secs,
	  incident_id: $incident}}
	 + (if $run == "" then {} else {run_id: $run} end)' |
	whyslow ingest --format envelope -
