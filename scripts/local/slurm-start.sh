#!/usr/bin/env bash
# Starts a single-node SLURM on this machine for the test suite (`tests/tests/slurm.rs`): munge,
# slurmctld and slurmd from Debian's packages, as root, without systemd. Installs the packages
# when they are missing. Idempotent: a cluster that already answers is left as it is.
#
#   sudo bash scripts/local/slurm-start.sh        (CI runs it from .ci/run)
#
# The node is this host with its CPUs and no GPUs (GRES); processes are tracked by the Linux
# process tree and tasks are not confined (containers often have no cgroups to delegate), so
# a job's memory is not enforced. Logs go to /var/log/slurm/.
set -euo pipefail

if command -v sinfo > /dev/null && [ "$(timeout 5 sinfo -h -o %T 2> /dev/null | head -1)" = idle ]; then
  echo "slurm-start: a cluster already answers"
  exit 0
fi
if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q > /dev/null
  apt-get install -y -q slurm-wlm munge > /dev/null
fi

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)
conf_dir=/etc/slurm
mkdir -p "$conf_dir" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge \
  /var/lib/munge /var/log/munge
chown -R slurm:slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm 2> /dev/null || true

cat > "$conf_dir/slurm.conf" << EOF
ClusterName=gputune
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
# slurmd loads a cgroup plugin even when no cgroup plugin is configured (22.05 knows no
# `disabled`); without cgroup.conf it autodetects what the machine mounts.
rm -f "$conf_dir/cgroup.conf"

if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2> /dev/null || true
chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
# munged as its own user; it daemonises. Ready once a credential round-trips.
if ! munge -n 2> /dev/null | unmunge > /dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged --force 2> /dev/null || /usr/sbin/munged --force
  for _ in $(seq 1 20); do
    munge -n 2> /dev/null | unmunge > /dev/null 2>&1 && break
    sleep 0.5
  done
fi
if ! munge -n 2> /dev/null | unmunge > /dev/null 2>&1; then
  echo "slurm-start: munged did not start" >&2
  tail -n 20 /var/log/munge/munged.log >&2 || true
  exit 1
fi

pkill -x slurmctld 2> /dev/null || true
pkill -x slurmd 2> /dev/null || true
sleep 1
/usr/sbin/slurmctld -c -i
/usr/sbin/slurmd -c
for _ in $(seq 1 30); do
  if [ "$(timeout 5 sinfo -h -o %T 2> /dev/null | head -1)" = idle ]; then
    echo "slurm-start: node $host ($cpus CPUs) is idle in partition debug"
    exit 0
  fi
  sleep 1
done
echo "slurm-start: the node did not come up; sinfo says:" >&2
sinfo -N -l >&2 || true
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
