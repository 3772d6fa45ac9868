/**
 * Node IPAM on a real storage (LocalStorage over the fake persistence) and watch cache and Rest: a pod CIDR per
 * Node, never shared, kept across restarts, freed when the Node goes, a
 * Node's own honoured when it fits and refused (left alone) when it is
 * taken, immutable once set.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { statusOf } from '../api/errors.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import { Claims } from '../alloc/claims.js';
import type { KObject } from '../store/types.js';
import { NodeIpam } from './node-ipam.js';

const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const NODES = RESOURCES.find((r) => r.resource === 'nodes')!;

function setup(t: Test, persistence = new FakePersistence(), cidr = '10.244.0.0/22') {
  const clock = new FakeClock();
  const ts = openTestStore({ persistence, clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  const ipam = new NodeIpam({ rest: asController(rest, 'node-ipam-controller'), cache: store, claims: new Claims(ts.storage, store, 'podcidrs.nodenet.io'), clock, log: silentLogger(), clusterCIDR: cidr, maskSize: 24 });
  const stop = () => {
    ipam.stop();
    ts.close();
  };
  t.teardown(stop);
  return { store, rest, ipam, stop };
}

const node = (name: string, podCIDR?: string): KObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name }, ...(podCIDR ? { spec: { podCIDR } } : {}) });
const cidrOf = async (rest: Rest, name: string) => ((await rest.get(NODES, '', name)).object['spec'] as { podCIDR?: string; podCIDRs?: string[] } | undefined);

t.test('each Node gets its own /24; a deleted Node\'s is free again; a full cluster CIDR leaves the Node without one', async (t) => {
  const { rest, ipam } = setup(t);
  await ipam.start();
  for (const n of ['a', 'b', 'c']) await rest.create(NODES, '', node(n));
  await ipam.idle();
  t.same(await Promise.all(['a', 'b', 'c'].map((n) => cidrOf(rest, n))), [
    { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
    { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] },
    { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24'] },
  ]);
  await rest.create(NODES, '', node('d'));
  await rest.create(NODES, '', node('e'));
  await ipam.idle();
  t.equal((await cidrOf(rest, 'd'))?.podCIDR, '10.244.3.0/24');
  t.equal((await cidrOf(rest, 'e'))?.podCIDR, undefined, 'a /22 has four /24s');
  t.equal(ipam.free, 0);
  await rest.delete(NODES, '', 'b');
  await rest.create(NODES, '', node('f'));
  await ipam.idle();
  t.equal((await cidrOf(rest, 'f'))?.podCIDR, '10.244.1.0/24', 'b\'s block went to the next Node');
});

t.test('a Node\'s own pod CIDR: kept when it fits and is free, left alone when taken or outside; immutable once set', async (t) => {
  const { rest, ipam } = setup(t);
  await ipam.start();
  await rest.create(NODES, '', node('own', '10.244.2.0/24'));
  await rest.create(NODES, '', node('next'));
  await ipam.idle();
  t.equal((await cidrOf(rest, 'own'))?.podCIDR, '10.244.2.0/24');
  t.equal((await cidrOf(rest, 'next'))?.podCIDR, '10.244.0.0/24');
  await rest.create(NODES, '', node('clash', '10.244.2.0/24'));
  await rest.create(NODES, '', node('outside', '192.168.0.0/24'));
  await ipam.idle();
  t.equal((await cidrOf(rest, 'clash'))?.podCIDR, '10.244.2.0/24', 'a taken one is reported, not rewritten (upstream: CIDRNotAvailable)');
  t.equal(ipam.free, 2, 'the clash and the outsider hold nothing');
  const cur = (await rest.get(NODES, '', 'next')).object as KObject;
  const moved = structuredClone(cur);
  (moved['spec'] as Record<string, unknown>)['podCIDR'] = '10.244.3.0/24';
  (moved['spec'] as Record<string, unknown>)['podCIDRs'] = ['10.244.3.0/24'];
  const err = await rest.update(NODES, '', 'next', moved).then(() => null, statusOf);
  t.match(err, { code: 422, details: { causes: [{ field: 'spec.podCIDRs', message: /node updates may not change podCIDR except from "" to valid/ }] } });
  t.match(await rest.create(NODES, '', node('bad', 'nope')).then(() => null, statusOf), { code: 422, details: { causes: [{ field: 'spec.podCIDRs[0]' }] } });
});

t.test('restarts: the table is rebuilt from the Nodes, so no block is handed out twice', async (t) => {
  const persistence = new FakePersistence();
  const first = setup(t, persistence);
  await first.ipam.start();
  await first.rest.create(NODES, '', node('a'));
  await first.rest.create(NODES, '', node('b'));
  await first.ipam.idle();
  await first.rest.delete(NODES, '', 'a');
  first.stop();
  const second = setup(t, persistence);
  await second.rest.create(NODES, '', node('c')); // made while no IPAM ran
  await second.ipam.start();
  await second.rest.create(NODES, '', node('d'));
  await second.ipam.idle();
  const got = await Promise.all(['b', 'c', 'd'].map(async (n) => (await cidrOf(second.rest, n))?.podCIDR));
  t.equal(got[0], '10.244.1.0/24');
  t.equal(new Set(got).size, 3, `distinct: ${got.join(', ')}`);
  t.ok(got.includes('10.244.0.0/24'), 'a\'s block, free after its deletion, was given again');
});

import { MemoryStorage } from '../store/memory-storage.js';
import { WatchCache } from '../store/watch-cache.js';

t.test('two controllers at once on one backend (a leader change that overlaps) never give two Nodes one block; claims follow the Nodes', async (t) => {
  const storage = new MemoryStorage();
  const controllers = await Promise.all(
    [0, 1].map(async () => {
      const clock = new FakeClock();
      const cache = new WatchCache({ storage, clock });
      await cache.start();
      const rest = new Rest({ storage, cache, schemas, clock });
      const ipam = new NodeIpam({ rest, cache, claims: new Claims(storage, cache, 'podcidrs.nodenet.io'), clock, log: silentLogger(), clusterCIDR: '10.244.0.0/22', maskSize: 24 });
      t.teardown(() => {
        ipam.stop();
        cache.close();
      });
      return { cache, rest, ipam };
    }),
  );
  const [one, two] = controllers as [(typeof controllers)[0], (typeof controllers)[0]];
  await Promise.all([one.ipam.start(), two.ipam.start()]);
  for (const n of ['a', 'b', 'c', 'd']) await one.rest.create(NODES, '', node(n));
  for (let i = 0; i < 20; i++) {
    await Promise.all([one.cache.fresh(), two.cache.fresh()]);
    await Promise.all([one.ipam.idle(), two.ipam.idle()]);
  }
  const cidrs = await Promise.all(['a', 'b', 'c', 'd'].map(async (n) => (await cidrOf(one.rest, n))?.podCIDR));
  t.equal(cidrs.filter(Boolean).length, 4, `every Node has one: ${cidrs.join(' ')}`);
  t.equal(new Set(cidrs).size, 4, 'all different');
  const claims = new Claims(storage, one.cache, 'podcidrs.nodenet.io').all();
  t.same([...claims].sort(), ['a', 'b', 'c', 'd'].map((n, i) => [cidrs[i]!, `nodes//${n}`]).sort(), 'one claim per Node, on its block, none left over');
  await one.rest.delete(NODES, '', 'b');
  for (let i = 0; i < 10; i++) {
    await Promise.all([one.cache.fresh(), two.cache.fresh()]);
    await Promise.all([one.ipam.idle(), two.ipam.idle()]);
  }
  t.notOk(new Claims(storage, one.cache, 'podcidrs.nodenet.io').all().has(cidrs[1]!), 'a deleted Node\'s claim goes');
});
