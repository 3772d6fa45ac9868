/**
 * Table output against kube-apiserver's printers (pkg/printers/internalversion/printers.go):
 * the columns `kubectl get` and `kubectl get -o wide` show per kind, the cells for the cases those
 * printers branch on, and duration.HumanDuration against upstream's own test cases.
 */
import t from 'tap';
import type { KObject } from '../store/types.js';
import { humanDuration, labelSelectorString, PRINTERS, toTable } from './table.js';

const NOW = Date.parse('2024-05-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString().replace('.000Z', 'Z');
const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const Y = 365 * D;

/** What kubectl prints as the header: the column names, upper-cased; wide adds priority-1 columns. */
function header(gr: string, wide = false): string[] {
  return PRINTERS[gr]!.columns.filter((c) => wide || c.priority === 0).map((c) => c.name.toUpperCase());
}
function row(gr: string, o: KObject): (string | number)[] {
  return PRINTERS[gr]!.row(o, NOW);
}
/** The cells by upper-cased column name. */
function cells(gr: string, o: KObject): Record<string, string | number> {
  const cols = PRINTERS[gr]!.columns;
  return Object.fromEntries(row(gr, o).map((c, i) => [cols[i]!.name.toUpperCase(), c]));
}

t.test('humanDuration: upstream TestHumanDuration', async (t) => {
  const cases: [number, string][] = [
    [S, '1s'], [70 * S, '70s'], [190 * S, '3m10s'], [70 * M, '70m'], [47 * H, '47h'], [49 * H, '2d1h'],
    [(8 * 24 + 2) * H, '8d'], [367 * D, '367d'], [(365 * 2 * 24 + 25) * H, '2y1d'], [(365 * 8 * 24 + 2) * H, '8y'],
  ];
  for (const [ms, want] of cases) t.equal(humanDuration(ms), want, `${ms} ms`);
});

t.test('humanDuration: upstream TestHumanDurationBoundaries (at millisecond resolution)', async (t) => {
  const cases: [number, string][] = [
    [-2 * S, '<invalid>'],
    [-2 * S + 1, '0s'], // Go truncates -1.999 s to -1: inside the tolerated skew
    [0, '0s'], [S - 1, '0s'], [59 * S, '59s'], [90 * S, '90s'],
    [2 * M - 1, '119s'], [2 * M, '2m'], [2 * M + S, '2m1s'],
    [10 * M - 1, '9m59s'], [10 * M, '10m'], [10 * M + S, '10m'], [125 * M, '125m'],
    [3 * H - 1, '179m'], [3 * H, '3h'], [3 * H + M, '3h1m'],
    [8 * H - 1, '7h59m'], [8 * H, '8h'], [8 * H + 59 * M, '8h'],
    [2 * D - 1, '47h'], [2 * D, '2d'], [2 * D + H, '2d1h'],
    [8 * D - 1, '7d23h'], [8 * D, '8d'], [8 * D + 23 * H, '8d'],
    [2 * Y - 1, '729d'], [2 * Y, '2y'], [2 * Y + 23 * H, '2y'], [2 * Y + 23 * H + 59 * M, '2y'], [2 * Y + D - 1, '2y'], [2 * Y + D, '2y1d'],
    [3 * Y, '3y'], [4 * Y, '4y'], [5 * Y, '5y'], [6 * Y, '6y'], [7 * Y, '7y'],
    [8 * Y - 1, '7y364d'], [8 * Y, '8y'], [8 * Y + 364 * D, '8y'], [9 * Y, '9y'],
  ];
  for (const [ms, want] of cases) t.equal(humanDuration(ms), want, `${ms} ms`);
});

t.test('toTable: a meta.k8s.io/v1 Table with the column definitions, the rows and the objects asked for', async (t) => {
  const svc: KObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default', creationTimestamp: ago(5 * M), resourceVersion: '7' }, spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ port: 80, protocol: 'TCP' }] } };
  const tbl = toTable('services', [svc], { now: NOW, resourceVersion: '9', continue: 'abc', includeObject: 'None' });
  t.equal(tbl['kind'], 'Table');
  t.equal(tbl['apiVersion'], 'meta.k8s.io/v1');
  t.same(tbl['metadata'], { resourceVersion: '9', continue: 'abc' });
  const defs = tbl['columnDefinitions'] as { name: string; type: string; format: string; priority: number }[];
  t.match(defs[0], { name: 'Name', type: 'string', format: 'name', priority: 0 }, 'Name carries format "name"');
  t.match(defs[1], { name: 'Type', type: 'string', format: '', priority: 0 });
  t.equal(defs.length, 7);
  t.same(tbl['rows'], [{ cells: ['web', 'ClusterIP', '10.96.0.10', '<none>', '80/TCP', '5m', '<none>'] }], 'no object with includeObject=None');
  const meta = toTable('services', [svc], { now: NOW, resourceVersion: '9', includeObject: 'Metadata' });
  t.same((meta['rows'] as { object: unknown }[])[0]!.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: svc.metadata });
  const full = toTable('services', [svc], { now: NOW, resourceVersion: '9', includeObject: 'Object' });
  t.equal((full['rows'] as { object: unknown }[])[0]!.object, svc);
  t.same(toTable('services', [], { now: NOW, resourceVersion: '9', includeObject: 'None', noHeaders: true })['columnDefinitions'], []);
  const other = toTable('widgets.example.com', [{ metadata: { name: 'w', creationTimestamp: ago(3 * H) } }], { now: NOW, resourceVersion: '1', includeObject: 'None' });
  t.same((other['columnDefinitions'] as { name: string }[]).map((c) => c.name), ['Name', 'Age'], 'a kind without a printer gets NAME and AGE');
  t.same((other['rows'] as { cells: unknown[] }[])[0]!.cells, ['w', '3h']);
});

