/**
 * `nodenet control-plane`: the embedded Kubernetes API server, until
 * SIGTERM/SIGINT. Parsing is pure (`controlPlaneOptionsFromArgs`); the
 * server itself comes from the deps (node/compose.ts).
 */
import { isIP } from 'node:net';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_CIDR, parsePortRange } from '../../../controlplane/alloc/service-allocator.js';
import { DEFAULT_CLUSTER_CIDR, DEFAULT_NODE_MASK } from '../../../controlplane/controllers/node-ipam.js';
import { parseLoadBalancerPool } from '../../../controlplane/controllers/loadbalancer.js';
import { DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS } from '../../../controlplane/controllers/node-lifecycle.js';
import { DEFAULT_ORPHAN_QUARANTINE_MS } from '../../../controlplane/controllers/pod-gc.js';
import { parseCidr } from '../../../lib/net/ip.js';
import { FlagError, parseFlags, type FlagSpecs } from './flags.js';
import { parseStorageSpec, type StorageSpec } from '../../../controlplane/store/spec.js';
import { migrateCommand, type MigrateCmdDeps } from './migrate-cmd.js';
import { addUser, userNameProblem } from '../../../controlplane/users.js';
import { enabledPlugins, PLUGIN_ORDER } from '../../../controlplane/admission/admission.js';
import { ADDONS, parseDisabled } from '../../../controlplane/addons/coredns.js';

export const CONTROL_PLANE_USAGE = `usage: nodenet control-plane [--data-dir D] [--listen ADDR:PORT] [--node N[,N...]] [--host SAN[,SAN...]]
                             [--insecure-http] [--history-seconds S] [--service-cidr CIDR] [--service-node-port-range FROM-TO]
                             [--cluster-cidr CIDR] [--node-cidr-mask-size N] [--node-monitor-grace-period D]
                             [--orphan-pod-quarantine D] [--load-balancer-ip-pool CIDR|START-END[,...]]
                             [--storage sqlite:DIR|etcd:URL[,URL...]] [--etcd-prefix P] [--advertise-address IP]
                             [--control-plane-endpoint HOST:PORT] [--shutdown-delay-duration D] [--event-ttl D]
                             [--enable-admission-plugins P[,P...]] [--disable-admission-plugins P[,P...]]
                             [--anonymous-auth true|false] [--service-account-max-token-expiration D]
                             [--encryption-provider-config FILE] [--disable ADDON[,ADDON...]]
                             [--log-level L] [--log-file F]
       nodenet control-plane migrate --from sqlite:DIR --to etcd:URL[,URL...] [--etcd-prefix P] [--allow-non-empty]
       nodenet control-plane add-user NAME [--group G[,G...]] [--data-dir D]
Serves the Kubernetes API (core/v1 Namespaces, Nodes, Pods, Services, Events; EndpointSlices; Deployments,
ReplicaSets; Leases) from a SQLite database in the data directory, for kubectl and the agents.
  --data-dir D        state.db, pki/, tokens.json, admin.kubeconfig, nodes/<N>.kubeconfig (default /var/lib/nodenet/control-plane)
  --listen ADDR:PORT  default 127.0.0.1:6443; [::1]:6443 for IPv6
  --node N,...        make a token and a kubeconfig for each node (system:node:N, limited as the Node authorizer limits a kubelet)
  --host SAN,...      more names and addresses for the serving certificate (the listen address and localhost are always in it)
  --insecure-http     plain HTTP without TLS, only on a loopback address (kubectl then sends no token: every request is admin)
  --service-cidr CIDR ClusterIPs come from here (default 10.96.0.0/12; its first address is the kubernetes Service's)
  --service-node-port-range FROM-TO  NodePorts come from here (default 30000-32767)
  --cluster-cidr CIDR each Node gets a spec.podCIDR from here (default 10.244.0.0/16) ...
  --node-cidr-mask-size N  ... of this size (default 24)
  --node-monitor-grace-period D  a Node whose Lease is not renewed for this long becomes Ready=Unknown, tainted
                      unreachable, its Pods not ready (seconds, or a duration such as 40s, 1m30s, 500ms; default 40s)
  --orphan-pod-quarantine D  the Pods of a Node that is gone are deleted once it has been gone this long
                      (the pod GC; upstream's fixed 40s is the default)
  --load-balancer-ip-pool CIDR|START-END[,...]  LoadBalancer Services get their EXTERNAL-IP from here (a CIDR
                      without its network and broadcast addresses); without a pool they stay <pending>
  --history-seconds S how long watch history is kept for resuming watchers (default 300); older resourceVersions get 410
  --storage S         where the cluster state lives: sqlite:DIR (default: the data directory's state.db) or
                      etcd:http://HOST:PORT[,...] (etcd 3.4+; several control planes may share it, each with the
                      same data directory's CA and tokens)
  --etcd-prefix P     the etcd key prefix (default /registry, kube-apiserver's)
  --advertise-address IP  this server's address in the kubernetes Service's EndpointSlice, which lists every live
                      API server (each renews a lease every 10 s; one not renewed for 15 s is taken out); default the
                      listen address
  --control-plane-endpoint HOST:PORT  the address the written kubeconfigs name (a load balancer in front of
                      several API servers, as kubeadm's controlPlaneEndpoint); the certificate covers HOST
  --shutdown-delay-duration D  on SIGTERM, /readyz is red this long before the server stops serving, so that
                      balancers move away first (default 0s, kube-apiserver's)
  --event-ttl D       Events not updated for this long are deleted (default 1h, kube-apiserver's)
  --enable-admission-plugins P,...   --disable-admission-plugins P,...
                      the admission chain, run in this order whatever the flags' order (kube-apiserver's); every
                      plugin is on by default: ${PLUGIN_ORDER.join(', ')}
  --anonymous-auth B  a request with no credentials is system:anonymous, which RBAC allows /version and the health
                      endpoints (default true, kube-apiserver's); false: such a request is a 401
  --service-account-max-token-expiration D  the longest a TokenRequest may ask for (default: no limit)
  --encryption-provider-config FILE  kube-apiserver's EncryptionConfiguration (apiserver.config.k8s.io/v1): the
                      resources it names (secrets, configmaps, ...) are stored encrypted with its first provider
                      (aescbc, aesgcm or identity) and read with any of them; a bad file stops the start
  --disable ADDON,... (repeatable) addons not to install (k3s's flag): ${ADDONS.join(', ')}. Without it, each start
                      creates in kube-system what is missing of the cluster DNS (kubeadm's CoreDNS addon, running
                      \`nodenet dns\`): Deployment coredns (2 replicas), Service kube-dns on the service CIDR's tenth
                      address, ServiceAccount coredns, ClusterRole and ClusterRoleBinding system:coredns; existing
                      ones are never changed, so a user's edit or scale sticks
On start it prints the kubeconfig to use: export KUBECONFIG=<data-dir>/admin.kubeconfig
add-user: writes <data-dir>/users/NAME.kubeconfig with a client certificate signed by the cluster CA (CN NAME, an O
per --group, a year), as kube-apiserver reads one; prints its path. --group system:masters makes an admin.`;

