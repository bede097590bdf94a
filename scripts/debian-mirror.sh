# shellcheck shell=bash
# Sourced by lab.sh and vmlab.sh, which define die().
# The Debian mirror that the host's apt already uses (deb822 first, then one-line sources).
debian_mirror() {
    local uri
    uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [[ -n "$uri" ]] || uri=$(awk '/^deb / && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
    [[ -n "$uri" ]] || die "no Debian mirror found in /etc/apt/sources.list*"
    echo "$uri"
}