t.test('services: kubectl get svc and -o wide', async (t) => {
  t.same(header('services'), ['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORT(S)', 'AGE']);
  t.same(header('services', true), ['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORT(S)', 'AGE', 'SELECTOR']);
  const base = (spec: Record<string, unknown>, status: Record<string, unknown> = {}): KObject => ({ metadata: { name: 's', creationTimestamp: ago(2 * D + H) }, spec, status });
  t.same(
    row('services', base({ type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], selector: { tier: 'fe', app: 'web' }, ports: [{ port: 80, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }] })),
    ['s', 'ClusterIP', '10.96.0.10', '<none>', '80/TCP,53/UDP', '2d1h', 'app=web,tier=fe'],
    'selector sorted by key',
  );
  t.match(cells('services', base({ type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [] })), { 'CLUSTER-IP': 'None', 'PORT(S)': '<none>' }, 'headless, no ports');
  t.match(cells('services', base({ type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP' }] })), { 'CLUSTER-IP': '<none>' }, 'no clusterIP yet');
  t.match(cells('services', base({ type: 'ClusterIP', clusterIP: '10.96.0.11', ports: [{ port: 80, protocol: 'TCP' }] })), { 'CLUSTER-IP': '10.96.0.11' }, 'only the singular field (an object stored before clusterIPs was defaulted)');
  t.match(cells('services', base({ type: 'ClusterIP', clusterIPs: ['10.96.0.12'], externalIPs: ['192.0.2.1', '192.0.2.2'], ports: [{ port: 80, protocol: 'TCP' }] }, { loadBalancer: { ingress: [{ ip: '203.0.113.9' }] } })), { 'EXTERNAL-IP': '192.0.2.1,192.0.2.2' }, 'ClusterIP: externalIPs only, never the load balancer');
  t.match(cells('services', base({ type: 'NodePort', clusterIPs: ['10.96.0.13'], ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }, { port: 81, nodePort: 0, protocol: 'TCP' }] })), { 'EXTERNAL-IP': '<none>', 'PORT(S)': '80:30080/TCP,81/TCP' });
  t.match(cells('services', base({ type: 'LoadBalancer', clusterIPs: ['10.96.0.14'], ports: [{ port: 443, nodePort: 31443, protocol: 'TCP' }] })), { 'EXTERNAL-IP': '<pending>' });
  t.match(
    cells('services', base({ type: 'LoadBalancer', clusterIPs: ['10.96.0.14'], externalIPs: ['192.0.2.7'], ports: [] }, { loadBalancer: { ingress: [{ ip: '203.0.113.9' }, { hostname: 'lb.example.com' }, { ip: '203.0.113.9' }] } })),
    { 'EXTERNAL-IP': '203.0.113.9,lb.example.com,192.0.2.7' },
    'LoadBalancer: ingress IPs or hostnames (each once), then the externalIPs',
  );
  t.match(cells('services', base({ type: 'ExternalName', externalName: 'db.example.com' })), { 'TYPE': 'ExternalName', 'CLUSTER-IP': '<none>', 'EXTERNAL-IP': 'db.example.com' });
  t.match(cells('services', base({ type: 'Weird' })), { 'EXTERNAL-IP': '<unknown>' });
  t.match(cells('services', { metadata: { name: 'x' }, spec: { type: 'ClusterIP' } }), { AGE: '<unknown>' }, 'no creationTimestamp');
});

t.test('pods: kubectl get pods and -o wide, with the STATUS, READY and RESTARTS of each case', async (t) => {
  t.same(header('pods'), ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
  t.same(header('pods', true), ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
  t.equal(PRINTERS['pods']!.columns[3]!.type, 'string', 'RESTARTS is a string column ("3 (5m ago)")');
  const pod = (spec: Record<string, unknown>, status: Record<string, unknown>, meta: Record<string, unknown> = {}): KObject => ({
    metadata: { name: 'p', creationTimestamp: ago(10 * M), ...meta },
    spec: { containers: [{ name: 'a', image: 'nginx' }, { name: 'b', image: 'redis' }], ...spec },
    status,
  });
  const running = { state: { running: { startedAt: ago(9 * M) } }, ready: true, restartCount: 0 };
  t.same(
    row('pods', pod({ nodeName: 'node-1' }, { phase: 'Running', podIPs: [{ ip: '10.244.1.5' }], podIP: '10.244.1.5', containerStatuses: [{ name: 'a', ...running }, { name: 'b', ...running }] })),
    ['p', '2/2', 'Running', '0', '10m', '10.244.1.5', 'node-1', '<none>', '<none>'],
  );
  t.match(cells('pods', pod({}, { phase: 'Pending' })), { READY: '0/2', STATUS: 'Pending', RESTARTS: '0', IP: '<none>', NODE: '<none>' }, 'not scheduled yet');
  t.match(
    cells('pods', pod({}, {
      phase: 'Running',
      containerStatuses: [
        { name: 'a', ready: false, restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, finishedAt: ago(3 * M) } } },
        { name: 'b', ready: false, restartCount: 1, state: { waiting: { reason: 'ImagePullBackOff' } }, lastState: { terminated: { exitCode: 2, finishedAt: ago(8 * M) } } },
      ],
    })),
    { READY: '0/2', STATUS: 'CrashLoopBackOff', RESTARTS: '5 (3m ago)' },
    'the first container with a reason wins; restarts summed, with the latest restart',
  );
  t.match(cells('pods', pod({}, { phase: 'Running', containerStatuses: [{ name: 'a', ...running }, { name: 'b', ready: false, restartCount: 0, state: { terminated: { exitCode: 137, signal: 9 } } }] })), { READY: '1/2', STATUS: 'Signal:9' });
  t.match(cells('pods', pod({}, { phase: 'Running', containerStatuses: [{ name: 'a', ...running }, { name: 'b', ready: false, restartCount: 0, state: { terminated: { exitCode: 3 } } }] })), { STATUS: 'ExitCode:3' });
  t.match(
    cells('pods', pod({}, { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }], containerStatuses: [{ name: 'a', ...running }, { name: 'b', ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] })),
    { STATUS: 'NotReady' },
    'Completed with a container still running: NotReady without the Ready condition',
  );
  t.match(cells('pods', pod({}, { phase: 'Succeeded', containerStatuses: [{ name: 'a', ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] })), { STATUS: 'Completed' });
  t.match(cells('pods', pod({}, { phase: 'Running', containerStatuses: [{ name: 'a', ...running }] }, { deletionTimestamp: ago(S) })), { STATUS: 'Terminating' });
  t.match(cells('pods', pod({}, { phase: 'Succeeded' }, { deletionTimestamp: ago(S) })), { STATUS: 'Succeeded' }, 'a finished pod is not Terminating');
  t.match(cells('pods', pod({}, { phase: 'Running', reason: 'NodeLost' }, { deletionTimestamp: ago(S) })), { STATUS: 'Unknown' });
  t.match(cells('pods', pod({}, { phase: 'Failed', reason: 'Evicted' })), { STATUS: 'Evicted' }, 'status.reason over the phase');
  t.match(cells('pods', pod({}, { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] })), { STATUS: 'SchedulingGated' });

  const init = (statuses: unknown[], conditions: unknown[] = []) =>
    cells('pods', pod({ initContainers: [{ name: 'i1', image: 'busybox' }, { name: 'i2', image: 'busybox' }] }, { phase: 'Pending', conditions, initContainerStatuses: statuses, containerStatuses: [{ name: 'a', ready: false, state: { waiting: { reason: 'PodInitializing' } } }] }));
  t.match(init([{ name: 'i1', restartCount: 0, state: { running: {} } }, { name: 'i2', state: { waiting: {} } }]), { STATUS: 'Init:0/2', READY: '0/2' });
  t.match(init([{ name: 'i1', state: { terminated: { exitCode: 0 } } }, { name: 'i2', state: { running: {} } }]), { STATUS: 'Init:1/2' });
  t.match(init([{ name: 'i1', restartCount: 2, state: { terminated: { exitCode: 1 } } }]), { STATUS: 'Init:ExitCode:1', RESTARTS: '2' });
  t.match(init([{ name: 'i1', state: { terminated: { exitCode: 1, reason: 'Error' } } }]), { STATUS: 'Init:Error' });
  t.match(init([{ name: 'i1', state: { waiting: { reason: 'CrashLoopBackOff' } } }]), { STATUS: 'Init:CrashLoopBackOff' });
  const sidecar = cells('pods', pod(
    { containers: [{ name: 'a', image: 'nginx' }], initContainers: [{ name: 'proxy', image: 'envoy', restartPolicy: 'Always' }] },
    { phase: 'Running', initContainerStatuses: [{ name: 'proxy', started: true, ready: true, restartCount: 1, state: { running: {} } }], containerStatuses: [{ name: 'a', ...running }] },
  ));
  t.match(sidecar, { READY: '2/2', STATUS: 'Running', RESTARTS: '1' }, 'a restartable init container (sidecar) counts as a container');

  t.match(
    cells('pods', pod({ readinessGates: [{ conditionType: 'x/a' }, { conditionType: 'x/b' }] }, { phase: 'Running', podIP: '10.244.0.9', nominatedNodeName: 'node-2', conditions: [{ type: 'x/a', status: 'True' }, { type: 'x/b', status: 'False' }] })),
    { 'READINESS GATES': '1/2', 'NOMINATED NODE': 'node-2', IP: '10.244.0.9' },
    'podIP when podIPs is missing',
  );
});

