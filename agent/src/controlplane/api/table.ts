/**
 * controlplane/api/table: `meta.k8s.io/v1` Table output, what `kubectl get`
 * asks for, with kube-apiserver's columns per kind (its internal printers).
 * Priority-1 columns are the ones `-o wide` adds.
 */
import type { KObject } from '../store/types.js';

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
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const none = (s: string): string => (s === '' ? '<none>' : s);

/** k8s.io/apimachinery's duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

const age = (o: KObject, now: number): string => {
  const ts = str(get(o, 'metadata', 'creationTimestamp'));
  return ts ? humanDuration(now - Date.parse(ts)) : '<unknown>';
};

const NAME: Column = { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 };
const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 };
const col = (name: string, description: string, priority: 0 | 1 = 0, type: Column['type'] = 'string'): Column => ({ name, type, description, priority });

function selectorText(sel: unknown): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries((get(sel, 'matchLabels') as O | undefined) ?? {})) parts.push(`${k}=${str(v)}`);
  for (const e of arr(get(sel, 'matchExpressions'))) {
    const op = str(get(e, 'operator'));
    const key = str(get(e, 'key'));
    const vals = arr(get(e, 'values')).map(str).join(',');
    parts.push(op === 'Exists' ? key : op === 'DoesNotExist' ? `!${key}` : `${key} ${op === 'In' ? 'in' : 'notin'} (${vals})`);
  }
  return none(parts.join(','));
}

const containersOf = (tpl: unknown) => arr(get(tpl, 'spec', 'containers'));

export const PRINTERS: Readonly<Record<string, Printer>> = {
  namespaces: {
    columns: [NAME, col('Status', 'The status of the namespace'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), str(get(o, 'status', 'phase')) || 'Active', age(o, now)],
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
      let status = ready ? (get(ready, 'status') === 'True' ? 'Ready' : 'NotReady') : 'Unknown';
      if (get(o, 'spec', 'unschedulable') === true) status += ',SchedulingDisabled';
      const roles = Object.keys((get(o, 'metadata', 'labels') as O | undefined) ?? {})
        .filter((k) => k.startsWith('node-role.kubernetes.io/'))
        .map((k) => k.slice('node-role.kubernetes.io/'.length))
        .sort();
      const addr = (t: string) => none(arr(get(o, 'status', 'addresses')).filter((a) => get(a, 'type') === t).map((a) => str(get(a, 'address'))).join(','));
      const info = (k: string) => str(get(o, 'status', 'nodeInfo', k)) || '<unknown>';
      return [str(get(o, 'metadata', 'name')), status, none(roles.join(',')), age(o, now), str(get(o, 'status', 'nodeInfo', 'kubeletVersion')), addr('InternalIP'), addr('ExternalIP'), info('osImage'), info('kernelVersion'), info('containerRuntimeVersion')];
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
      const statuses = arr(get(o, 'status', 'containerStatuses'));
      const total = containersOf(o).length;
      const ready = statuses.filter((s) => get(s, 'ready') === true).length;
      const restarts = statuses.reduce<number>((n, s) => n + (Number(get(s, 'restartCount')) || 0), 0);
      let reason = str(get(o, 'status', 'reason')) || str(get(o, 'status', 'phase')) || 'Pending';
      for (const s of statuses) {
        const waiting = str(get(s, 'state', 'waiting', 'reason'));
        const term = str(get(s, 'state', 'terminated', 'reason'));
        if (waiting) reason = waiting;
        else if (term) reason = term;
      }
      if (get(o, 'metadata', 'deletionTimestamp')) reason = 'Terminating';
      const gates = arr(get(o, 'spec', 'readinessGates'));
      const conds = arr(get(o, 'status', 'conditions'));
      const gatesText = gates.length ? `${gates.filter((g) => conds.some((c) => get(c, 'type') === get(g, 'conditionType') && get(c, 'status') === 'True')).length}/${gates.length}` : '<none>';
      return [str(get(o, 'metadata', 'name')), `${ready}/${total}`, reason, restarts, age(o, now), none(str(get(o, 'status', 'podIP'))), none(str(get(o, 'spec', 'nodeName'))), none(str(get(o, 'status', 'nominatedNodeName'))), gatesText];
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
      const type = str(get(o, 'spec', 'type')) || 'ClusterIP';
      const ext = [...arr(get(o, 'status', 'loadBalancer', 'ingress')).map((i) => str(get(i, 'ip')) || str(get(i, 'hostname'))), ...arr(get(o, 'spec', 'externalIPs')).map(str)].filter(Boolean);
      const external = type === 'ExternalName' ? str(get(o, 'spec', 'externalName')) : ext.length ? ext.join(',') : type === 'LoadBalancer' ? '<pending>' : '<none>';
      const ports = arr(get(o, 'spec', 'ports')).map((p) => {
        const np = get(p, 'nodePort');
        return `${str(get(p, 'port'))}${np ? `:${str(np)}` : ''}/${str(get(p, 'protocol')) || 'TCP'}`;
      });
      const sel = Object.entries((get(o, 'spec', 'selector') as O | undefined) ?? {}).map(([k, v]) => `${k}=${str(v)}`).sort();
      return [str(get(o, 'metadata', 'name')), type, str(get(o, 'spec', 'clusterIP')) || '<none>', external, none(ports.join(',')), age(o, now), none(sel.join(','))];
    },
  },
  events: {
    columns: [
      col('Last Seen', 'Time when this Event was last observed.'), col('Type', 'Type of this event (Normal, Warning), new types could be added in the future.'),
      col('Reason', 'This should be a short, machine understandable string that gives the reason for the transition into the object\'s current status.'),
      col('Object', 'The object this Event is about.'), col('Subobject', 'The subobject this Event is about.', 1), col('Source', 'The component reporting this event.', 1),
      col('Message', 'A human-readable description of the status of this operation.'), col('First Seen', 'The time at which the event was first recorded.', 1),
      col('Count', 'The number of times this event has occurred.', 1, 'integer'), { ...NAME, priority: 1 },
    ],
    row: (o, now) => {
      const last = str(get(o, 'lastTimestamp')) || str(get(o, 'eventTime')) || str(get(o, 'metadata', 'creationTimestamp'));
      const first = str(get(o, 'firstTimestamp')) || last;
      const io = get(o, 'involvedObject');
      const source = [str(get(o, 'source', 'component')) || str(get(o, 'reportingComponent')), str(get(o, 'source', 'host'))].filter(Boolean).join(', ');
      return [
        last ? humanDuration(now - Date.parse(last)) : '<unknown>', str(get(o, 'type')), str(get(o, 'reason')),
        `${str(get(io, 'kind')).toLowerCase()}/${str(get(io, 'name'))}`, str(get(io, 'fieldPath')), source, str(get(o, 'message')),
        first ? humanDuration(now - Date.parse(first)) : '<unknown>', Number(get(o, 'count')) || 1, str(get(o, 'metadata', 'name')),
      ];
    },
  },
  'endpointslices.discovery.k8s.io': {
    columns: [NAME, col('AddressType', 'Type of address carried by this EndpointSlice.'), col('Ports', 'Ports advertised by this EndpointSlice.'), col('Endpoints', 'Endpoints included in this EndpointSlice.'), AGE],
    row: (o, now) => {
      const ports = arr(get(o, 'ports')).map((p) => str(get(p, 'port')) || '<unset>');
      const addrs = arr(get(o, 'endpoints')).flatMap((e) => arr(get(e, 'addresses')).map(str));
      const endpoints = addrs.length ? (addrs.length > 3 ? `${addrs.slice(0, 3).join(',')} + ${addrs.length - 3} more...` : addrs.join(',')) : '<unset>';
      return [str(get(o, 'metadata', 'name')), str(get(o, 'addressType')), ports.length ? ports.join(',') : '<unset>', endpoints, age(o, now)];
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
      const want = get(o, 'spec', 'replicas') ?? 1;
      const c = containersOf(get(o, 'spec', 'template'));
      return [
        str(get(o, 'metadata', 'name')), `${Number(get(o, 'status', 'readyReplicas')) || 0}/${str(want)}`, Number(get(o, 'status', 'updatedReplicas')) || 0,
        Number(get(o, 'status', 'availableReplicas')) || 0, age(o, now), c.map((x) => str(get(x, 'name'))).join(','), c.map((x) => str(get(x, 'image'))).join(','), selectorText(get(o, 'spec', 'selector')),
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
      const c = containersOf(get(o, 'spec', 'template'));
      return [
        str(get(o, 'metadata', 'name')), Number(get(o, 'spec', 'replicas') ?? 1), Number(get(o, 'status', 'replicas')) || 0, Number(get(o, 'status', 'readyReplicas')) || 0, age(o, now),
        c.map((x) => str(get(x, 'name'))).join(','), c.map((x) => str(get(x, 'image'))).join(','), selectorText(get(o, 'spec', 'selector')),
      ];
    },
  },
  'leases.coordination.k8s.io': {
    columns: [NAME, col('Holder', 'The holder of the lease.'), AGE],
    row: (o, now) => [str(get(o, 'metadata', 'name')), str(get(o, 'spec', 'holderIdentity')), age(o, now)],
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
