/**
 * DefaultPreemption's choice against upstream's cases (defaultpreemption/default_preemption_test.go TestSelectCandidate,
 * TestPickOneNodeForPreemption, and framework/preemption's reprieve): the fewest and least important victims, Nodes
 * whose problem no victim cures skipped, preemptionPolicy Never honoured.
 */
import t from 'tap';
import type { KObject } from '../store/types.js';
import { nodeInfos, schedule } from './framework.js';
import { findPreemption } from './preemption.js';
import { DEFAULT_PLUGINS } from './plugins.js';

type O = Record<string, unknown>;
const node = (name: string, extra: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } }, spec: { ...extra }, status: { allocatable: { cpu: '4', memory: '8Gi', pods: '110' }, conditions: [{ type: 'Ready', status: 'True' }] } });
const pod = (name: string, cpu: string, priority: number, nodeName = '', spec: O = {}): KObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { priority, containers: [{ name: 'c', image: 'i', resources: { requests: { cpu } } }], ...(nodeName ? { nodeName } : {}), ...spec } });

function preempt(p: KObject, nodes: KObject[], pods: KObject[]) {
  const infos = nodeInfos(nodes, pods);
  const d = schedule(p, infos, DEFAULT_PLUGINS);
  if (d.node !== null) return { fits: d.node };
  const pre = findPreemption(p, infos, DEFAULT_PLUGINS, d.unfit);
  return pre ? { node: pre.node, victims: pre.victims.map((v) => String(v.metadata!['name'])).sort() } : null;
}

t.test('the reprieve keeps every victim the Pod can live with ("a pod that fits on one node when lower priority pods are preempted")', async (t) => {
  const pods = [pod('a1', '1', 1, 'n1'), pod('a2', '1', 2, 'n1'), pod('a3', '2', 3, 'n1')];
  t.same(preempt(pod('vip', '2', 100), [node('n1')], pods), { node: 'n1', victims: ['a1', 'a2'] }, 'the two least important go; a3 (priority 3) is reprieved first and kept');
  t.same(preempt(pod('vip', '3', 100), [node('n1')], pods), { node: 'n1', victims: ['a1', 'a3'] }, 'a2 reprieved after a3 could not be');
});

t.test('pickOneNodeForPreemption: the lowest highest-priority victim, then the lowest sum, then the fewest victims', async (t) => {
  const pods = [pod('x', '4', 50, 'n1'), pod('y1', '2', 10, 'n2'), pod('y2', '2', 10, 'n2'), pod('z', '4', 20, 'n3')];
  t.same(preempt(pod('vip', '4', 100), [node('n1'), node('n2'), node('n3')], pods), { node: 'n2', victims: ['y1', 'y2'] }, 'n2: its most important victim is 10, against 20 and 50');
  const same = [pod('m1', '2', 10, 'n1'), pod('m2', '2', 10, 'n1'), pod('s', '4', 10, 'n2')];
  t.same(preempt(pod('vip', '4', 100), [node('n1'), node('n2')], same), { node: 'n2', victims: ['s'] }, 'equal top priority: the lower sum (10 against 20)');
});

t.test('no victims: equal or higher priorities, a Node its problem is not about resources, preemptionPolicy Never', async (t) => {
  t.equal(preempt(pod('vip', '4', 10), [node('n1')], [pod('peer', '4', 10, 'n1')]), null, 'equal priority is no victim');
  t.equal(preempt(pod('vip', '4', 100), [node('n1', { unschedulable: true })], [pod('low', '4', 1, 'n1')]), null, 'an unschedulable Node cannot be cured by preemption');
  t.equal(preempt(pod('vip', '4', 100, '', { preemptionPolicy: 'Never' }), [node('n1')], [pod('low', '4', 1, 'n1')]), null, 'preemptionPolicy Never');
  t.same(preempt(pod('vip', '1', 100), [node('n1')], [pod('low', '1', 1, 'n1')]), { fits: 'n1' }, 'a Pod that fits preempts nothing');
});