t.test('deployments and replicasets: READY / UP-TO-DATE / AVAILABLE, DESIRED / CURRENT / READY, and wide', async (t) => {
  t.same(header('deployments.apps'), ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
  t.same(header('deployments.apps', true), ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
  const tpl = { spec: { containers: [{ name: 'web', image: 'nginx:1.25' }, { name: 'log', image: 'fluentbit' }] } };
  const selector = { matchLabels: { tier: 'fe', app: 'web' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'dev'] }, { key: 'canary', operator: 'DoesNotExist' }] };
  t.same(
    row('deployments.apps', { metadata: { name: 'web', creationTimestamp: ago(90 * S) }, spec: { replicas: 3, selector, template: tpl }, status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } }),
    ['web', '2/3', 3, 2, '90s', 'web,log', 'nginx:1.25,fluentbit', 'app=web,!canary,env in (dev,prod),tier=fe'],
    'selector requirements sorted by key, set values sorted',
  );
  t.same(row('deployments.apps', { metadata: { name: 'new' }, spec: { replicas: 1, template: tpl } }).slice(1, 4), ['0/1', 0, 0], 'no status yet');
  t.equal(row('deployments.apps', { metadata: { name: 'x' }, spec: { selector: {} } })[7], '', 'an empty selector prints as nothing (selector.String())');

  t.same(header('replicasets.apps'), ['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE']);
  t.same(header('replicasets.apps', true), ['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
  t.same(PRINTERS['replicasets.apps']!.columns.slice(1, 4).map((c) => c.type), ['integer', 'integer', 'integer']);
  t.same(
    row('replicasets.apps', { metadata: { name: 'web-5d4f', creationTimestamp: ago(3 * H + 5 * M) }, spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: tpl }, status: { replicas: 3, readyReplicas: 1 } }),
    ['web-5d4f', 3, 3, 1, '3h5m', 'web,log', 'nginx:1.25,fluentbit', 'app=web'],
  );
  t.equal(row('replicasets.apps', { metadata: { name: 'x' }, spec: { selector: {} } })[7], '<none>', 'FormatLabelSelector: <none>');
  t.equal(row('replicasets.apps', { metadata: { name: 'x' }, spec: { selector: { matchExpressions: [{ key: 'a', operator: 'Near' }] } } })[7], '<error>');
});

