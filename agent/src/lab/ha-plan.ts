/**
 * lab/ha-plan: the pure decisions behind a lab's highly available control
 * plane (`nodenet lab up --etcd-members N --api-servers M`; lab/ha.ts does
 * the work), as the seeds draw it: an etcd cluster of an odd number of
 * members, several stateless API servers behind one load balancer, and
 * leader election for the scheduler and the controller manager.
 *
 * Each part has a namespace of its own on the lab's underlay, so that a
 * partition is a real one (its link down) and a kill is a process gone:
 *   etcd member i    nn-<tag>-etcd<i>  192.168.77.(230+i)  client 2379, peer 2380
 *   API server i     nn-<tag>-api<i>   192.168.77.(240+i)  6443
 *   HAProxy          the underlay namespace, 192.168.77.1:6443 (where the
 *                    single control plane serves otherwise): kubectl's and
 *                    the kubeconfigs' one address
 * The underlay ports are e<tag><i> and a<tag><i>.
 *
 * HAProxy, not a balancer of nodenet's own: it is kubeadm's documented
 * recipe for HA (TCP mode, health checks of /readyz), a real part users
 * meet, and it shows that nodenet's API servers behave behind one as
 * kube-apiserver does. The agents do not need it: they balance over the
 * kubernetes EndpointSlice themselves (watch/api-balancer.ts), as k3s's.
 */
import { KUBERNETES_SERVICE_IP, UNDERLAY_GATEWAY } from './plan.js';

export const MAX_ETCD_MEMBERS = 7;
export const MAX_API_SERVERS = 9;
export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;
export const API_PORT = 6443;
/** How long a stopping API server's /readyz is red before it closes: HAProxy (1 s checks, 2 falls) and the agents' balancers (1 s) move away first. */
export const SHUTDOWN_DELAY = '3s';

export interface HaShape {
  readonly etcdMembers: number;
  readonly apiServers: number;
}

/** @returns the problem with an HA shape, or null. An even etcd is refused with the seeds' reason. */
export function haShapeProblem(s: HaShape): string | null {
  if (!Number.isInteger(s.etcdMembers) || s.etcdMembers < 1 || s.etcdMembers > MAX_ETCD_MEMBERS) return `--etcd-members must be 1, 3, 5 or 7, got ${s.etcdMembers}`;
  if (s.etcdMembers % 2 === 0) {
    const q = s.etcdMembers / 2 + 1;
    return `--etcd-members ${s.etcdMembers}: an etcd cluster has an odd number of members (1, 3, 5, 7). Raft needs a majority: ${s.etcdMembers} members need ${q} for a quorum, so they survive no more failures than ${s.etcdMembers - 1} do (${s.etcdMembers === 2 ? 'with 2, one failure stops everything: two are worse than one' : `${(s.etcdMembers - 2) / 2} either way`}), with one more member to fail`;
  }
  if (!Number.isInteger(s.apiServers) || s.apiServers < 1 || s.apiServers > MAX_API_SERVERS) return `--api-servers must be 1..${MAX_API_SERVERS}, got ${s.apiServers}`;
  return null;
}

export const etcdIP = (i: number): string => `192.168.77.${230 + i}`;
export const apiServerIP = (i: number): string => `192.168.77.${240 + i}`;
export const etcdNetns = (tag: string, i: number): string => `nn-${tag}-etcd${i}`;
export const apiServerNetns = (tag: string, i: number): string => `nn-${tag}-api${i}`;
export const etcdPort = (tag: string, i: number): string => `e${tag}${i}`;
export const apiServerPort = (tag: string, i: number): string => `a${tag}${i}`;
export const etcdRole = (i: number): string => `etcd ${i}`;
export const apiServerRole = (i: number): string => `api-server ${i}`;
export const HAPROXY_ROLE = 'haproxy';
/** The balancer's address: the URL every kubeconfig names. */
export const LB_ENDPOINT = `${UNDERLAY_GATEWAY}:${API_PORT}`;

/** The etcd endpoints the API servers use: every member's client URL. */
export function etcdEndpoints(n: number): string {
  return Array.from({ length: n }, (_, k) => `http://${etcdIP(k + 1)}:${ETCD_CLIENT_PORT}`).join(',');
}

/** etcd member i's arguments (its data under dataDir). `state`: new at the lab's start, existing when restarted. */
export function etcdArgs(tag: string, i: number, n: number, dataDir: string, state: 'new' | 'existing'): string[] {
  const ip = etcdIP(i);
  return [
    '--name', `etcd${i}`, '--data-dir', dataDir,
    '--listen-client-urls', `http://${ip}:${ETCD_CLIENT_PORT}`, '--advertise-client-urls', `http://${ip}:${ETCD_CLIENT_PORT}`,
    '--listen-peer-urls', `http://${ip}:${ETCD_PEER_PORT}`, '--initial-advertise-peer-urls', `http://${ip}:${ETCD_PEER_PORT}`,
    '--initial-cluster', Array.from({ length: n }, (_, k) => `etcd${k + 1}=http://${etcdIP(k + 1)}:${ETCD_PEER_PORT}`).join(','),
    '--initial-cluster-state', state, '--initial-cluster-token', `nn-${tag}`,
    // Elections in about a second on a busy 2-core machine (etcd's defaults: 100 ms heartbeats, 1 s election timeout).
    '--heartbeat-interval', '100', '--election-timeout', '1000',
    '--logger', 'zap', '--log-level', 'warn',
  ];
}

