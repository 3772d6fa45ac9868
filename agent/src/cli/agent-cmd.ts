/**
 * `nodenet agent`: runs the node agent until SIGTERM/SIGINT.
 *
 * The agent writes <runDir>/agent.ready once it serves CNI calls and has
 * replayed the DELs queued while it was down; it removes it when it stops.
 * Stopping (or crashing) never touches running pods: their namespaces, veths
 * and IPs stay, and a restarted agent picks up from its state dir.
 */
import { readFileSync } from 'node:fs';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { FLAG_KEYS, parseAgentConfig, type AgentConfig } from '../config/config.js';
import { FlagError, parseFlags, type FlagSpecs } from './flags.js';

export interface RunningAgent {
  stop(): Promise<void>;
}

export type StartAgent = (cfg: AgentConfig) => Promise<RunningAgent>;

export const AGENT_USAGE = `usage: nodenet agent [--config FILE] [--node-name N] [--pod-cidr CIDR] [--cluster-cidr CIDR] [--state-dir D] [--run-dir D]
                     [--cni-socket S] [--bridge B] [--mtu N] [--proxy-mode none|iptables|nftables|ipvs] [--kubeconfig FILE|in-cluster | --manifests DIR]
                     [--api-server-failover true|false]
                     [--proxy-prefix KUBE] [--cluster-ip-ping reject|drop] [--nftables-shards 8] [--proxy-min-sync-ms MS] [--proxy-sync-period-ms MS] [--node-lease-duration-seconds S]
                     [--nodeport-addresses primary|CIDR,...] [--service-cluster-ip-range CIDR]
                     [--metrics-bind-address IP:PORT] [--healthz-bind-address IP:PORT]
                     [--ipvs-scheduler rr|lc|sh|mh|...] [--ipvs-filter true|false] [--ipvs-strict-arp true|false]
                     [--backend vxlan|host-gw|bgp|none] [--direct-routing true|false] [--bgp-asn 64512] [--bgp-route-reflector true|false] [--iface IF] [--run-pods true|false] [--kubelet-port 10250]
                     [--capacity cpu=2,memory=4Gi,pods=30] [--kube-reserved cpu=100m,memory=256Mi] [--system-reserved ...]
                     [--cluster-dns IP[,IP]] [--cluster-domain cluster.local] [--resolv-conf F]
                     [--log-level fatal|error|warn|info|debug|trace|silent] [--log-file F]
Runs the node agent until SIGTERM: the CNI service on a unix socket and, with a proxy mode, Service rules
for the Services and EndpointSlices it watches on an API server (--kubeconfig: nodenet control-plane's
nodes/<N>.kubeconfig, any cluster's, or in-cluster) or finds in a manifest directory (--manifests).
/metrics and /status listen on --metrics-bind-address (default 127.0.0.1:10249), /healthz, /livez and
/readyz on --healthz-bind-address (default 127.0.0.1:10256), as kube-proxy's; "" or 0 turns one off.
On an API server, --backend joins the pod network of every Node (flannel's backends, on --iface or the interface
of the node's primary IP): vxlan tunnels to the other Nodes (pods' MTU the underlay's - 50; --direct-routing true
routes the Nodes on this L2 network directly, as flannel's DirectRouting), host-gw routes each Node's pod CIDR via
its underlay IP (no device, the underlay's MTU; the Nodes on one L2 network; a Node behind a gateway gets no route
and a Warning Event), bgp runs the node's own BIRD 2 (bird2), which exchanges the pod CIDRs with the other Nodes by
iBGP in AS --bgp-asn (full mesh; with --bgp-route-reflector true on one or two Nodes, the others peer only with those)
and installs their routes (proto bird; the underlay's MTU). --overlay is the older name of --backend. --run-pods runs the Pods bound to this node (the embedded kubelet,
serving the API server's log requests on --kubelet-port). With a kubeconfig file, the agent reaches every API
server the kubernetes EndpointSlice lists through a balancer on 127.0.0.1 that health-checks them every second and
moves the connections off a dead one (k3s's agent load balancer); --api-server-failover false dials the
kubeconfig's server only.
On an API server the Node reports status.capacity (the machine's CPUs, memory, the run directory's filesystem and 110
pods, or --capacity's values) and status.allocatable (capacity less --kube-reserved, --system-reserved and the
kubelet's default hard eviction thresholds, memory 100Mi and 10% of the filesystem), which the scheduler fits Pods'
requests against, as the kubelet's.
The embedded kubelet writes each Pod's /etc/resolv.conf by its dnsPolicy, as the kubelet's: ClusterFirst Pods resolve
with --cluster-dns (the kube-dns Service's ClusterIP, e.g. 10.96.0.10) and search <namespace>.svc.<domain>
svc.<domain> <domain> (--cluster-domain, default cluster.local) then the node's search domains, options ndots:5;
without --cluster-dns they get the node's resolv.conf and a MissingClusterDNS Warning Event. The node's resolv.conf
is --resolv-conf (default /etc/resolv.conf; "" for none), as the kubelet's: Default Pods' nameservers, such as the
DNS replicas' upstream.
Flags override the config file's keys.`;

const SPECS: FlagSpecs = Object.fromEntries([['config', { type: 'string' }], ...Object.keys(FLAG_KEYS).map((k) => [k, { type: 'string' }])]);
const NUMERIC: ReadonlySet<string> = new Set<keyof AgentConfig>(['mtu', 'nftablesShards', 'proxyMinSyncMs', 'proxySyncPeriodMs', 'nodeLeaseDurationSeconds', 'kubeletPort', 'bgpAsn']);

export function agentConfigFromArgs(argv: readonly string[]): AgentConfig {
  return agentConfigFrom(parseFlags(argv, SPECS).flags);
}

function agentConfigFrom(flags: ReadonlyMap<string, string>): AgentConfig {
  let base: Record<string, unknown> = {};
  const file = flags.get('config');
  if (file) {
    try {
      base = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw new NodenetError(ErrorCode.InvalidConfig, `cannot read config ${file}: ${(e as Error).message}`, { cause: e });
    }
  }
  for (const [flag, key] of Object.entries(FLAG_KEYS)) {
    const v = flags.get(flag);
    if (v === undefined) continue;
    // A number flag that is not a number stays a string, so the config parser names the field.
    base[key] = NUMERIC.has(key) && /^-?\d+$/.test(v) ? Number(v) : v;
  }
  return parseAgentConfig(base);
}

export async function agentCommand(argv: readonly string[], start: StartAgent, out: (s: string) => void): Promise<number> {
  const p = parseFlags(argv, SPECS);
  if (p.help) {
    out(`${AGENT_USAGE}\n`);
    return 0;
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const agent = await start(agentConfigFrom(p.flags));
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await agent.stop();
  return 0;
}
