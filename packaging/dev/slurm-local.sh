#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests and for trying targets out.
#
# Installs munge and slurm-wlm when they are missing (apt-get, as root), then starts
# munged, slurmctld and slurmd with their key, config, state and logs in one private
# folder ($COMPILE_STUDIO_SLURM_DIR, default /tmp/compile-studio-slurm): the machine's
# own /etc/slurm and /etc/munge are not used. Idempotent: a cluster that answers is
# left as it is. Prints the line to use it from a shell:
#     export SLURM_CONF=/tmp/compile-studio-slurm/slurm.conf
# Stop it with:  packaging/dev/slurm-local.sh stop
set -euo pipefail

DIR="${COMPILE_STUDIO_SLURM_DIR:-/tmp/compile-studio-slurm}"
CONF="$DIR/slurm.conf"
export SLURM_CONF="$CONF"

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [ "${1:-}" = "stop" ]; then
    for name in slurmd slurmctld munged; do
        if pid_alive "$DIR/$name.pid"; then kill "$(cat "$DIR/$name.pid")" || true; fi
    done
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-local.sh: needs root (slurmd runs job steps as their users)" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v srun >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
fi

mkdir -p "$DIR/state" "$DIR/spool" "$DIR/munge"
chmod 755 "$DIR"

# munge: a private key and socket, the daemon running as the munge user
chown munge:munge "$DIR/munge"
chmod 755 "$DIR/munge"  # the socket must be reachable by every user that runs srun
if [ ! -s "$DIR/munge/munge.key" ]; then
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
fi
chown munge:munge "$DIR/munge/munge.key"
chmod 400 "$DIR/munge/munge.key"
SOCKET="$DIR/munge/munge.socket"
if ! pid_alive "$DIR/munged.pid"; then
    rm -f "$SOCKET" "$SOCKET.lock"
    runuser -u munge -- munged --key-file="$DIR/munge/munge.key" --socket="$SOCKET" \
        --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
        --seed-file="$DIR/munge/munged.seed"
    for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done
    cp "$DIR/munge/munged.pid" "$DIR/munged.pid"
fi

HOST="$(hostname -s)"
CPUS="$(nproc)"
MEM_MB="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
cat > "$CONF.new" <<CONF
ClusterName=local
SlurmctldHost=$HOST
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldPort=${COMPILE_STUDIO_SLURMCTLD_PORT:-6817}
SlurmdPort=${COMPILE_STUDIO_SLURMD_PORT:-6818}
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
KillWait=2
InactiveLimit=0
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
if ! cmp -s "$CONF.new" "$CONF"; then
    mv "$CONF.new" "$CONF"
    # a changed config needs fresh daemons
    for name in slurmd slurmctld; do
        if pid_alive "$DIR/$name.pid"; then kill "$(cat "$DIR/$name.pid")"; sleep 1; fi
    done
else
    rm -f "$CONF.new"
fi

if ! pid_alive "$DIR/slurmctld.pid"; then
    slurmctld -f "$CONF"
fi
if ! pid_alive "$DIR/slurmd.pid"; then
    slurmd -f "$CONF"
fi

for _ in $(seq 100); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
        echo "export SLURM_CONF=$CONF"
        exit 0
    fi
    sleep 0.2
done
echo "slurm-local.sh: the node did not come up; see $DIR/slurmctld.log and $DIR/slurmd.log" >&2
sinfo >&2 || true
exit 1
