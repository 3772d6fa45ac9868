/**
 * The scheduler's incremental cache against the reference it replaces: after any sequence of Node and Pod events,
 * its snapshot holds what nodeInfos() computes from scratch over the same objects; assumed Pods count until the
 * watch confirms or removes them; feasibleNodesToFind follows upstream's numFeasibleNodesToFind.
 */
import t from 'tap';
import type { KObject } from '../store/types.js';
import { SchedulerCache } from './cache.js';
import { feasibleNodesToFind, nodeInfos, schedule, type NodeInfo } from './framework.js';
import { DEFAULT_PLUGINS } from './plugins.js';

type O = Record<string, unknown>;
const node = (name: string, cpu = '4'): KObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } }, spec: {}, status: { allocatable: { cpu, memory: '8Gi', pods: '110' }, conditions: [{ type: 'Ready', status: 'True' }] } });
const pod = (name: string, nodeName: string, cpu: string, extra: O = {}): KObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'i', resources: { requests: { cpu } } }], ...(nodeName ? { nodeName } : {}), ...(extra['spec'] as O ?? {}) },
  status: { phase: (extra['phase'] as string) ?? 'Pending' },
});

/** The parts of NodeInfos a cycle reads, comparable. */
const view = (infos: readonly NodeInfo[]) => infos.map((i) => ({
  name: i.name, pods: i.pods.map((p) => (p.metadata as O)['name']).sort(), requested: [...i.requested].map(([k, v]) => [k, v.nanos.toString()]).sort(),
  nonZero: [i.nonZeroRequested.cpuMilli.toString(), i.nonZeroRequested.memory.toString()], ports: i.usedPorts.length,
  affinity: i.podsWithAffinity.length, anti: i.podsWithRequiredAntiAffinity.length,
}));

t.test('the snapshot equals nodeInfos() from scratch after random events (seeded)', async (t) => {
  let seed = 42;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  const cache = new SchedulerCache();
  const nodes = new Map<string, KObject>();
  const pods = new Map<string, KObject>();
  const anti = { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { a: 'b' } } }] } } };
  let held: readonly NodeInfo[] = [];
  let heldView: unknown = null;
  for (let step = 0; step < 2000; step++) {
    const op = rnd(10);
    const nn = `n${rnd(8)}`;
    const pk = `pods/default/p${rnd(40)}`;
    if (op === 0) {
      const n = node(nn, `${1 + rnd(8)}`);
      nodes.set(nn, n);
      cache.setNode(n);
    } else if (op === 1) {
      nodes.delete(nn);
      cache.removeNode(nn);
    } else if (op < 7) {
      const bound = rnd(4) ? nn : '';
      const p = pod(pk.split('/')[2]!, bound, `${100 * (1 + rnd(5))}m`, { phase: rnd(6) ? 'Running' : 'Succeeded', ...(rnd(3) ? {} : { spec: anti }) });
      pods.set(pk, p);
      cache.setPod(pk, p);
    } else {
      pods.delete(pk);
      cache.removePod(pk);
    }
    if (step % 50 === 0) {
      // A snapshot taken earlier stays as it was (copy on write).
      if (heldView) t.same(view(held), heldView, `an earlier snapshot unchanged at step ${step}`);
      held = cache.snapshot();
      heldView = view(held);
    }
    const want = nodeInfos([...nodes.values()].sort((a, b) => ((a.metadata as O)['name'] as string).localeCompare((b.metadata as O)['name'] as string)), [...pods.values()]);
    if (step % 10 === 0) t.same(view(cache.snapshot()), view(want), `step ${step}`);
  }
});

t.test('a bound Pod counts on a Node that comes later', async (t) => {
  const cache = new SchedulerCache();
  cache.setPod('pods/default/a', pod('a', 'late', '1'));
  t.same(cache.snapshot(), [], 'no Nodes yet');
  cache.setNode(node('late'));
  t.equal(cache.node('late')?.pods.length, 1);
  t.equal(cache.node('late')?.requested.get('cpu')?.nanos, 1_000_000_000n);
});

