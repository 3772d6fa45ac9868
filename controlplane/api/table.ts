/**
 * controlplane/api/table: `meta.k8s.io/v1` Table output, what `kubectl get`
 * asks for, with kube-apiserver's columns per kind (its internal printers).
 * Priority-1 columns are the ones `-o wide` adds.
 */
import type { KObject } from '../store/types.js';
import { arr } from '../../lib/json/loose.js';

export interface Column {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly format?: string;
  readonly description: string;
  readonly priority: 0 | 1;
}

export type Cell = string | number;
export interface Printer {
  readonly columns: readonly Column[];
  row(obj: KObject, now: number): Cell[];
}

type O = Record<string, unknown>;
const get = (o: unknown, ...path: string[]): unknown => path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as O)[k] : undefined), o);
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const none = (s: string): string => (s === '' ? '<none>' : s);

/**
 * k8s.io/apimachinery's duration.HumanDuration. Go converts with int(), which truncates toward
 * zero: -1.9 s is "0s" (the two seconds of clock skew it tolerates), -2 s is "<invalid>".
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${Math.trunc(days / 365)}y` : `${Math.trunc(days / 365)}y${days % 365}d`;
  return `${Math.trunc(days / 365)}y`;
}

/** translateTimestampSince: the age of a timestamp, `<unknown>` when there is none. */
const since = (ts: unknown, now: number): string => {
  const t = typeof ts === 'string' && ts !== '' ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
};
const age = (o: KObject, now: number): string => since(get(o, 'metadata', 'creationTimestamp'), now);

const NAME: Column = { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 };
const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 };
const col = (name: string, description: string, priority: 0 | 1 = 0, type: Column['type'] = 'string'): Column => ({ name, type, description, priority });
const CREATED_AT: Column = { name: 'Created At', type: 'date', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 };
const createdAt = (o: KObject): string => str(get(o, 'metadata', 'creationTimestamp'));
const BINDING_COLUMNS: Column[] = [
  NAME, col('Role', 'RoleRef is the name of the role the subjects are bound to.'), AGE,
  col('Users', 'Users in the binding', 1), col('Groups', 'Groups in the binding', 1), col('ServiceAccounts', 'ServiceAccounts in the binding', 1),
];
/** rbac.SubjectsStrings: users, groups and `namespace/name` ServiceAccounts, each joined with ", ". */
const bindingRow = (o: KObject, now: number): Cell[] => {
  const of = (kind: string) => arr(get(o, 'subjects')).filter((x) => str(get(x, 'kind')) === kind);
  return [
    str(get(o, 'metadata', 'name')), `${str(get(o, 'roleRef', 'kind'))}/${str(get(o, 'roleRef', 'name'))}`, age(o, now),
    of('User').map((x) => str(get(x, 'name'))).join(', '), of('Group').map((x) => str(get(x, 'name'))).join(', '),
    of('ServiceAccount').map((x) => `${str(get(x, 'namespace'))}/${str(get(x, 'name'))}`).join(', '),
  ];
};

const keyCount = (m: unknown): number => (m && typeof m === 'object' && !Array.isArray(m) ? Object.keys(m).length : 0);

/**
 * A metav1.LabelSelector as labels.Selector.String() prints it (LabelSelectorAsSelector): requirements
 * sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, the values of a set sorted.
 * '' for an empty or missing selector; null for an operator it does not know (an invalid selector).
 */
export function labelSelectorString(sel: unknown): string | null {
  const reqs: { key: string; text: string }[] = [];
  for (const [k, v] of Object.entries((get(sel, 'matchLabels') as O | undefined) ?? {})) reqs.push({ key: k, text: `${k}=${str(v)}` });
  for (const e of arr(get(sel, 'matchExpressions'))) {
    const key = str(get(e, 'key'));
    const vals = arr(get(e, 'values')).map(str).sort().join(',');
    const op = get(e, 'operator');
    const text = op === 'In' ? `${key} in (${vals})` : op === 'NotIn' ? `${key} notin (${vals})` : op === 'Exists' ? key : op === 'DoesNotExist' ? `!${key}` : null;
    if (text === null) return null;
    reqs.push({ key, text });
  }
  return reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((r) => r.text).join(',');
}

