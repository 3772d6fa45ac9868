/**
 * A Node's capacity and allocatable as the kubelet computes them: the machine's, replaced by --capacity, less
 * --kube-reserved, --system-reserved and the default hard eviction thresholds; and the flags' bad input refused.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineCapacity, nodeResources, parseResourceMap } from './capacity.js';

t.test('allocatable: capacity less the reservations and the eviction thresholds (memory 100Mi, nodefs 10%)', async (t) => {
  const machine = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' };
  t.same(nodeResources(machine), {
    capacity: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' },
    allocatable: { cpu: '4', memory: '8092Mi', 'ephemeral-storage': '90Gi', pods: '110' },
  });
  const r = nodeResources(machine, { capacity: { cpu: '2', memory: '4Gi', pods: '30' }, kubeReserved: { cpu: '100m', memory: '256Mi' }, systemReserved: { cpu: '100m' } });
  t.same(r.capacity, { cpu: '2', memory: '4Gi', 'ephemeral-storage': '100Gi', pods: '30' }, '--capacity replaces the machine\'s');
  t.same(r.allocatable, { cpu: '1800m', memory: '3740Mi', 'ephemeral-storage': '90Gi', pods: '30' });
  t.equal(nodeResources(machine, { kubeReserved: { cpu: '8' } }).allocatable['cpu'], '0', 'never below 0');
});

t.test('the machine: CPUs, memory, the root filesystem, 110 pods', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const m = machineCapacity(dir);
  t.match(m, { cpu: /^\d+$/, memory: /^\d+Ki$/, 'ephemeral-storage': /^\d+Ki$/, pods: '110' });
  t.ok(Number(m['cpu']) >= 1);
});

t.test('--capacity, --kube-reserved, --system-reserved: bad input refused, naming the flag', async (t) => {
  t.same(parseResourceMap('--capacity', 'cpu=2, memory=4Gi,pods=30'), { cpu: '2', memory: '4Gi', pods: '30' });
  t.throws(() => parseResourceMap('--capacity', 'gpus=1'), /--capacity: "gpus" is not a resource nodenet reports/);
  t.throws(() => parseResourceMap('--kube-reserved', 'cpu=lots'), /--kube-reserved: cpu="lots" is not a non-negative quantity/);
  t.throws(() => parseResourceMap('--system-reserved', 'memory=-1Gi'), /not a non-negative quantity/);
  t.throws(() => parseResourceMap('--capacity', 'cpu=1,cpu=2'), /cpu given twice/);
  t.same(parseResourceMap('--capacity', 'example.com/dongle=2'), { 'example.com/dongle': '2' }, 'an extended resource');
});
