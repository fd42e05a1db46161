# Services and tools the tests need, installed once and cached outside the repository.
# Sourced by scripts/test; every step is skipped when already done.

WHYSLOW_CACHE="${WHYSLOW_CACHE:-$HOME/.cache/whyslow}"
export WHYSLOW_CACHE

ensure_services() {
    ensure_chromium
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