/** metav1.FormatLabelSelector: `<none>` for an empty selector, `<error>` for an invalid one. */
function formatLabelSelector(sel: unknown): string {
  const s = labelSelectorString(sel);
  return s === null ? '<error>' : none(s);
}

const containersOf = (tpl: unknown) => arr(get(tpl, 'spec', 'containers'));
/** layoutContainerCells: names and images, comma-separated. */
const containerCells = (tpl: unknown): [string, string] => {
  const c = containersOf(tpl);
  return [c.map((x) => str(get(x, 'name'))).join(','), c.map((x) => str(get(x, 'image'))).join(',')];
};

/** Up to three items, then ` + N more...`; `<unset>` for none (listWithMoreString). */
function listWithMore(items: readonly string[]): string {
  if (items.length > 3) return `${items.slice(0, 3).join(',')} + ${items.length - 3} more...`;
  return items.length ? items.join(',') : '<unset>';
}

/**
 * formatEndpoints: the ready addresses as IP:PORT (IP alone in a subset without ports; [v6]:PORT), three at most, then
 * ` + N more...`; `<none>` without subsets. Not-ready addresses are not shown.
 */
function formatEndpoints(o: KObject): string {
  const subsets = arr(get(o, 'subsets'));
  if (subsets.length === 0) return '<none>';
  const max = 3;
  const list: string[] = [];
  let count = 0;
  for (const ss of subsets) {
    const ips = arr(get(ss, 'addresses')).map((a) => str(get(a, 'ip')));
    const ports = arr(get(ss, 'ports'));
    const each = ports.length === 0 ? [ips] : ports.map((p) => ips.map((ip) => `${ip.includes(':') ? `[${ip}]` : ip}:${String(get(p, 'port'))}`));
    for (const entries of each) {
      count += entries.length;
      for (const e of entries) if (list.length < max) list.push(e);
    }
  }
  return count > max ? `${list.join(',')} + ${count - max} more...` : list.join(',');
}

const isTrue = (conds: unknown, type: string): boolean => arr(conds).some((c) => get(c, 'type') === type && get(c, 'status') === 'True');

/** printPod: READY, STATUS and RESTARTS as kubectl shows them, init and sidecar containers included. */
function podCells(o: KObject, now: number): { ready: string; reason: string; restarts: string } {
  const phase = str(get(o, 'status', 'phase'));
  let reason = str(get(o, 'status', 'reason')) || phase;
  for (const c of arr(get(o, 'status', 'conditions'))) {
    if (get(c, 'type') === 'PodScheduled' && get(c, 'reason') === 'SchedulingGated') reason = 'SchedulingGated';
  }
  const initSpecs = arr(get(o, 'spec', 'initContainers'));
  const sidecar = (name: unknown) => initSpecs.some((c) => get(c, 'name') === name && get(c, 'restartPolicy') === 'Always');
  const total = containersOf(o).length + initSpecs.filter((c) => get(c, 'restartPolicy') === 'Always').length;
  let ready = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  const finishedAt = (s: unknown) => {
    const t = Date.parse(str(get(s, 'lastState', 'terminated', 'finishedAt')));
    return Number.isNaN(t) ? 0 : t;
  };
  const initStatuses = arr(get(o, 'status', 'initContainerStatuses'));
  let initializing = false;
  for (let i = 0; i < initStatuses.length; i++) {
    const s = initStatuses[i];
    const n = Number(get(s, 'restartCount')) || 0;
    restarts += n;
    lastRestart = Math.max(lastRestart, finishedAt(s));
    if (sidecar(get(s, 'name'))) {
      sidecarRestarts += n;
      lastSidecarRestart = Math.max(lastSidecarRestart, finishedAt(s));
    }
    const term = get(s, 'state', 'terminated');
    const waiting = str(get(s, 'state', 'waiting', 'reason'));
    if (term && Number(get(term, 'exitCode') ?? 0) === 0) continue;
    if (sidecar(get(s, 'name')) && get(s, 'started') === true) {
      if (get(s, 'ready') === true) ready++;
      continue;
    }
    if (term) {
      const r = str(get(term, 'reason'));
      const signal = Number(get(term, 'signal')) || 0;
      reason = r ? `Init:${r}` : signal ? `Init:Signal:${signal}` : `Init:ExitCode:${Number(get(term, 'exitCode')) || 0}`;
    } else if (waiting && waiting !== 'PodInitializing') reason = `Init:${waiting}`;
    else reason = `Init:${i}/${initSpecs.length}`;
    initializing = true;
    break;
  }
  if (!initializing || isTrue(get(o, 'status', 'conditions'), 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let running = false;
    const statuses = arr(get(o, 'status', 'containerStatuses'));
    // Last to first, so the first container's reason is the one shown.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const s = statuses[i];
      restarts += Number(get(s, 'restartCount')) || 0;
      lastRestart = Math.max(lastRestart, finishedAt(s));
      const waiting = str(get(s, 'state', 'waiting', 'reason'));
      const term = get(s, 'state', 'terminated');
      if (waiting) reason = waiting;
      else if (term && str(get(term, 'reason'))) reason = str(get(term, 'reason'));
      else if (term) {
        const signal = Number(get(term, 'signal')) || 0;
        reason = signal ? `Signal:${signal}` : `ExitCode:${Number(get(term, 'exitCode')) || 0}`;
      } else if (get(s, 'ready') === true && get(s, 'state', 'running')) {
        running = true;
        ready++;
      }
    }
    if (reason === 'Completed' && running) reason = isTrue(get(o, 'status', 'conditions'), 'Ready') ? 'Running' : 'NotReady';
  }
  if (get(o, 'metadata', 'deletionTimestamp')) {
    if (str(get(o, 'status', 'reason')) === 'NodeLost') reason = 'Unknown';
    else if (phase !== 'Failed' && phase !== 'Succeeded') reason = 'Terminating';
  }
  const restartText = restarts !== 0 && lastRestart ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  return { ready: `${ready}/${total}`, reason, restarts: restartText };
}