/** API server i's `nodenet control-plane` arguments (after the command). */
export function apiServerArgs(i: number, etcd: number, dataDir: string, nodes: readonly string[], logFile: string, extra: readonly string[] = []): string[] {
  const ip = apiServerIP(i);
  return [
    'control-plane', '--data-dir', dataDir, '--storage', `etcd:${etcdEndpoints(etcd)}`,
    '--listen', `${ip}:${API_PORT}`, '--advertise-address', ip, '--control-plane-endpoint', LB_ENDPOINT, '--host', KUBERNETES_SERVICE_IP,
    '--shutdown-delay-duration', SHUTDOWN_DELAY,
    ...(nodes.length ? ['--node', nodes.join(',')] : []), '--log-level', 'info', '--log-file', logFile, ...extra,
  ];
}

/**
 * HAProxy's configuration: kubeadm's recipe (docs/ha-considerations.md), TCP mode, each API server checked by
 * GET /readyz over TLS every second, down after 2 failures; a server marked down has its sessions cut (a watch
 * through it then resumes on another); a connection refused by a server that died since its last check is
 * dispatched to another (kubectl's POST got EOF in that window before); timeouts long enough for watches.
 */
export function haproxyConfig(apiServers: number): string {
  const servers = Array.from({ length: apiServers }, (_, k) => `    server api${k + 1} ${apiServerIP(k + 1)}:${API_PORT} check check-ssl verify none`);
  return [
    'global',
    '    maxconn 4096',
    'defaults',
    '    mode tcp',
    '    timeout connect 2s',
    '    timeout client 1h',
    '    timeout server 1h',
    '    timeout check 1s',
    // A server killed between two checks refuses the connection: try again on another instead of failing the client.
    '    retries 3',
    '    option redispatch',
    'frontend apiserver',
    `    bind ${LB_ENDPOINT}`,
    '    default_backend apiservers',
    'backend apiservers',
    '    balance roundrobin',
    '    option httpchk GET /readyz',
    '    http-check expect status 200',
    '    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions',
    ...servers,
    '',
  ].join('\n');
}

export type HaTarget =
  | { readonly kind: 'etcd'; readonly index: number }
  | { readonly kind: 'api-server'; readonly index: number }
  | { readonly kind: 'leader'; readonly of: 'etcd' | 'controller-manager' | 'scheduler' };

export const HA_ACTIONS = ['kill', 'stop', 'cont', 'partition', 'heal', 'start'] as const;
export type HaAction = (typeof HA_ACTIONS)[number];

/** @returns the target a word names, or a problem. */
export function parseHaTarget(word: string, shape: HaShape): HaTarget | string {
  const m = /^(etcd|api-server):(\d+)$/.exec(word);
  if (m) {
    const index = Number(m[2]);
    const max = m[1] === 'etcd' ? shape.etcdMembers : shape.apiServers;
    if (index < 1 || index > max) return `${word}: this lab has ${m[1] === 'etcd' ? `etcd members 1..${max}` : `API servers 1..${max}`}`;
    return { kind: m[1] as 'etcd' | 'api-server', index };
  }
  const l = /^leader:(etcd|controller-manager|scheduler)$/.exec(word);
  if (l) return { kind: 'leader', of: l[1] as 'etcd' | 'controller-manager' | 'scheduler' };
  return `${JSON.stringify(word)}: a target is etcd:N, api-server:N, leader:etcd, leader:controller-manager or leader:scheduler`;
}

/** The etcd member that leads, from `etcdctl endpoint status -w json` (member i at etcdIP(i)); 0: none. */
export function etcdLeaderFromStatus(json: string): number {
  let rows: unknown;
  try {
    // Member ids are uint64: kept as strings, past what a double holds.
    rows = JSON.parse(json.replace(/:\s*(\d{16,})/g, ':"$1"'));
  } catch {
    return 0;
  }
  if (!Array.isArray(rows)) return 0;
  for (const r of rows as { Endpoint?: string; Status?: { header?: { member_id?: number | string }; leader?: number | string } }[]) {
    const st = r.Status;
    if (st?.leader === undefined || st.header?.member_id === undefined) continue;
    if (String(st.leader) !== String(st.header.member_id)) continue;
    const m = /192\.168\.77\.(\d+):/.exec(r.Endpoint ?? '');
    if (m) return Number(m[1]) - 230;
  }
  return 0;
}

/** The API server whose leader-election identity a Lease names (each writes its identity to <dataDir>/identity). */
export function serverOfIdentity(holder: string, identities: ReadonlyMap<number, string>): number {
  for (const [i, id] of identities) if (id === holder) return i;
  return 0;
}
