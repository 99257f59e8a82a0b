#!/usr/bin/env bash
# Stops syncd and removes what scripts/install.sh installed. The state in /var/lib/syncd and
# /etc/syncd/syncd.json stay unless --purge is given.
#
#   sudo scripts/uninstall.sh [--purge]
set -euo pipefail

prefix=${PREFIX:-/usr/local}
purge=no
[ "${1:-}" = "--purge" ] && purge=yes
[ "$(id -u)" = 0 ] || { echo "uninstall.sh: run as root (sudo scripts/uninstall.sh)" >&2; exit 1; }

systemctl disable --now syncd.socket syncd.service 2>/dev/null || true
rm -f /etc/systemd/system/syncd.service /etc/systemd/system/syncd.socket
systemctl daemon-reload
rm -f "$prefix/bin/syncd" "$prefix/bin/syncctl" "$prefix/share/man/man1/syncctl.1" "$prefix/share/man/man1/syncd.1" \
  "$prefix/share/bash-completion/completions/syncctl" "$prefix/share/zsh/site-functions/_syncctl" \
  "$prefix/share/fish/vendor_completions.d/syncctl.fish"
rm -f /etc/sysusers.d/syncd.conf
if [ "$purge" = yes ]; then
  rm -rf /var/lib/syncd /var/lib/private/syncd /etc/syncd
  userdel syncd 2>/dev/null || true
  echo "removed syncd, its state and its user"
else
  echo "removed syncd; its state in /var/lib/syncd and the syncd user remain (--purge removes them)"
fi
