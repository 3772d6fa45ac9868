#!/bin/bash
# Run by the image's PID 1 (image/vm-init) from the run's dist share (/nodenet/dist/vm/boot.sh), so changing it
# never rebuilds the image. Reads its role from the kernel command line (nodenet.suite, nodenet.vm, nodenet.vms,
# nodenet.ip), brings the underlay NIC up, provisions modules and sysctls with the same script the Vagrantfile
# runs, and starts the suite's guest side (guest.mjs, bundled from test-vm/guest/main.ts), which prints the
# NODENET-VM-RESULT line.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
param() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -n1; }
suite="$(param nodenet.suite)"
vm="$(param nodenet.vm)"
ip="$(param nodenet.ip)"
fail() { echo "NODENET-VM-RESULT fail ${suite:-unknown} vm$vm: $*" | tee /run/nodenet-vm-result; exit 1; }
hostname "vm$vm"
echo "nodenet-vm: vm$vm of suite $suite, $ip, $(uname -r), up $(cut -d' ' -f1 /proc/uptime) s"
ip link set lo up
modprobe virtio_net || fail "virtio_net"
for _ in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done
ip addr add "$ip" dev eth0 && ip link set eth0 up || fail "eth0 $ip"
NODENET_PROVISION_ROOT= bash /nodenet/dist/vm/provision/system.sh >/run/provision.log 2>&1 || { cat /run/provision.log; fail "provision/system.sh"; }
mkdir -p /var/run/netns /var/lib/nodenet /run/nodenet
echo "nodenet-vm: provisioned, up $(cut -d' ' -f1 /proc/uptime) s"
node /nodenet/dist/vm/guest.mjs
rc=$?
grep -q '^NODENET-VM-RESULT ' /run/nodenet-vm-result 2>/dev/null || fail "guest.mjs exited with $rc before a result"
exit 0