t.test('labelSelectorString: labels.Selector.String() of a LabelSelector', async (t) => {
  t.equal(labelSelectorString(undefined), '');
  t.equal(labelSelectorString({ matchLabels: { b: '2', a: '1' } }), 'a=1,b=2');
  t.equal(labelSelectorString({ matchExpressions: [{ key: 'k', operator: 'NotIn', values: ['z', 'y'] }, { key: 'e', operator: 'Exists' }] }), 'e,k notin (y,z)');
  t.equal(labelSelectorString({ matchExpressions: [{ key: 'k', operator: 'Gt', values: ['1'] }] }), null, 'not a LabelSelector operator');
});

t.test('nodes: STATUS, ROLES, VERSION and the wide columns', async (t) => {
  t.same(header('nodes'), ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']);
  t.same(header('nodes', true), ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME']);
  const node: KObject = {
    metadata: { name: 'n1', creationTimestamp: ago(400 * D), labels: { 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'worker', 'node-role.kubernetes.io/': '' } },
    spec: { unschedulable: true },
    status: {
      conditions: [{ type: 'MemoryPressure', status: 'False' }, { type: 'Ready', status: 'True' }],
      addresses: [{ type: 'Hostname', address: 'n1' }, { type: 'InternalIP', address: '192.168.1.10' }, { type: 'InternalIP', address: '192.168.1.11' }],
      nodeInfo: { kubeletVersion: 'v1.30.1', osImage: 'Debian GNU/Linux 12 (bookworm)', kernelVersion: '6.1.0-18-amd64', containerRuntimeVersion: 'containerd://1.7.13' },
    },
  };
  t.same(row('nodes', node), ['n1', 'Ready,SchedulingDisabled', 'control-plane,worker', '400d', 'v1.30.1', '192.168.1.10', '<none>', 'Debian GNU/Linux 12 (bookworm)', '6.1.0-18-amd64', 'containerd://1.7.13'], 'the first InternalIP only');
  t.same(row('nodes', { metadata: { name: 'n2' }, status: { conditions: [{ type: 'Ready', status: 'Unknown' }] } }).slice(1, 3), ['NotReady', '<none>']);
  t.same(row('nodes', { metadata: { name: 'n3' } }).slice(1, 10), ['Unknown', '<none>', '<unknown>', '', '<none>', '<none>', '<unknown>', '<unknown>', '<unknown>']);
});

t.test('namespaces, leases', async (t) => {
  t.same(header('namespaces'), ['NAME', 'STATUS', 'AGE']);
  t.same(row('namespaces', { metadata: { name: 'default', creationTimestamp: ago(2 * Y + D) }, status: { phase: 'Active' } }), ['default', 'Active', '2y1d']);
  t.same(row('namespaces', { metadata: { name: 'gone', creationTimestamp: ago(M) }, status: { phase: 'Terminating' } }), ['gone', 'Terminating', '60s']);
  t.same(header('leases.coordination.k8s.io'), ['NAME', 'HOLDER', 'AGE']);
  t.same(row('leases.coordination.k8s.io', { metadata: { name: 'n1', creationTimestamp: ago(S) }, spec: { holderIdentity: 'n1' } }), ['n1', 'n1', '1s']);
  t.same(row('leases.coordination.k8s.io', { metadata: { name: 'free', creationTimestamp: ago(S) }, spec: {} }), ['free', '', '1s']);
});

t.test('ipaddresses: NAME, PARENTREF (resource[.group][/namespace]/name), AGE', async (t) => {
  t.same(header('ipaddresses.networking.k8s.io'), ['NAME', 'PARENTREF', 'AGE']);
  t.same(row('ipaddresses.networking.k8s.io', { metadata: { name: '10.96.0.10', creationTimestamp: ago(M) }, spec: { parentRef: { group: '', resource: 'services', namespace: 'kube-system', name: 'kube-dns' } } }), ['10.96.0.10', 'services/kube-system/kube-dns', '60s']);
  t.same(row('ipaddresses.networking.k8s.io', { metadata: { name: '10.96.0.11', creationTimestamp: ago(M) }, spec: { parentRef: { group: 'gateway.networking.k8s.io', resource: 'Gateways', name: 'gw' } } }), ['10.96.0.11', 'gateways.gateway.networking.k8s.io/gw', '60s']);
  t.same(row('ipaddresses.networking.k8s.io', { metadata: { name: '10.96.0.12', creationTimestamp: ago(M) }, spec: {} }), ['10.96.0.12', '<none>', '60s']);
});

t.test('events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; wide adds SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME', async (t) => {
  t.same(header('events'), ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  t.same(header('events', true), ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'SUBOBJECT', 'SOURCE', 'MESSAGE', 'FIRST SEEN', 'COUNT', 'NAME']);
  t.same(PRINTERS['events']!.columns.map((c) => c.type), Array(10).fill('string'), 'every column is a string column, COUNT included');
  t.same(
    row('events', {
      metadata: { name: 'web.17a', creationTimestamp: ago(H) }, type: 'Warning', reason: 'BackOff', message: '  Back-off restarting failed container\n',
      involvedObject: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{web}' }, source: { component: 'kubelet', host: 'node-1' },
      firstTimestamp: ago(H), lastTimestamp: ago(2 * M), count: 12,
    }),
    ['2m', 'Warning', 'BackOff', 'pod/web', 'spec.containers{web}', 'kubelet, node-1', 'Back-off restarting failed container', '60m', 12, 'web.17a'],
  );
  t.same(
    row('events', {
      metadata: { name: 'n.1', creationTimestamp: ago(H) }, type: 'Normal', reason: 'Starting', message: 'm', involvedObject: { kind: 'Node' },
      eventTime: ago(5 * M), reportingComponent: 'kube-proxy', reportingInstance: 'kube-proxy-n1',
    }),
    ['5m', 'Normal', 'Starting', 'node', '', 'kube-proxy, kube-proxy-n1', 'm', '5m', 1, 'n.1'],
    'a new-style event: eventTime for both times, count 1, the reporting fields as the source, the kind alone without a name',
  );
  t.match(
    cells('events', { metadata: { name: 's' }, eventTime: ago(10 * M), series: { count: 4, lastObservedTime: ago(30 * S) }, source: { host: 'h' }, involvedObject: { kind: 'Pod', name: 'p' } }),
    { 'LAST SEEN': '30s', 'FIRST SEEN': '10m', COUNT: 4, SOURCE: ', h' },
    'a series: its last observation and count',
  );
  t.match(cells('events', { metadata: { name: 'x', creationTimestamp: ago(M) }, involvedObject: { kind: 'Pod', name: 'p' } }), { 'LAST SEEN': '<unknown>', 'FIRST SEEN': '<unknown>' }, 'the creationTimestamp is not an event time');
});

t.test('endpointslices: ADDRESSTYPE, PORTS, ENDPOINTS with at most three of each', async (t) => {
  t.same(header('endpointslices.discovery.k8s.io'), ['NAME', 'ADDRESSTYPE', 'PORTS', 'ENDPOINTS', 'AGE']);
  t.same(
    row('endpointslices.discovery.k8s.io', {
      metadata: { name: 'web-abc', creationTimestamp: ago(7 * D) }, addressType: 'IPv4',
      ports: [{ name: 'http', port: 80 }, { name: 'https', port: 443 }, { name: 'metrics' }, { port: 9090 }],
      endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2', '10.0.0.3'] }, { addresses: ['10.0.0.4'] }, { addresses: ['10.0.0.5'] }],
    }),
    ['web-abc', 'IPv4', '80,443,metrics + 1 more...', '10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...', '7d'],
    'a port without a number prints its name',
  );
  t.same(row('endpointslices.discovery.k8s.io', { metadata: { name: 'e' }, addressType: 'IPv4', ports: [{}], endpoints: [] }).slice(2, 4), ['*', '<unset>'], 'no number and no name: every port');
  t.same(row('endpointslices.discovery.k8s.io', { metadata: { name: 'e' }, addressType: 'FQDN' }).slice(2, 4), ['<unset>', '<unset>']);
});

t.test('endpoints: ENDPOINTS as formatEndpoints prints them (ready IP:PORT per port, three, then "+ N more...")', async (t) => {
  t.same(header('endpoints'), ['NAME', 'ENDPOINTS', 'AGE']);
  const ep = (subsets?: unknown[]): KObject => ({ metadata: { name: 'web', creationTimestamp: ago(5 * M) }, ...(subsets ? { subsets } : {}) });
  t.same(row('endpoints', ep()), ['web', '<none>', '5m'], 'no subsets');
  t.same(row('endpoints', ep([{ addresses: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }], ports: [{ port: 80 }] }])), ['web', '10.0.0.1:80,10.0.0.2:80', '5m']);
  t.same(
    row('endpoints', ep([
      { addresses: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }], notReadyAddresses: [{ ip: '10.0.0.9' }], ports: [{ name: 'http', port: 80 }, { name: 'https', port: 443 }] },
      { addresses: [{ ip: '10.0.0.3' }], ports: [{ name: 'http', port: 8080 }] },
    ])),
    ['web', '10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more...', '5m'],
    'every port of every ready address counts (upstream\'s order: subset, port, address); not-ready ones are not shown',
  );
  t.same(row('endpoints', ep([{ addresses: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }] }]))[1], '10.0.0.1,10.0.0.2', 'a headless Service without ports: the IPs');
  t.same(row('endpoints', ep([{ addresses: [{ ip: '2001:db8::1' }], ports: [{ port: 53 }] }]))[1], '[2001:db8::1]:53', 'IPv6 as net.JoinHostPort writes it');
  t.same(row('endpoints', ep([{ notReadyAddresses: [{ ip: '10.0.0.1' }], ports: [{ port: 80 }] }]))[1], '', 'only not-ready addresses: an empty cell, as upstream');
});