export interface ControlPlaneArgs {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly nodes: readonly string[];
  readonly hosts: readonly string[];
  readonly insecureHttp: boolean;
  readonly historyMs: number;
  readonly serviceCIDR: string;
  readonly nodePortRange: { readonly from: number; readonly to: number };
  readonly clusterCIDR: string;
  readonly nodeCIDRMaskSize: number;
  readonly nodeMonitorGracePeriodMs: number;
  readonly orphanPodQuarantineMs: number;
  readonly loadBalancerPool?: string;
  readonly storage: StorageSpec;
  readonly advertiseAddress?: string;
  readonly controlPlaneEndpoint?: string;
  readonly shutdownDelayMs: number;
  readonly eventTtlMs: number;
  readonly enableAdmissionPlugins?: readonly string[];
  readonly disableAdmissionPlugins?: readonly string[];
  readonly anonymousAuth?: boolean;
  readonly maxTokenExpirationSeconds?: number;
  readonly encryptionProviderConfig?: string;
  /** Addons not installed (--disable). */
  readonly disable?: readonly string[];
  readonly logLevel: string;
  readonly logFile?: string;
}

const SPECS: FlagSpecs = {
  'data-dir': { type: 'string' },
  listen: { type: 'string' },
  node: { type: 'string' },
  host: { type: 'string' },
  'insecure-http': { type: 'boolean' },
  'history-seconds': { type: 'string' },
  'service-cidr': { type: 'string' },
  'service-node-port-range': { type: 'string' },
  'cluster-cidr': { type: 'string' },
  'node-cidr-mask-size': { type: 'string' },
  'node-monitor-grace-period': { type: 'string' },
  'orphan-pod-quarantine': { type: 'string' },
  'load-balancer-ip-pool': { type: 'string' },
  storage: { type: 'string' },
  'etcd-prefix': { type: 'string' },
  'advertise-address': { type: 'string' },
  'control-plane-endpoint': { type: 'string' },
  'shutdown-delay-duration': { type: 'string' },
  'event-ttl': { type: 'string' },
  'enable-admission-plugins': { type: 'string' },
  'disable-admission-plugins': { type: 'string' },
  'anonymous-auth': { type: 'string' },
  'service-account-max-token-expiration': { type: 'string' },
  'encryption-provider-config': { type: 'string' },
  disable: { type: 'string', multiple: true },
  'log-level': { type: 'string' },
  'log-file': { type: 'string' },
};

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** "ADDR:PORT" or "[v6]:PORT". @throws FlagError */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s) ?? /^([^:[\]]+):(\d+)$/.exec(s);
  if (!m) throw new FlagError(`--listen ${JSON.stringify(s)}: expected ADDR:PORT, e.g. 127.0.0.1:6443 or [::1]:6443`);
  const host = m[1]!;
  const port = Number(m[2]);
  if (!isIP(host) && host !== 'localhost') throw new FlagError(`--listen ${JSON.stringify(s)}: ${JSON.stringify(host)} is not an IP address`);
  if (port > 65535) throw new FlagError(`--listen ${JSON.stringify(s)}: port ${port} is out of range (0-65535)`);
  return { host, port };
}

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration: a number of seconds ("40", "2.5") or Go's form ("40s", "1m30s", "500ms", "1h"). null: not one. */
export function parseDurationMs(s: string): number | null {
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(s)) return null;
  let ms = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Math.round(ms);
}

