import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planLeftovers, type LabDirState } from './leftovers.js';
import { ownerAlive, readOwner, writeOwner, type LabOwner } from './owner.js';

const owner = (pid: number, tag: string): LabOwner => ({ pid, startTime: '100', tag, namespacePrefix: `nn-${tag}-`, createdAt: '2026-12-01T00:00:00Z' });
const lab = (tag: string, o: LabOwner | null): LabDirState => ({ dir: `/run/nodenet/lab/${tag}`, tag, owner: o });

t.test('a dead lab goes with its namespaces; a live one (a concurrent run, a demo --keep) stays', async (t) => {
  const plan = planLeftovers({
    namespaces: ['nn-dead1-ul', 'nn-dead1-node1', 'nn-live1-ul', 'nn-live1-node1', 'nn-live1-pod-a'],
    labs: [lab('dead1', owner(111, 'dead1')), lab('live1', owner(222, 'live1'))],
    ownerAlive: (o) => o.pid === 222,
    pidAlive: () => false,
  });
  t.same(plan.labDirs, ['/run/nodenet/lab/dead1']);
  t.same(plan.namespaces, ['nn-dead1-ul', 'nn-dead1-node1']);
});

t.test('a lab without an owner record is a crashed run\'s (or an older version\'s)', async (t) => {
  const plan = planLeftovers({ namespaces: ['nn-old-ul'], labs: [lab('old', null)], ownerAlive: () => true, pidAlive: () => true });
  t.same(plan.labDirs, ['/run/nodenet/lab/old']);
  t.same(plan.namespaces, ['nn-old-ul']);
});

t.test('scratch namespaces named after a live test process stay; a dead one\'s go; others are not ours', async (t) => {
  const plan = planLeftovers({
    namespaces: ['nn-nl-4242-a', 'nn-phost-4242', 'nn-nft-999', 'nn-bps-999-nftables-1000', 'nn-orphan', 'nn-prof-1', 'user-ns', 'kube-x'],
    labs: [],
    ownerAlive: () => false,
    pidAlive: (pid) => pid === 4242 || pid === 1,
  });
  t.same(plan.namespaces, ['nn-nft-999', 'nn-bps-999-nftables-1000', 'nn-orphan', 'nn-prof-1'], 'nn-* of dead or unknown owners only; never a name without the prefix');
  t.same(plan.labDirs, []);
});

t.test('a live lab whose tag looks like a pid-named scratch namespace is still recognised by its owner', async (t) => {
  const plan = planLeftovers({ namespaces: ['nn-cn1a2-n1'], labs: [lab('cn1a2', owner(7, 'cn1a2'))], ownerAlive: () => true, pidAlive: () => false });
  t.same(plan.namespaces, []);
});

t.test('owner records: written for this process, alive; a recycled pid (other start time) is not the owner', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-owner-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const o = writeOwner(dir, { tag: 't1', namespacePrefix: 'nn-t1-' });
  t.same(readOwner(dir), o);
  t.equal(ownerAlive(o), true);
  t.equal(ownerAlive({ ...o, startTime: '1' }), false, 'same pid, another process');
  t.equal(readOwner(join(dir, 'missing')), null);
});