t.test('configmaps: NAME, DATA (data and binaryData keys), AGE; secrets: NAME, TYPE, DATA, AGE', async (t) => {
  t.same(header('configmaps'), ['NAME', 'DATA', 'AGE']);
  t.same(row('configmaps', { metadata: { name: 'cfg', creationTimestamp: ago(5 * M) }, data: { a: '1', b: '2' }, binaryData: { c: 'AA==' } }), ['cfg', 3, '5m']);
  t.same(row('configmaps', { metadata: { name: 'empty', creationTimestamp: ago(S) } }), ['empty', 0, '1s']);
  t.same(header('secrets'), ['NAME', 'TYPE', 'DATA', 'AGE']);
  t.same(row('secrets', { metadata: { name: 'tls', creationTimestamp: ago(3 * H) }, type: 'kubernetes.io/tls', data: { 'tls.crt': 'Yw==', 'tls.key': 'aw==' } }), ['tls', 'kubernetes.io/tls', 2, '3h']);
  t.same(row('secrets', { metadata: { name: 'none', creationTimestamp: ago(S) }, type: 'Opaque' }), ['none', 'Opaque', 0, '1s']);
  t.same([...PRINTERS['configmaps']!.columns, ...PRINTERS['secrets']!.columns].map((c) => c.type), Array(7).fill('string'), 'DATA is a string column upstream, its cell a number');
});