const list = (v: string | undefined) => (v ?? '').split(',').map((x) => x.trim()).filter(Boolean);

/** @throws FlagError */
export function controlPlaneArgs(flags: ReadonlyMap<string, string>): ControlPlaneArgs {
  const { host, port } = parseListen(flags.get('listen') ?? '127.0.0.1:6443');
  const hist = flags.get('history-seconds') ?? '300';
  if (!/^\d+$/.test(hist) || Number(hist) < 10) throw new FlagError(`--history-seconds ${JSON.stringify(hist)}: a whole number of seconds, at least 10`);
  const logLevel = flags.get('log-level') ?? 'info';
  if (!LEVELS.has(logLevel)) throw new FlagError(`--log-level ${JSON.stringify(logLevel)}: one of ${[...LEVELS].join(', ')}`);
  const logFile = flags.get('log-file');
  const serviceCIDR = flags.get('service-cidr') ?? DEFAULT_SERVICE_CIDR;
  let cidr;
  try {
    cidr = parseCidr(serviceCIDR);
  } catch {
    throw new FlagError(`--service-cidr ${JSON.stringify(serviceCIDR)}: expected an IPv4 CIDR such as 10.96.0.0/12`);
  }
  if (cidr.cidr !== serviceCIDR) throw new FlagError(`--service-cidr ${JSON.stringify(serviceCIDR)}: has host bits set (did you mean ${cidr.cidr}?)`);
  if (cidr.prefix > 30) throw new FlagError(`--service-cidr ${serviceCIDR}: too small, at most a /30`);
  const rangeText = flags.get('service-node-port-range') ?? `${DEFAULT_NODE_PORT_RANGE.from}-${DEFAULT_NODE_PORT_RANGE.to}`;
  let nodePortRange;
  try {
    nodePortRange = parsePortRange(rangeText);
  } catch (e) {
    throw new FlagError(`--service-node-port-range: ${(e as Error).message}`);
  }
  const clusterCIDR = flags.get('cluster-cidr') ?? DEFAULT_CLUSTER_CIDR;
  let cc;
  try {
    cc = parseCidr(clusterCIDR);
  } catch {
    throw new FlagError(`--cluster-cidr ${JSON.stringify(clusterCIDR)}: expected an IPv4 CIDR such as 10.244.0.0/16`);
  }
  if (cc.cidr !== clusterCIDR) throw new FlagError(`--cluster-cidr ${JSON.stringify(clusterCIDR)}: has host bits set (did you mean ${cc.cidr}?)`);
  const maskText = flags.get('node-cidr-mask-size') ?? String(DEFAULT_NODE_MASK);
  const nodeCIDRMaskSize = Number(maskText);
  if (!/^\d+$/.test(maskText) || nodeCIDRMaskSize < cc.prefix || nodeCIDRMaskSize > 30) throw new FlagError(`--node-cidr-mask-size ${JSON.stringify(maskText)}: a prefix length between ${cc.prefix} (the cluster CIDR's) and 30`);
  const graceText = flags.get('node-monitor-grace-period') ?? `${DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS / 1000}s`;
  const nodeMonitorGracePeriodMs = parseDurationMs(graceText);
  if (nodeMonitorGracePeriodMs === null || nodeMonitorGracePeriodMs <= 0) throw new FlagError(`--node-monitor-grace-period ${JSON.stringify(graceText)}: a duration more than 0, in seconds (40) or with a unit (40s, 1m30s, 500ms)`);
  const quarantineText = flags.get('orphan-pod-quarantine') ?? `${DEFAULT_ORPHAN_QUARANTINE_MS / 1000}s`;
  const orphanPodQuarantineMs = parseDurationMs(quarantineText);
  if (orphanPodQuarantineMs === null) throw new FlagError(`--orphan-pod-quarantine ${JSON.stringify(quarantineText)}: a duration, in seconds (40) or with a unit (40s, 1m30s, 500ms)`);
  const loadBalancerPool = flags.get('load-balancer-ip-pool');
  if (loadBalancerPool !== undefined) {
    try {
      parseLoadBalancerPool(loadBalancerPool);
    } catch (e) {
      throw new FlagError(`--load-balancer-ip-pool: ${(e as Error).message}`);
    }
  }
  let storage: StorageSpec;
  try {
    storage = parseStorageSpec(flags.get('storage') ?? 'sqlite', flags.get('etcd-prefix') ?? '/registry');
  } catch (e) {
    throw new FlagError((e as Error).message.startsWith('--') ? (e as Error).message : `--storage: ${(e as Error).message}`);
  }
  if (flags.has('etcd-prefix') && storage.kind !== 'etcd') throw new FlagError('--etcd-prefix: only with --storage etcd:URL');
  const advertiseAddress = flags.get('advertise-address');
  if (advertiseAddress !== undefined && (!isIP(advertiseAddress) || advertiseAddress === '0.0.0.0' || advertiseAddress === '::')) throw new FlagError(`--advertise-address ${JSON.stringify(advertiseAddress)}: an IP address clients can reach (not 0.0.0.0)`);
  const controlPlaneEndpoint = flags.get('control-plane-endpoint');
  if (controlPlaneEndpoint !== undefined) {
    const m = /^(?:\[([^\]]+)\]|([^:/\s]+)):(\d+)$/.exec(controlPlaneEndpoint);
    if (!m || !(Number(m[3]) >= 1 && Number(m[3]) <= 65535)) throw new FlagError(`--control-plane-endpoint ${JSON.stringify(controlPlaneEndpoint)}: expected HOST:PORT, e.g. 192.168.77.1:6443 or api.example:6443`);
  }
  const delayText = flags.get('shutdown-delay-duration') ?? '0s';
  const shutdownDelayMs = parseDurationMs(delayText);
  if (shutdownDelayMs === null) throw new FlagError(`--shutdown-delay-duration ${JSON.stringify(delayText)}: a duration, in seconds (3) or with a unit (3s, 500ms)`);
  const ttlText = flags.get('event-ttl') ?? '1h';
  const eventTtlMs = parseDurationMs(ttlText);
  if (eventTtlMs === null || eventTtlMs <= 0) throw new FlagError(`--event-ttl ${JSON.stringify(ttlText)}: a duration more than 0, in seconds (3600) or with a unit (1h, 30m)`);
  const enable = list(flags.get('enable-admission-plugins'));
  const disable = list(flags.get('disable-admission-plugins'));
  try {
    enabledPlugins(enable, disable);
  } catch (e) {
    throw new FlagError(e instanceof Error ? e.message : String(e));
  }
  const anon = flags.get('anonymous-auth');
  if (anon !== undefined && anon !== 'true' && anon !== 'false') throw new FlagError(`--anonymous-auth ${JSON.stringify(anon)}: true or false`);
  const maxTok = flags.get('service-account-max-token-expiration');
  const maxTokMs = maxTok === undefined ? undefined : parseDurationMs(maxTok);
  if (maxTok !== undefined && (maxTokMs === null || maxTokMs === undefined || maxTokMs < 600_000)) {
    throw new FlagError(`--service-account-max-token-expiration ${JSON.stringify(maxTok)}: a duration of at least 10m (TokenRequest's least)`);
  }
  let disabled: string[];
  try {
    disabled = [...parseDisabled(list(flags.get('disable')))];
  } catch (e) {
    throw new FlagError((e as Error).message);
  }
  return {
    eventTtlMs,
    ...(disabled.length ? { disable: disabled } : {}),
    ...(enable.length ? { enableAdmissionPlugins: enable } : {}),
    ...(disable.length ? { disableAdmissionPlugins: disable } : {}),
    ...(anon === 'false' ? { anonymousAuth: false } : {}),
    ...(maxTokMs ? { maxTokenExpirationSeconds: Math.floor(maxTokMs / 1000) } : {}),
    ...(flags.get('encryption-provider-config') ? { encryptionProviderConfig: flags.get('encryption-provider-config')! } : {}),
    ...(advertiseAddress !== undefined ? { advertiseAddress } : {}),
    ...(controlPlaneEndpoint !== undefined ? { controlPlaneEndpoint } : {}),
    shutdownDelayMs,
    dataDir: flags.get('data-dir') ?? '/var/lib/nodenet/control-plane',
    storage,
    host,
    port,
    nodes: list(flags.get('node')),
    hosts: list(flags.get('host')),
    insecureHttp: flags.get('insecure-http') === 'true',
    historyMs: Number(hist) * 1000,
    serviceCIDR,
    nodePortRange,
    clusterCIDR,
    nodeCIDRMaskSize,
    nodeMonitorGracePeriodMs,
    orphanPodQuarantineMs,
    ...(loadBalancerPool !== undefined ? { loadBalancerPool } : {}),
    logLevel,
    ...(logFile ? { logFile } : {}),
  };
}

