/**
 * `nodenet proxy cleanup` reaches IPVS mode's leftovers (root): the built
 * CLI, as a user runs it, against a lab namespace holding what an agent in
 * IPVS mode leaves behind. The leftovers are the real IpvsBackend's output
 * for a snapshot (testing/ipvs-node.ts: its ipsets and its iptables rules,
 * with the jumps from the built-in chains), loaded into the namespace with
 * `ipset restore` and `iptables-restore`. This kernel has neither IPVS nor
 * the dummy device, so the virtual servers and kube-ipvs0 cannot be made
 * here (the test-vm/ VMs have both); the sets and chains are what stays
 * when the kernel side is gone.
 */
import t from 'tap';
import { REPO, uniqueTag, Lab } from '../lab/lab.js';
import { CFG, ep, snapshot, svc } from '../proxy/test-fixtures.js';
import { ipvsNodeState } from '../testing/ipvs-node.js';
import { runner } from '../testing/lab.js';

const SNAP = snapshot(
  [svc('ns1', 'web', '172.30.0.41', { nodePort: 3001 }), [ep('10.180.0.1'), ep('10.180.0.2')]],
  [svc('ns1', 'sticky', '172.30.0.42', { affinity: 10800 }), [ep('10.180.0.4')]],
);

t.test('proxy cleanup --netns removes IPVS mode\'s ipsets, chains and jumps; a second run has nothing to remove', async (t) => {
  const lab = await Lab.create(uniqueTag('pci'), { runner });
  t.teardown(() => lab.destroy());
  const ns = await lab.addNetns('n1');
  const inNs = (argv: readonly string[], input?: string) => runner.run(argv, { netns: ns.path, ...(input === undefined ? {} : { input }) });
  const state = await ipvsNodeState(SNAP, CFG);
  await inNs(['ipset', 'restore'], state.ipsetSave);
  await inNs(['iptables-restore', '--noflush'], state.iptablesSave);
  const rules = async () => (await inNs(['iptables-save'])).stdout;
  const sets = async () => (await inNs(['ipset', 'list', '-n'])).stdout.split('\n').filter(Boolean).sort();
  t.match(await rules(), /-A INPUT .*-j KUBE-IPVS-FILTER/, 'the leftovers are in place: the filter jump');
  t.match(await rules(), /:KUBE-NODE-PORT /);
  t.ok((await sets()).includes('KUBE-CLUSTER-IP'), 'and the sets');
  t.ok((await sets()).length > 5);

  const cleanup = () => runner.run([process.execPath, `${REPO}bin/nodenet.js`, 'proxy', 'cleanup', '--netns', ns.name], { allowFailure: true });
  const first = await cleanup();
  t.equal(first.exitCode, 0, first.stderr);
  t.equal(first.stdout, [
    `iptables: nothing to remove (${ns.name}, prefix KUBE)`,
    `nftables: nothing to remove (${ns.name}, prefix KUBE)`,
    `ipvs: rules removed (${ns.name}, prefix KUBE)`,
    '',
  ].join('\n'), 'IPVS mode\'s leftovers are IPVS mode\'s, not iptables mode\'s');
  t.notMatch(await rules(), /KUBE-/, 'no chain, no jump left');
  t.same(await sets(), [], 'no set left');

  const second = await cleanup();
  t.equal(second.exitCode, 0, second.stderr);
  t.match(second.stdout, new RegExp(`^ipvs: nothing to remove \\(${ns.name}, prefix KUBE\\)$`, 'm'), 'idempotent');
});
