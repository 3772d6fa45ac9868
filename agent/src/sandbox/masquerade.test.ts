import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { NftSetsError, type NftElementOp, type NftSets } from '../netfilter/nft/nft-sets.js';
import { MASQ_TABLE, masqueradeEntry, masqueradeScript, NftMasquerade } from './masquerade.js';

const elements = (nft: NftFake, set: string) => [...(nft.table('ip', MASQ_TABLE)?.sets.get(set)?.elements.keys() ?? [])].sort();

t.test('the set-up script: two sets, two rules, idempotent (the sets keep their elements on a second run)', async (t) => {
  t.equal(
    masqueradeScript(),
    `add table ip nodenet-cni { comment "nodenet CNI: ipMasq for pods on this node"; }
add set ip nodenet-cni masq-pods { type ipv4_addr; comment "pods whose traffic leaving their subnet is masqueraded"; }
add set ip nodenet-cni masq-exempt { type ipv4_addr . ipv4_addr; flags interval; comment "pod . its own subnet: not masqueraded"; }
add chain ip nodenet-cni postrouting { type nat hook postrouting priority srcnat; policy accept; }
flush chain ip nodenet-cni postrouting
add rule ip nodenet-cni postrouting ip saddr . ip daddr @masq-exempt return
add rule ip nodenet-cni postrouting ip saddr @masq-pods ip daddr != 224.0.0.0/4 masquerade
`,
  );
  const nft = new NftFake();
  const m = new NftMasquerade({ nft, sets: nft, log: silentLogger() });
  await m.setup();
  await m.add(masqueradeEntry('10.244.1.5/24'));
  await m.setup();
  t.same(elements(nft, 'masq-pods'), ['10.244.1.5'], 'a restart\'s set-up keeps the pods');
  t.equal(nft.table('ip', MASQ_TABLE)!.chains.get('postrouting')!.rules.length, 2);
});

t.test('add and del are idempotent; del without the subnet removes the pod\'s membership', async (t) => {
  const nft = new NftFake();
  const m = new NftMasquerade({ nft, sets: nft, log: silentLogger() });
  await m.setup();
  const e = masqueradeEntry('10.244.1.5/24');
  t.same(e, { ip: '10.244.1.5', subnet: '10.244.1.0/24' });
  await m.add(e);
  await m.add(e);
  t.same(elements(nft, 'masq-exempt'), ['10.244.1.5 . 10.244.1.0/24']);
  await m.del(e);
  await m.del(e);
  t.same(elements(nft, 'masq-pods'), []);
  t.same(elements(nft, 'masq-exempt'), []);
  await m.add(e);
  await m.del({ ip: e.ip });
  t.same(elements(nft, 'masq-pods'), []);
  t.same(elements(nft, 'masq-exempt'), ['10.244.1.5 . 10.244.1.0/24'], 'harmless without the pod in masq-pods; reconcile() removes it');
  t.same(await m.reconcile([]), { added: 0, removed: 1 });
  t.same(elements(nft, 'masq-exempt'), []);
});

t.test('reconcile: the sets end up exactly the attachment records\' entries', async (t) => {
  const nft = new NftFake();
  const m = new NftMasquerade({ nft, sets: nft, log: silentLogger() });
  await m.setup();
  await m.add(masqueradeEntry('10.244.1.5/24'));
  await m.add(masqueradeEntry('10.244.1.9/24')); // a crash before its record was written
  const want = [masqueradeEntry('10.244.1.5/24'), masqueradeEntry('10.244.1.7/24')];
  t.same(await m.reconcile(want), { added: 2, removed: 2 });
  t.same(elements(nft, 'masq-pods'), ['10.244.1.5', '10.244.1.7']);
  t.same(await m.reconcile(want), { added: 0, removed: 0 });
});

t.test('without nft (set-up failed): ADDs with ipMasq fail naming the cause; DELs succeed', async (t) => {
  const nft = new NftFake();
  const broken = Object.assign(Object.create(nft) as NftFake, { apply: async () => { throw new Error('nft: command not found'); } });
  const m = new NftMasquerade({ nft: broken, sets: nft, log: silentLogger() });
  await m.setup();
  await t.rejects(m.add(masqueradeEntry('10.244.1.5/24')), { code: 'NN_ERR_MASQUERADE', message: /ipMasq is not available on this node: nft: command not found/ });
  await m.del({ ip: '10.244.1.5' });
  t.pass();
});

t.test('a DEL whose batch fails on one missing element retries each alone', async (t) => {
  const ops: NftElementOp[][] = [];
  const sets: NftSets = {
    applyElements: async (o) => {
      ops.push([...o]);
      if (o.length > 1 || o[0]!.set === 'masq-exempt') throw new NftSetsError('ENOENT', 'gone');
    },
    close() {},
  };
  const m = new NftMasquerade({ nft: new NftFake(), sets, log: silentLogger() });
  await m.setup();
  await m.del(masqueradeEntry('10.244.1.5/24'));
  t.same(ops.map((o) => o.map((x) => `${x.op} ${x.set}`)), [['delete masq-pods', 'delete masq-exempt'], ['delete masq-pods'], ['delete masq-exempt']]);
});