t.test('assume: counted at once; an older unbound event keeps it; the bound event or a deletion ends it', async (t) => {
  const cache = new SchedulerCache();
  cache.setNode(node('n1', '1'));
  const p = pod('a', '', '600m');
  cache.setPod('pods/default/a', p);
  t.equal(cache.node('n1')?.pods.length, 0, 'unbound: not on the Node');
  cache.assume('pods/default/a', p, 'n1');
  t.equal(cache.node('n1')?.pods.length, 1, 'assumed: on the Node');
  // A second Pod no longer fits the 1-cpu Node the first took 600m of.
  const d = schedule(pod('b', '', '600m'), cache.snapshot(), DEFAULT_PLUGINS);
  t.equal(d.node, null, 'the room is not given twice');
  cache.setPod('pods/default/a', { ...p, status: { phase: 'Pending', conditions: [] } });
  t.equal(cache.node('n1')?.pods.length, 1, 'a late event showing it unbound keeps the assumption');
  cache.setPod('pods/default/a', pod('a', 'n1', '600m'));
  t.equal(cache.node('n1')?.pods.length, 1, 'confirmed');
  cache.setPod('pods/default/a', pod('a', '', '600m'));
  t.equal(cache.node('n1')?.pods.length, 0, 'after confirmation the watch is believed');
  cache.assume('pods/default/a', p, 'n1');
  cache.removePod('pods/default/a');
  t.equal(cache.node('n1')?.pods.length, 0, 'deleted: gone');
  t.equal(cache.podCount, 0);
});

t.test('feasibleNodesToFind (schedule_one.go numFeasibleNodesToFind, adaptive percentage)', async (t) => {
  t.equal(feasibleNodesToFind(50), 50, 'under 100: all');
  t.equal(feasibleNodesToFind(100), 100);
  t.equal(feasibleNodesToFind(1000), 420, '50 - 1000/125 = 42%');
  t.equal(feasibleNodesToFind(5000), 500, '50 - 40 = 10%');
  t.equal(feasibleNodesToFind(6000), 300, 'at least 5%');
  t.equal(feasibleNodesToFind(150), 100, 'at least 100 nodes');
  t.equal(feasibleNodesToFind(1000, 100), 1000, 'percentage 100: all');
  t.equal(feasibleNodesToFind(1000, 30), 300, 'a configured percentage');
});

t.test('a cycle over 1,000 Nodes filters 420 from where the last stopped, and the next starts there', async (t) => {
  const nodes = Array.from({ length: 1000 }, (_, i) => node(`n${String(i).padStart(4, '0')}`));
  const infos = nodeInfos(nodes, []);
  const d1 = schedule(pod('x', '', '100m'), infos, DEFAULT_PLUGINS, { start: 0 });
  t.equal(d1.evaluated, 420);
  t.ok(d1.node !== null && d1.node < 'n0420', `chosen among the first 420 (${d1.node})`);
  const d2 = schedule(pod('x', '', '100m'), infos, DEFAULT_PLUGINS, { start: d1.evaluated });
  t.ok(d2.node !== null && d2.node >= 'n0420' && d2.node < 'n0840', `the next among the following 420 (${d2.node})`);
  // A Pod that fits nowhere is tried on every Node, whatever the start.
  const big = schedule(pod('y', '', '64'), infos, DEFAULT_PLUGINS, { start: 700 });
  t.equal(big.node, null);
  t.equal(big.evaluated, 1000);
  if (big.node === null) t.same([...big.plugins], ['NodeResourcesFit']);
});

t.test('assume after the watch already brought the bound Pod keeps the watch\'s object', async (t) => {
  const cache = new SchedulerCache();
  cache.setNode(node('n1'));
  const unbound = pod('a', '', '100m');
  const boundObj = { ...pod('a', 'n1', '100m'), metadata: { name: 'a', namespace: 'default', resourceVersion: '7' } };
  cache.setPod('pods/default/a', unbound);
  cache.setPod('pods/default/a', boundObj); // the watch event, delivered during the binding call
  cache.assume('pods/default/a', unbound, 'n1');
  t.equal(cache.node('n1')?.pods[0], boundObj, 'not replaced by the older copy');
  cache.setPod('pods/default/a', pod('a', '', '100m'));
  t.equal(cache.node('n1')?.pods.length, 0, 'not assumed: a later event is believed');
});

t.test('forget: a refused binding undoes the assumption, and the Pod counts as the watch shows it', async (t) => {
  const cache = new SchedulerCache();
  cache.setNode(node('n1'));
  cache.setNode(node('n2'));
  const p = pod('a', '', '1');
  cache.setPod('pods/default/a', p);
  cache.assume('pods/default/a', p, 'n1');
  t.ok(cache.isAssumed('pods/default/a'));
  cache.forget('pods/default/a', p);
  t.notOk(cache.isAssumed('pods/default/a'));
  t.equal(cache.node('n1')?.pods.length, 0, 'off the Node it was assumed on');
  // Bound by someone else meanwhile: the watch's object counts.
  cache.assume('pods/default/a', p, 'n1');
  cache.forget('pods/default/a', pod('a', 'n2', '1'));
  t.same([cache.node('n1')?.pods.length, cache.node('n2')?.pods.length], [0, 1]);
  // Not assumed: forget changes nothing.
  cache.forget('pods/default/a', null);
  t.equal(cache.node('n2')?.pods.length, 1);
});