export interface RunningControlPlane {
  readonly url: string;
  readonly kubeconfig: string;
  stop(): Promise<void>;
}

export interface ControlPlaneCmdDeps {
  /** nodenetEntry: the CLI's entry script, which the control plane's addon Pods run (`node <entry> dns`). */
  readonly startControlPlane: (a: ControlPlaneArgs & { readonly version: string; readonly nodenetEntry?: string }) => Promise<RunningControlPlane>;
  /** This program's entry script (default: process.argv[1], its real path). */
  readonly entry?: string;
  readonly version: string;
  readonly stdout: (s: string) => void;
  /** Resolves on SIGTERM/SIGINT (injected so tests need not signal themselves). */
  readonly untilSignal?: () => Promise<void>;
  readonly stderr?: (s: string) => void;
  /** `control-plane migrate`'s migration (default the store's own). */
  readonly migrate?: MigrateCmdDeps['migrate'];
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
}

/**
 * The script this process runs (dist/nodenet.js, or bin/nodenet.js through a symlink such as /usr/bin/nodenet),
 * absolute and real: the addon Pods run `node <it> dns` on the nodes, which share this filesystem. undefined when
 * there is none (an embedding), which leaves the control plane's default.
 */
function ownEntry(): string | undefined {
  const a = process.argv[1];
  if (!a) return undefined;
  try {
    return realpathSync(a);
  } catch {
    return resolve(a);
  }
}