/** getServiceExternalIP, wide. */
function serviceExternalIP(o: KObject): string {
  const external = arr(get(o, 'spec', 'externalIPs')).map(str);
  switch (get(o, 'spec', 'type')) {
    case 'ClusterIP':
    case 'NodePort':
      return external.length ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const lb = [...new Set(arr(get(o, 'status', 'loadBalancer', 'ingress')).map((i) => str(get(i, 'ip')) || str(get(i, 'hostname'))).filter(Boolean))];
      if (external.length) return [...lb, ...external].join(',');
      return lb.length ? lb.join(',') : '<pending>';
    }
    case 'ExternalName':
      return str(get(o, 'spec', 'externalName'));
  }
  return '<unknown>';
}

export const PRINTERS: Readonly<Record<string, Printer>> = {
  namespaces: {
    columns: [NAME, col('Status', 'The status of the namespace'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), str(get(o, 'status', 'phase')), age(o, now)],
  },
  nodes: {
    columns: [
      NAME, col('Status', 'The status of the node'), col('Roles', 'The roles of the node'), AGE, col('Version', 'Kubelet Version reported by the node.'),
      col('Internal-IP', 'List of internal IPs for the node.', 1), col('External-IP', 'List of external IPs for this node.', 1),
      col('OS-Image', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
      col('Kernel-Version', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
      col('Container-Runtime', 'Container Runtime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', 1),
    ],
    row: (o, now) => {
      const ready = arr(get(o, 'status', 'conditions')).find((c) => get(c, 'type') === 'Ready');
      const status = [ready ? (get(ready, 'status') === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
      if (get(o, 'spec', 'unschedulable') === true) status.push('SchedulingDisabled');
      const roles = new Set<string>();
      for (const [k, v] of Object.entries((get(o, 'metadata', 'labels') as O | undefined) ?? {})) {
        if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length) roles.add(k.slice('node-role.kubernetes.io/'.length));
        else if (k === 'kubernetes.io/role' && str(v) !== '') roles.add(str(v));
      }
      // The first address of the type, as getNodeInternalIP and getNodeExternalIP.
      const addr = (t: string) => str(get(arr(get(o, 'status', 'addresses')).find((a) => get(a, 'type') === t), 'address')) || '<none>';
      const info = (k: string) => str(get(o, 'status', 'nodeInfo', k)) || '<unknown>';
      return [str(get(o, 'metadata', 'name')), status.join(','), none([...roles].sort().join(',')), age(o, now), str(get(o, 'status', 'nodeInfo', 'kubeletVersion')), addr('InternalIP'), addr('ExternalIP'), info('osImage'), info('kernelVersion'), info('containerRuntimeVersion')];
    },
  },
  pods: {
    columns: [
      NAME, col('Ready', 'The aggregate readiness state of this pod for accepting traffic.'), col('Status', 'The aggregate status of the containers in this pod.'),
      col('Restarts', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'), AGE,
      col('IP', 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', 1),
      col('Node', 'NodeName is a request to schedule this pod onto a specific node.', 1),
      col('Nominated Node', 'nominatedNodeName is set only when this pod preempts other pods on the node.', 1),
      col('Readiness Gates', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
    ],
    row: (o, now) => {
      const { ready, reason, restarts } = podCells(o, now);
      const gates = arr(get(o, 'spec', 'readinessGates'));
      const conds = arr(get(o, 'status', 'conditions'));
      // The first condition of a gate's type decides it.
      const gatesText = gates.length ? `${gates.filter((g) => get(conds.find((c) => get(c, 'type') === get(g, 'conditionType')), 'status') === 'True').length}/${gates.length}` : '<none>';
      const ip = str(get(arr(get(o, 'status', 'podIPs'))[0], 'ip')) || str(get(o, 'status', 'podIP'));
      return [str(get(o, 'metadata', 'name')), ready, reason, restarts, age(o, now), none(ip), none(str(get(o, 'spec', 'nodeName'))), none(str(get(o, 'status', 'nominatedNodeName'))), gatesText];
    },
  },
  services: {
    columns: [
      NAME, col('Type', 'type determines how the Service is exposed.'), col('Cluster-IP', 'clusterIP is the IP address of the service and is usually assigned randomly.'),
      col('External-IP', 'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.'),
      col('Port(s)', 'The list of ports that are exposed by this service.'), AGE,
      col('Selector', 'Route service traffic to pods with label keys and values matching this selector.', 1),
    ],
    row: (o, now) => {
      const ports = arr(get(o, 'spec', 'ports')).map((p) => {
        const np = Number(get(p, 'nodePort')) || 0;
        return `${str(get(p, 'port'))}${np > 0 ? `:${np}` : ''}/${str(get(p, 'protocol'))}`;
      });
      const clusterIP = str(arr(get(o, 'spec', 'clusterIPs'))[0]) || str(get(o, 'spec', 'clusterIP'));
      const sel = Object.entries((get(o, 'spec', 'selector') as O | undefined) ?? {}).map(([k, v]) => `${k}=${str(v)}`).sort();
      return [str(get(o, 'metadata', 'name')), str(get(o, 'spec', 'type')), none(clusterIP), serviceExternalIP(o), none(ports.join(',')), age(o, now), none(sel.join(','))];
    },
  },
  events: {
    columns: [
      col('Last Seen', 'Time when this Event was last observed.'), col('Type', 'Type of this event (Normal, Warning), new types could be added in the future.'),
      col('Reason', 'This should be a short, machine understandable string that gives the reason for the transition into the object\'s current status.'),
      col('Object', 'The object this Event is about.'), col('Subobject', 'The subobject this Event is about.', 1), col('Source', 'The component reporting this event.', 1),
      col('Message', 'A human-readable description of the status of this operation.'), col('First Seen', 'The time at which the event was first recorded.', 1),
      col('Count', 'The number of times this event has occurred.', 1), { ...NAME, priority: 1 },
    ],
    row: (o, now) => {
      const first = str(get(o, 'firstTimestamp')) ? since(get(o, 'firstTimestamp'), now) : since(get(o, 'eventTime'), now);
      let last = str(get(o, 'lastTimestamp')) ? since(get(o, 'lastTimestamp'), now) : first;
      let count = Number(get(o, 'count')) || 0;
      const series = get(o, 'series');
      if (series && typeof series === 'object') {
        last = since(get(series, 'lastObservedTime'), now);
        count = Number(get(series, 'count')) || 0;
      } else if (count === 0) count = 1;
      const io = get(o, 'involvedObject');
      const kind = str(get(io, 'kind')).toLowerCase();
      const target = str(get(io, 'name')) ? `${kind}/${str(get(io, 'name'))}` : kind;
      const component = str(get(o, 'source', 'component')) || str(get(o, 'reportingComponent'));
      const host = str(get(o, 'source', 'host')) || str(get(o, 'reportingInstance'));
      return [last, str(get(o, 'type')), str(get(o, 'reason')), target, str(get(io, 'fieldPath')), host ? `${component}, ${host}` : component, str(get(o, 'message')).trim(), first, count, str(get(o, 'metadata', 'name'))];
    },
  },
  // Upstream's printEndpoints: formatEndpoints of every port.
  endpoints: {
    columns: [NAME, col('Endpoints', 'The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), formatEndpoints(o), age(o, now)],
  },
  'endpointslices.discovery.k8s.io': {
    columns: [NAME, col('AddressType', 'Type of address carried by this EndpointSlice.'), col('Ports', 'Ports advertised by this EndpointSlice.'), col('Endpoints', 'Endpoints included in this EndpointSlice.'), AGE],
    row: (o, now) => {
      // A port without a number is its name, or `*` (every port).
      const ports = arr(get(o, 'ports')).map((p) => (typeof get(p, 'port') === 'number' ? String(get(p, 'port')) : typeof get(p, 'name') === 'string' ? str(get(p, 'name')) : '*'));
      const addrs = arr(get(o, 'endpoints')).flatMap((e) => arr(get(e, 'addresses')).map(str));
      return [str(get(o, 'metadata', 'name')), str(get(o, 'addressType')), listWithMore(ports), listWithMore(addrs), age(o, now)];
    },
  },
  'deployments.apps': {
    columns: [
      NAME, col('Ready', 'Number of the pod with ready state'), col('Up-to-date', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.'),
      col('Available', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.'), AGE,
      col('Containers', 'Names of each container in the template.', 1), col('Images', 'Images referenced by each container in the template.', 1),
      col('Selector', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', 1),
    ],
    row: (o, now) => {
      const [names, images] = containerCells(get(o, 'spec', 'template'));
      return [
        str(get(o, 'metadata', 'name')), `${Number(get(o, 'status', 'readyReplicas')) || 0}/${Number(get(o, 'spec', 'replicas')) || 0}`, Number(get(o, 'status', 'updatedReplicas')) || 0,
        Number(get(o, 'status', 'availableReplicas')) || 0, age(o, now), names, images, labelSelectorString(get(o, 'spec', 'selector')) ?? '<invalid>',
      ];
    },
  },
  'replicasets.apps': {
    columns: [
      NAME, col('Desired', 'Replicas is the number of desired replicas.', 0, 'integer'), col('Current', 'Replicas is the most recently observed number of replicas.', 0, 'integer'),
      col('Ready', 'The number of ready replicas for this replica set.', 0, 'integer'), AGE,
      col('Containers', 'Names of each container in the template.', 1), col('Images', 'Images referenced by each container in the template.', 1), col('Selector', 'Selector is a label query over pods that should match the replica count.', 1),
    ],
    row: (o, now) => {
      const [names, images] = containerCells(get(o, 'spec', 'template'));
      return [
        str(get(o, 'metadata', 'name')), Number(get(o, 'spec', 'replicas')) || 0, Number(get(o, 'status', 'replicas')) || 0, Number(get(o, 'status', 'readyReplicas')) || 0, age(o, now),
        names, images, formatLabelSelector(get(o, 'spec', 'selector')),
      ];
    },
  },
  'leases.coordination.k8s.io': {
    columns: [NAME, col('Holder', 'The holder of the lease.'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), str(get(o, 'spec', 'holderIdentity')), age(o, now)],
  },
  // Upstream's printRole / printClusterRole, printRoleBinding / printClusterRoleBinding and printServiceAccount.
  'roles.rbac.authorization.k8s.io': { columns: [NAME, CREATED_AT], row: (o) => [str(get(o, 'metadata', 'name')), createdAt(o)] },
  'clusterroles.rbac.authorization.k8s.io': { columns: [NAME, CREATED_AT], row: (o) => [str(get(o, 'metadata', 'name')), createdAt(o)] },
  'rolebindings.rbac.authorization.k8s.io': { columns: BINDING_COLUMNS, row: bindingRow },
  'clusterrolebindings.rbac.authorization.k8s.io': { columns: BINDING_COLUMNS, row: bindingRow },
  // Upstream's printConfigMap (data and binaryData keys) and printSecret.
  configmaps: {
    columns: [NAME, col('Data', "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), keyCount(get(o, 'data')) + keyCount(get(o, 'binaryData')), age(o, now)],
  },
  secrets: {
    columns: [
      NAME, col('Type', 'Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types'),
      col('Data', "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"), AGE,
    ],
    row: (o, now) => [str(get(o, 'metadata', 'name')), str(get(o, 'type')), keyCount(get(o, 'data')), age(o, now)],
  },
  // Upstream's printResourceQuota: `name: used/hard` for each name of status.hard, sorted; limits.* in Limit.
  resourcequotas: {
    columns: [
      NAME, AGE, col('Request', 'Request represents a minimum amount of cpu/memory that a container may consume.'),
      col('Limit', 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.'),
    ],
    row: (o, now) => {
      const hard = (get(o, 'status', 'hard') as O | undefined) ?? {};
      const used = (get(o, 'status', 'used') as O | undefined) ?? {};
      const req: string[] = [];
      const lim: string[] = [];
      for (const k of Object.keys(hard).sort()) (k.split('.')[0] === 'limits' && k.includes('.') ? lim : req).push(`${k}: ${str(used[k] ?? '0')}/${str(hard[k])}`);
      return [str(get(o, 'metadata', 'name')), age(o, now), req.join(', '), lim.join(', ')];
    },
  },
  // Upstream's printLimitRange.
  limitranges: { columns: [NAME, CREATED_AT], row: (o) => [str(get(o, 'metadata', 'name')), createdAt(o)] },
  serviceaccounts: {
    columns: [NAME, col('Secrets', 'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.', 0, 'integer'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), arr(get(o, 'secrets')).length, age(o, now)],
  },
  // Upstream's printPriorityClass.
  'priorityclasses.scheduling.k8s.io': {
    columns: [
      NAME, col('Value', 'The value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.', 0, 'integer'),
      { name: 'Global-Default', type: 'string', format: '', description: 'globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.', priority: 0 } as Column, AGE,
      col('Preemption-Policy', 'preemptionPolicy is the Policy for preempting pods with lower priority.', 1),
    ],
    row: (o, now) => [str(get(o, 'metadata', 'name')), Number(get(o, 'value') ?? 0), String(get(o, 'globalDefault') === true), age(o, now), str(get(o, 'preemptionPolicy'))],
  },
  'ipaddresses.networking.k8s.io': {
    columns: [NAME, col('ParentRef', 'ParentRef references the resource that an IPAddress is attached to.'), AGE],
    // Upstream's printIPAddress: <resource>[.<group>][/<namespace>]/<name>, or <none>.
    row: (o, now) => {
      const ref = get(o, 'spec', 'parentRef');
      let parent = '<none>';
      if (ref && typeof ref === 'object') {
        const r = ref as Record<string, unknown>;
        parent = `${str(r['resource'])}${r['group'] ? `.${str(r['group'])}` : ''}`.toLowerCase();
        if (r['namespace']) parent += `/${str(r['namespace'])}`;
        parent += `/${str(r['name'])}`;
      }
      return [str(get(o, 'metadata', 'name')), parent, age(o, now)];
    },
  },
};

/** The Table for objects of one group-resource. */
export function toTable(gr: string, objects: readonly KObject[], opts: { now: number; resourceVersion: string; continue?: string; includeObject: 'None' | 'Metadata' | 'Object'; noHeaders?: boolean }): Record<string, unknown> {
  const p = PRINTERS[gr] ?? { columns: [NAME, AGE], row: (o: KObject, now: number) => [str(get(o, 'metadata', 'name')), age(o, now)] };
  const metadata: Record<string, unknown> = { resourceVersion: opts.resourceVersion };
  if (opts.continue) metadata['continue'] = opts.continue;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: opts.noHeaders ? [] : p.columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority })),
    rows: objects.map((o) => {
      const row: Record<string, unknown> = { cells: p.row(o, opts.now) };
      if (opts.includeObject === 'Object') row['object'] = o;
      else if (opts.includeObject === 'Metadata') row['object'] = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata ?? {} };
      return row;
    }),
  };
}
