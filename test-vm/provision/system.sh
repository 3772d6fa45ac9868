#!/bin/bash
# Kernel modules and sysctls of a nodenet node (IPVS, dummy, VXLAN, veth, bridge, br_netfilter, conntrack).
# Shared by the qemu image (NODENET_PROVISION_CHROOT=1: only writes the files, nothing is loaded at build time)
# and the Vagrantfile (also loads and applies them now). The agent sets the per-namespace sysctls it needs itself
# (ip_forward, bridge-nf-call-iptables, route_localnet, send_redirects); these are the node-wide ones.
set -euo pipefail
root="${NODENET_PROVISION_ROOT:-}"
mkdir -p "$root/etc/modules-load.d" "$root/etc/sysctl.d"
# Order matters where busybox-style loaders ignore softdeps: crc32c before libcrc32c (nf_conntrack, ip_vs).
cat > "$root/etc/modules-load.d/nodenet.conf" <<'MODS'
crc32c_generic
libcrc32c
nf_conntrack
br_netfilter
veth
bridge
vxlan
dummy
ip_vs
ip_vs_rr
ip_vs_wrr
ip_vs_lc
ip_vs_sh
ip_vs_mh
nf_tables
nft_numgen
nft_ct
nft_nat
nft_reject_inet
nft_chain_nat
xt_set
ip_set_hash_ip
ip_set_hash_ipport
ip_set_hash_ipportip
ip_set_hash_ipportnet
ip_set_hash_net
ip_set_bitmap_port
MODS
cat > "$root/etc/sysctl.d/90-nodenet.conf" <<'SYS'
net.ipv4.ip_forward = 1
net.ipv4.vs.conntrack = 1
net.ipv4.vs.expire_nodest_conn = 1
net.ipv4.vs.expire_quiescent_template = 1
net.ipv4.vs.conn_reuse_mode = 0
net.netfilter.nf_conntrack_max = 262144
SYS
if [ "${NODENET_PROVISION_CHROOT:-0}" = 1 ]; then
  echo "provision/system: files written under ${root:-/} (not applied: image build)"
  exit 0
fi
# Apply now (a booted node: Vagrant, or the qemu guest at boot).
# One modprobe for all (one process per module costs seconds in an emulated VM), then report what is missing.
mods="$(grep -Ev '^[[:space:]]*(#|$)' "$root/etc/modules-load.d/nodenet.conf")"
# shellcheck disable=SC2086
modprobe -a -q $mods 2>/dev/null || true
for m in $mods; do
  [ -d "/sys/module/$m" ] || modprobe -q "$m" 2>/dev/null || echo "provision/system: module $m not available" >&2
done
while IFS='=' read -r k v; do
  k="$(echo "$k" | xargs)"; v="$(echo "$v" | xargs)"
  [ -n "$k" ] || continue
  sysctl -q -w "$k=$v" >/dev/null 2>&1 || echo "provision/system: sysctl $k not available" >&2
done < "$root/etc/sysctl.d/90-nodenet.conf"
echo "provision/system: modules loaded, sysctls applied"
