#!/usr/bin/env bash
# Installs syncd and syncctl as a systemd service and starts listening on /run/syncd/syncd.sock.
#
#   sudo scripts/install.sh            # build (release), install, enable and start syncd.socket
#   PREFIX=/opt/sharedstate sudo -E scripts/install.sh
#
# Installs: the binaries in $PREFIX/bin (default /usr/local); syncd.service and syncd.socket in /etc/systemd/system; the
# syncd user and group (/etc/sysusers.d/syncd.conf); /etc/syncd/syncd.json and /etc/syncd/policy.json unless they exist; the
# man pages of syncd and syncctl and syncctl's shell completions. Add users who may use syncd to the syncd group.
# scripts/uninstall.sh removes it all again (the state in /var/lib/syncd only with --purge).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=${PREFIX:-/usr/local}
units=/etc/systemd/system

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root (sudo scripts/install.sh)" >&2; exit 1; }
command -v systemctl >/dev/null || { echo "install.sh: systemctl not found; this installs a systemd service" >&2; exit 1; }

echo "==> building release binaries"
swift build -c release --product syncd
swift build -c release --product syncctl
bin=$(swift build -c release --show-bin-path)

echo "==> installing into $prefix and /etc"
install -d "$prefix/bin" "$prefix/share/man/man1" /etc/sysusers.d /etc/syncd
install -m 0755 "$bin/syncd" "$bin/syncctl" "$prefix/bin/"
install -m 0644 systemd/sysusers.d/syncd.conf /etc/sysusers.d/syncd.conf
systemd-sysusers /etc/sysusers.d/syncd.conf
sed "s|/usr/local/bin/syncd|$prefix/bin/syncd|" systemd/syncd.service > "$units/syncd.service"
install -m 0644 systemd/syncd.socket "$units/syncd.socket"
chmod 0644 "$units/syncd.service"
[ -e /etc/syncd/syncd.json ] || install -m 0644 systemd/syncd.json /etc/syncd/syncd.json
# Members of the syncd group may read and write every key; narrow it per prefix in this file.
[ -e /etc/syncd/policy.json ] || install -m 0644 systemd/policy.json /etc/syncd/policy.json

scripts/generate-docs.sh "$bin/syncctl" .build/docs
install -m 0644 .build/docs/syncctl.1 .build/docs/syncd.1 "$prefix/share/man/man1/"
install -D -m 0644 .build/docs/syncctl.bash "$prefix/share/bash-completion/completions/syncctl"
install -D -m 0644 .build/docs/_syncctl "$prefix/share/zsh/site-functions/_syncctl"
install -D -m 0644 .build/docs/syncctl.fish "$prefix/share/fish/vendor_completions.d/syncctl.fish"

echo "==> enabling syncd.socket"
systemctl daemon-reload
systemctl enable --now syncd.socket
echo "syncd is listening on /run/syncd/syncd.sock; try: SYNCD_SOCKET=/run/syncd/syncd.sock syncctl status"
