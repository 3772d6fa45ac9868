/**
 * NftSets over a real NETLINK_NETFILTER socket opened inside a scratch
 * namespace (root): elements land where `nft list` sees them, the kernel's
 * answers (ENOENT, one transaction) match the fake's, element messages past
 * the proxy's 4 KB are taken, and nothing leaks into the root namespace.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { makeScratchNetns } from '../../netns/scratch-netns.js';
import { NetlinkNftSets, NftSetsError } from './nft-sets.js';
import { BIG_ELEMENT_BATCH } from './nft-sets-testdata.js';

const ns = makeScratchNetns(t, 'nfsets');
execFileSync('ip', ['netns', 'exec', ns.name, 'nft', '-f', '-'], {
  input: 'add table ip t\nadd set ip t pods { type ipv4_addr; }\nadd set ip t ex { type ipv4_addr . ipv4_addr; flags interval; }\n',
});
const sets = new NetlinkNftSets(ns.path);
t.teardown(() => sets.close());
const list = (set: string) => ns.exec(['nft', 'list', 'set', 'ip', 't', set]);
const errnoOf = (p: Promise<unknown>): Promise<string> => p.then(() => '', (e: unknown) => (e instanceof NftSetsError ? e.errno : String(e)));
const rootTables = execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' });

t.test('add and delete elements, plain and concatenated-interval, seen by nft', async (t) => {
  await sets.applyElements([
    { op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.244.1.5', '10.244.1.6'] },
    { op: 'add', family: 'ip', table: 't', set: 'ex', interval: true, elements: ['10.244.1.5 . 10.244.1.0/24'] },
  ]);
  t.match(list('pods'), /elements = \{ 10\.244\.1\.5, 10\.244\.1\.6 \}/);
  t.match(list('ex'), /elements = \{ 10\.244\.1\.5 \. 10\.244\.1\.0\/24 \}/);
  await sets.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.244.1.5'] }]);
  t.pass('re-adding an element is success');
  await sets.applyElements([
    { op: 'delete', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.244.1.5'] },
    { op: 'delete', family: 'ip', table: 't', set: 'ex', interval: true, elements: ['10.244.1.5 . 10.244.1.0/24'] },
  ]);
  t.notMatch(list('pods'), /10\.244\.1\.5\b/);
  t.notMatch(list('ex'), /elements/);
});

t.test('the kernel\'s answers: ENOENT for a missing element, set or table; a failed batch changes nothing', async (t) => {
  t.equal(await errnoOf(sets.applyElements([{ op: 'delete', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.9.9.9'] }])), 'ENOENT');
  t.equal(await errnoOf(sets.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'nope', interval: false, elements: ['10.9.9.9'] }])), 'ENOENT');
  t.equal(await errnoOf(sets.applyElements([{ op: 'add', family: 'ip', table: 'nope', set: 'pods', interval: false, elements: ['10.9.9.9'] }])), 'ENOENT');
  const batch = sets.applyElements([
    { op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.244.1.77'] },
    { op: 'delete', family: 'ip', table: 't', set: 'pods', interval: false, elements: ['10.9.9.9'] },
  ]);
  t.equal(await errnoOf(batch), 'ENOENT');
  t.notMatch(list('pods'), /10\.244\.1\.77/, 'all or nothing');
});

t.test('a reconcile-sized batch: 250 elements a set, messages of 5 and 9 KB, in and out', async (t) => {
  const ops = BIG_ELEMENT_BATCH.ops.map((o) => ({ ...o, table: 't', set: o.interval ? 'ex' : 'pods' }));
  await sets.applyElements(ops);
  t.equal((list('pods').match(/10\.244\.[0-3]\.\d+/g) ?? []).length, 250);
  t.equal((list('ex').match(/10\.244\.[0-3]\.\d+ \. 10\.244\.[0-3]\.0\/24/g) ?? []).length, 250);
  await sets.applyElements(ops.map((o) => ({ ...o, op: 'delete' as const })));
  t.notMatch(list('pods'), /10\.244\./);
  t.notMatch(list('ex'), /elements/);
});

t.test('many small batches on one socket', async (t) => {
  for (let i = 0; i < 200; i++) {
    await sets.applyElements([{ op: 'add', family: 'ip', table: 't', set: 'pods', interval: false, elements: [`10.250.${i >> 8}.${i & 255}`] }]);
  }
  t.equal((list('pods').match(/10\.250\./g) ?? []).length, 200);
  t.equal(execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' }), rootTables, 'the root namespace has no new table');
});