/** `control-plane add-user`'s arguments (pure). @throws FlagError */
export function addUserArgs(argv: readonly string[]): { name: string; groups: string[]; dataDir: string } | 'help' {
  const p = parseFlags(argv, { 'data-dir': { type: 'string' }, group: { type: 'string' } });
  if (p.help) return 'help';
  if (p.positional.length !== 1 || p.rest.length) throw new FlagError('add-user takes one NAME (then --group G[,G...] and --data-dir D)');
  const name = p.positional[0]!;
  const problem = userNameProblem(name);
  if (problem) throw new FlagError(problem);
  return { name, groups: list(p.flags.get('group')), dataDir: p.flags.get('data-dir') ?? '/var/lib/nodenet/control-plane' };
}

export async function controlPlaneCommand(argv: readonly string[], deps: ControlPlaneCmdDeps): Promise<number> {
  if (argv[0] === 'add-user') {
    const a = addUserArgs(argv.slice(1));
    if (a === 'help') {
      deps.stdout(`${CONTROL_PLANE_USAGE}\n`);
      return 0;
    }
    const file = addUser(a.dataDir, a.name, a.groups);
    deps.stdout(`user ${a.name}${a.groups.length ? ` (groups ${a.groups.join(', ')})` : ''}: a client certificate signed by the cluster CA\n  export KUBECONFIG=${file}\n`);
    return 0;
  }
  if (argv[0] === 'migrate') return migrateCommand(argv.slice(1), { stdout: deps.stdout, ...(deps.stderr ? { stderr: deps.stderr } : {}), ...(deps.migrate ? { migrate: deps.migrate } : {}) });
  const p = parseFlags(argv, SPECS);
  if (p.help) {
    deps.stdout(`${CONTROL_PLANE_USAGE}\n`);
    return 0;
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const args = controlPlaneArgs(p.flags);
  const entry = deps.entry ?? ownEntry();
  const cp = await deps.startControlPlane({ ...args, version: deps.version, ...(entry ? { nodenetEntry: entry } : {}) });
  deps.stdout(`nodenet control plane serving at ${cp.url}\n  export KUBECONFIG=${cp.kubeconfig}\n  kubectl get ns\n`);
  await (deps.untilSignal ?? untilSignal)();
  await cp.stop();
  return 0;
}
