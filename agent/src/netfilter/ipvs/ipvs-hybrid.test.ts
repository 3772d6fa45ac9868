/** HybridIpvs routes each call to the executor measured faster for it. No root. */
import t from 'tap';
import { FakeIpvs } from './ipvs.fake.js';
import { BULK_OPS, HybridIpvs } from './ipvs-hybrid.js';
import type { IpvsOp, VirtualServer } from './ipvs-types.js';

const vs = (i: number): VirtualServer => ({ protocol: 'TCP', address: `10.96.0.${i}`, port: 80, scheduler: 'rr', persistentTimeout: 0 });
const adds = (n: number): IpvsOp[] => Array.from({ length: n }, (_, i) => ({ op: 'add-service' as const, vs: vs(i + 1) }));

t.test('small batches over genl, bulk ones through ipvsadm -R; whole-table lists from ipvsadm, one service from genl', async (t) => {
  const genl = new FakeIpvs();
  const adm = new FakeIpvs();
  const h = new HybridIpvs(genl, adm);
  t.equal(h.kind, 'hybrid');
  await h.apply(adds(BULK_OPS - 1));
  t.same([genl.applyCalls, adm.applyCalls], [1, 0], `${BULK_OPS - 1} ops: genl`);
  await h.apply([]);
  await h.apply(adds(BULK_OPS));
  t.same([genl.applyCalls, adm.applyCalls], [2, 1], `${BULK_OPS} ops: ipvsadm`);
  t.equal((await h.list()).length, BULK_OPS, 'the table as ipvsadm lists it');
  t.same([genl.listCalls, adm.listCalls], [0, 1]);
  t.same(await h.listDests(vs(1)), [], 'one service: genl (the small batch put it there)');
  t.equal(await h.listDests(vs(200)), null);
  await h.flush();
  t.equal(genl.dump(), '', 'flush over genl');
  let closed = 0;
  genl.close = () => void closed++;
  adm.close = () => void closed++;
  h.close();
  t.equal(closed, 2);
});
