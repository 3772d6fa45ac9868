/**
 * `nodenet lab`'s pure decisions: names, the ownership rule (running,
 * crashed, absent, and what `up` does about each), exec targets, and the
 * status rows read from kubectl's JSON.
 */
import t from 'tap';
import { addNodeName, allReady, execTarget, labCondition, labNameProblem, labNamespaces, labNodeNames, nodeRows, podRows, upAction } from './up-plan.js';
import type { LabOwner } from './owner.js';

const owner = (pid: number): LabOwner => ({ pid, startTime: '100', tag: 'default', namespacePrefix: 'nn-default-', createdAt: '2026-12-01T00:00:00Z' });

t.test('lab names fit namespace and 15-character interface names', async (t) => {
  for (const ok of ['default', 'a', 'lab2', 'abcdefghij']) t.equal(labNameProblem(ok), null, ok);
  for (const bad of ['', 'Default', '2lab', 'a-b', 'abcdefghijk', 'a_b', 'x y']) t.match(labNameProblem(bad), /a lowercase letter/, JSON.stringify(bad));
  t.ok(`u${'abcdefghij'}${20}`.length <= 15, 'the longest name and node index still make an interface name');
  t.same(labNodeNames(3), ['n1', 'n2', 'n3']);
  t.throws(() => labNodeNames(0), RangeError);
  t.throws(() => labNodeNames(21), RangeError);
});

t.test('ownership: the control plane owns a lab made by up; its death makes the lab crashed', async (t) => {
  const alive = (o: LabOwner) => o.pid === 42;
  t.same(labCondition(false, null, alive), { state: 'absent' });
  t.same(labCondition(true, owner(42), alive), { state: 'running', owner: owner(42) });
  t.same(labCondition(true, owner(43), alive), { state: 'crashed', why: 'its owner (pid 43) is gone' });
  t.same(labCondition(true, null, alive), { state: 'crashed', why: 'it has no owner record' });
  t.equal(upAction({ state: 'absent' }), 'create');
  t.equal(upAction({ state: 'crashed', why: 'x' }), 'clean-then-create');
  t.equal(upAction({ state: 'running', owner: owner(42) }), 'refuse');
});

t.test('a lab\'s namespaces are exactly nn-<name>-*: never another lab\'s whose name starts the same', async (t) => {
  t.same(labNamespaces(['nn-lab-ul', 'nn-lab-n1', 'nn-lab2-ul', 'nn-lab2-n1', 'nn-other-ul', 'lab-n1'], 'lab'), ['nn-lab-ul', 'nn-lab-n1']);
});

t.test('exec targets: a node, NAMESPACE/NAME, or NAME in default', async (t) => {
  t.same(execTarget('n1', ['n1', 'n2']), { kind: 'node', node: 'n1' });
  t.same(execTarget('kube-system/dns', ['n1']), { kind: 'pod', namespace: 'kube-system', name: 'dns' });
  t.same(execTarget('web-1', ['n1']), { kind: 'pod', namespace: 'default', name: 'web-1' });
  t.throws(() => execTarget('a/b/c', ['n1']), RangeError);
  t.throws(() => execTarget('/b', ['n1']), RangeError);
});

t.test('status rows from kubectl JSON; Ready only when every Node is', async (t) => {
  const nodes = {
    items: [
      { metadata: { name: 'n1' }, spec: { podCIDR: '10.244.0.0/24' }, status: { addresses: [{ type: 'Hostname', address: 'n1' }, { type: 'InternalIP', address: '192.168.77.11' }], conditions: [{ type: 'Ready', status: 'True' }] } },
      { metadata: { name: 'n2' }, spec: {}, status: { conditions: [{ type: 'Ready', status: 'Unknown' }] } },
    ],
  };
  const rows = nodeRows(nodes);
  t.same(rows, [
    { name: 'n1', internalIP: '192.168.77.11', podCIDR: '10.244.0.0/24', ready: 'Ready' },
    { name: 'n2', internalIP: '-', podCIDR: '-', ready: 'NotReady' },
  ]);
  t.equal(allReady(rows, 2), false);
  t.equal(allReady([rows[0]!], 1), true);
  t.equal(allReady([rows[0]!], 2), false, 'a Node not registered yet');
  t.same(nodeRows({}), []);
  t.same(
    podRows({ items: [
      { metadata: { namespace: 'default', name: 'web' }, spec: { nodeName: 'n1' }, status: { phase: 'Running', podIP: '10.244.0.2' } },
      { metadata: { namespace: 'default', name: 'new' }, spec: {}, status: {} },
      { metadata: { namespace: 'x', name: 'old', deletionTimestamp: '2026-12-01T00:00:00Z' }, spec: { nodeName: 'n2' }, status: { phase: 'Running' } },
    ] }),
    [
      { pod: 'default/web', node: 'n1', ip: '10.244.0.2', phase: 'Running' },
      { pod: 'default/new', node: '-', ip: '-', phase: 'Pending' },
      { pod: 'x/old', node: 'n2', ip: '-', phase: 'Terminating' },
    ],
  );
});

t.test('add-node: the first free n<i>, or the one asked for, within n1..n20', async (t) => {
  t.same(addNodeName(['n1', 'n2']), { name: 'n3', index: 3 });
  t.same(addNodeName(['n1', 'n3']), { name: 'n2', index: 2 }, 'a gap is filled first');
  t.same(addNodeName(['n1', 'n2'], 'n7'), { name: 'n7', index: 7 }, 'the index is the name\'s: n7 is 192.168.77.17');
  t.same(addNodeName(['n1', 'n2'], 'n20'), { name: 'n20', index: 20 });
  t.same(addNodeName(['n1', 'n2'], 'n2'), { problem: 'the lab has a node n2 already (n1, n2)' });
  for (const bad of ['n0', 'n21', 'n01', 'node3', 'N3', '']) t.match(addNodeName(['n1'], bad), { problem: /a lab's nodes are n1\.\.n20/ }, JSON.stringify(bad));
  t.same(addNodeName(labNodeNames(20)), { problem: 'the lab has 20 nodes, the most a lab has' });
});
