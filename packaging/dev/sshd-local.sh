#!/usr/bin/env bash
# A private OpenSSH server on 127.0.0.1 for the tests and for trying SSH targets out.
#
#   packaging/dev/sshd-local.sh DIR        start (idempotent); prints DIR/ssh_config
#   packaging/dev/sshd-local.sh DIR stop   stop it
#
# Everything lives in DIR: a host key, a user key, authorized_keys, sshd_config, the
# log, and an ssh_config with the host alias `compile-studio-local` (127.0.0.1, the
# chosen port, the user key, this host key as the only known one, BatchMode). The
# machine's own sshd, /etc/ssh and ~/.ssh are not touched. Installs openssh-server
# with apt-get when it is missing and this runs as root. The port is a free one
# (or $COMPILE_STUDIO_SSHD_PORT).
set -euo pipefail

DIR="${1:?usage: sshd-local.sh DIR [stop]}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
PIDFILE="$DIR/sshd.pid"

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [ "${2:-}" = "stop" ]; then
    if pid_alive "$PIDFILE"; then kill "$(cat "$PIDFILE")"; fi
    exit 0
fi

SSHD="$(command -v sshd || echo /usr/sbin/sshd)"
if [ ! -x "$SSHD" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssh-server >&2
    else
        echo "sshd-local.sh: openssh-server is not installed (apt-get install openssh-server)" >&2
        exit 1
    fi
fi

if pid_alive "$PIDFILE" && [ -f "$DIR/ssh_config" ]; then
    echo "$DIR/ssh_config"
    exit 0
fi

[ -f "$DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C compile-studio-host -f "$DIR/host_ed25519"
[ -f "$DIR/user_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C compile-studio-user -f "$DIR/user_ed25519"
cp "$DIR/user_ed25519.pub" "$DIR/authorized_keys"
chmod 600 "$DIR/authorized_keys" "$DIR/user_ed25519" "$DIR/host_ed25519"
if [ "$(id -u)" -eq 0 ]; then mkdir -p /run/sshd && chmod 755 /run/sshd; fi

PORT="${COMPILE_STUDIO_SSHD_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
cat > "$DIR/sshd_config" <<CONF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519
PidFile $PIDFILE
AuthorizedKeysFile $DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
MaxSessions 50
MaxStartups 50:30:100
LogLevel ERROR
Subsystem sftp internal-sftp
CONF
echo "127.0.0.1 $(cut -d' ' -f1,2 "$DIR/host_ed25519.pub")" > "$DIR/known_hosts"
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/host_ed25519.pub")" >> "$DIR/known_hosts"
cat > "$DIR/ssh_config" <<CONF
Host compile-studio-local
    HostName 127.0.0.1
    Port $PORT
    User $(id -un)
    IdentityFile $DIR/user_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $DIR/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 5
CONF

"$SSHD" -f "$DIR/sshd_config" -E "$DIR/sshd.log"
for _ in $(seq 50); do
    if ssh -F "$DIR/ssh_config" compile-studio-local true 2>/dev/null; then
        echo "$DIR/ssh_config"
        exit 0
    fi
    sleep 0.1
done
echo "sshd-local.sh: sshd did not answer on 127.0.0.1:$PORT; see $DIR/sshd.log" >&2
exit 1
