#!/bin/bash
# The Vagrant path only (the qemu VMs mount the project instead): installs the project from the synced folder
# into /opt/nodenet, builds it, and starts it as services:
#   nodenet.sh control-plane NODE_IP NODES   node1: `nodenet control-plane` on NODE_IP:6443 with a token per node,
#                                             the node kubeconfigs and the admin's published to the synced folder
#   nodenet.sh agent NODE_NAME NODE_IP MODE   every node: the agent (VXLAN overlay, embedded kubelet, proxy MODE)
# Env: NODENET_SRC (default /vagrant), NODENET_SHARE (default /vagrant/.nodenet-vagrant: hands kubeconfigs over),
# NODENET_WAIT_SECONDS (default 300: how long to wait for the control plane's kubeconfigs).
# The qemu VMs of test-vm/ run it too (suite `vagrant`, under systemd): there the project is mounted at
# /opt/nodenet already built, so install_project only links the CLI; everything after it is the same.
set -euo pipefail
src="${NODENET_SRC:-/vagrant}"
share="${NODENET_SHARE:-$src/.nodenet-vagrant}"
wait_s="${NODENET_WAIT_SECONDS:-300}"
export PATH=/usr/local/bin:$PATH DEBIAN_FRONTEND=noninteractive
install_project() {
  if [ ! -f /opt/nodenet/dist/nodenet.js ] || [ "${NODENET_REINSTALL:-0}" = 1 ]; then
    apt-get install -y -qq --no-install-recommends g++ make python3 rsync >/dev/null
    mkdir -p /opt/nodenet
    rsync -a --delete --exclude node_modules --exclude dist --exclude .git --exclude .vagrant --exclude .nodenet-vagrant "$src/" /opt/nodenet/
    (cd /opt/nodenet && npm ci --no-audit --no-fund && npm run build)
  fi
  ln -sf /opt/nodenet/bin/nodenet.js /usr/local/bin/nodenet
}
unit() { # name, ExecStart
  cat > "/etc/systemd/system/$1.service" <<UNIT
[Unit]
Description=$1
After=network-online.target
[Service]
ExecStart=$2
Restart=on-failure
RestartSec=2
KillMode=process
[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now "$1.service"
}
# bird2 (packages.txt) is for the bgp backend, whose agents run their own BIRD per node: Debian's global one,
# enabled by the package with its default config, is not wanted beside them.
if systemctl list-unit-files bird.service >/dev/null 2>&1; then systemctl disable --now bird.service >/dev/null 2>&1 || true; fi
case "${1:-}" in
  control-plane)
    ip="$2"; nodes="$3"
    install_project
    unit nodenet-control-plane "/usr/local/bin/node /opt/nodenet/dist/nodenet.js control-plane --data-dir /var/lib/nodenet/control-plane --listen $ip:6443 --host $ip --node $nodes --log-file /var/log/nodenet-control-plane.log"
    # admin.kubeconfig is written last, once the API serves: then every node's is there too.
    cp_dir=/var/lib/nodenet/control-plane
    for _ in $(seq "$wait_s"); do [ -f "$cp_dir/admin.kubeconfig" ] && break; sleep 1; done
    [ -f "$cp_dir/admin.kubeconfig" ] || { echo "the control plane wrote no admin.kubeconfig in $wait_s s: journalctl -u nodenet-control-plane" >&2; exit 1; }
    mkdir -p "$share"
    # Each file whole (a copy, then a rename), since an agent on another node may be reading the share.
    for f in "$cp_dir"/nodes/*.kubeconfig "$cp_dir/admin.kubeconfig"; do
      cp "$f" "$share/.$(basename "$f").tmp" && mv -f "$share/.$(basename "$f").tmp" "$share/$(basename "$f")"
    done
    echo "nodenet: control plane on $ip:6443; kubeconfig: $share/admin.kubeconfig (KUBECONFIG=.nodenet-vagrant/admin.kubeconfig on the host)"
    ;;
  agent)
    name="$2"; ip="$3"; mode="${4:-iptables}"
    install_project
    for _ in $(seq "$wait_s"); do [ -f "$share/$name.kubeconfig" ] && break; sleep 1; done
    [ -f "$share/$name.kubeconfig" ] || { echo "no $share/$name.kubeconfig: is node1 up?" >&2; exit 1; }
    mkdir -p /etc/nodenet /var/lib/nodenet/agent /run/nodenet
    install -m 0600 "$share/$name.kubeconfig" /etc/nodenet/node.kubeconfig
    # clusterDNS: the kube-dns Service the control plane makes at the tenth address of its service CIDR (default 10.96.0.0/12).
    iface="$(ip -o -4 addr show | awk -v ip="$ip" '$4 ~ "^"ip"/" { print $2 }')"
    cat > /etc/nodenet/agent.json <<JSON
{"nodeName": "$name", "kubeconfig": "/etc/nodenet/node.kubeconfig", "clusterCIDR": "10.244.0.0/16", "proxyMode": "$mode",
 "overlay": "vxlan", "underlayInterface": "$iface", "runPods": true, "stateDir": "/var/lib/nodenet/agent", "runDir": "/run/nodenet",
 "cniSocket": "/run/nodenet/cni.sock", "logFile": "/var/log/nodenet-agent.log",
 "clusterDNS": ["10.96.0.10"], "clusterDomain": "cluster.local"}
JSON
    unit nodenet-agent "/usr/local/bin/node /opt/nodenet/dist/nodenet.js agent --config /etc/nodenet/agent.json"
    echo "nodenet: agent $name ($mode) on $iface $ip"
    ;;
  *) echo "usage: nodenet.sh control-plane IP NODES | agent NAME IP [MODE]" >&2; exit 2 ;;
esac
