import t from 'tap';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { silentLogger } from '../../../../lib/log/log.js';
import type { Nft } from '../../netfilter/nft/nft.js';
import { NftFake } from '../../netfilter/nft/nft.fake.js';
import type { NftFamily } from '../../netfilter/nft/nft-state.js';
import { FakeConntrack } from '../../netfilter/conntrack/conntrack.fake.js';
import { traceNftables } from '../../trace/nft-tracer.js';
import { CLUSTER_CIDR, clusterIP, makeEndpointSlice, makeService, nodeIP, nodeName, podIP } from '../../testing/addresses.js';
import { FakeClock } from '../../../../lib/reconcile/clock.fake.js';
import { Proxier } from '../proxier.js';
import type { IPv4 } from '../../../../lib/net/ip.js';
import { NftablesBackend } from './proxier.js';
import { renderNftables } from './render.js';
import { CFG, NODE_IP, ep, snapshot, svc } from '../test-fixtures.js';

/** The fake, plus a switch to make the next apply fail as the kernel would on a bad batch. */
class FlakyNft implements Nft {
  failNext = false;
  constructor(readonly inner: NftFake) {}
  apply(script: string): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      // a batch whose last line the fake refuses: nothing of it is applied
      return this.inner.apply(`${script}add rule ip kube-proxy services goto no-such-chain\n`);
    }
    return this.inner.apply(script);
  }
  listTable(f: NftFamily, n: string) {
    return this.inner.listTable(f, n);
  }
  listNames(f: NftFamily, n: string) {
    return this.inner.listNames(f, n);
  }
  listNamesMany(f: NftFamily, n: readonly string[]) {
    return this.inner.listNamesMany(f, n);
  }
  listTableText(f: NftFamily, n: string) {
    return this.inner.listTableText(f, n);
  }
  deleteTable(f: NftFamily, n: string) {
    return this.inner.deleteTable(f, n);
  }
  tableExists(f: NftFamily, n: string) {
    return this.inner.tableExists(f, n);
  }
  objectExists(f: NftFamily, t: string, k: 'chain' | 'map' | 'set', n: string) {
    return this.inner.objectExists(f, t, k, n);
  }
}

function setup() {
  const fake = new NftFake();
  const nft = new FlakyNft(fake);
  const b = new NftablesBackend({ nft, nodeConfig: CFG, log: silentLogger() });
  return { fake, nft, b };
}

const A = snapshot(
  [svc('ns1', 'svc1', '172.30.0.41', { affinity: 60 }), [ep('10.180.0.1:80'), ep('10.180.0.2:80')]],
  [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), [ep('10.180.0.5:80')]],
);
const B = snapshot(
  [svc('ns1', 'svc1', '172.30.0.41', { affinity: 60 }), [ep('10.180.0.1:80'), ep('10.180.0.3:80')]],
  [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), [ep('10.180.0.5:80')]],
);
const changedSvc1 = { full: false, changed: new Set(['ns1/svc1']) } as const;

/** The table a full sync of `snap` into an empty kernel gives. */
async function expected(snap: ReturnType<typeof snapshot>) {
  const f = new NftFake();
  await f.apply(renderNftables(snap, CFG, { full: true }).text);
  return f.table('ip', 'kube-proxy');
}

t.test('first sync is full (even if asked partial), lists the kernel once, then partial syncs send only the change', async (t) => {
  const { fake, b } = setup();
  t.equal(b.table, 'kube-proxy');
  await b.sync(A, changedSvc1);
  t.equal(b.lastSync!.full, true);
  t.equal(fake.calls.listNames, 1);
  t.same(fake.table('ip', 'kube-proxy'), await expected(A));
  t.equal(b.lastSyncRuleCount(), b.lastSync!.ruleCount + b.lastSync!.elementCount);

  await b.sync(B, changedSvc1);
  t.equal(b.lastSync!.full, false);
  t.equal(fake.calls.listNames, 1, 'a partial sync does not list the kernel');
  const partial = fake.applied[1]!;
  t.notMatch(partial, /svc2/, 'svc2 untouched');
  t.notMatch(partial, /^add (table|map|set ip kube-proxy cluster-ips)/m, 'no fixed objects');
  t.match(partial, /^delete chain ip kube-proxy endpoint-2ZNDXFAB-ns1\/svc1\/tcp\/p80__10\.180\.0\.2\/80$/m);
  t.match(partial, /^delete set ip kube-proxy affinity-2ZNDXFAB-ns1\/svc1\/tcp\/p80__10\.180\.0\.2\/80$/m);
  t.same(fake.table('ip', 'kube-proxy'), await expected(B));

  await b.sync(B, { full: true });
  t.equal(b.lastSync!.full, true);
  t.equal(fake.calls.listNames, 1, 'a later full sync trusts its record');
  t.same(fake.table('ip', 'kube-proxy'), await expected(B));
});

t.test('a table left by an earlier run: its stale per-service objects are deleted by the first full sync', async (t) => {
  const fake = new NftFake();
  const old = snapshot([svc('old', 'gone', '172.30.9.9', { affinity: 10 }), [ep('10.180.9.9:80')]], [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), [ep('10.180.0.5:80')]]);
  await fake.apply(renderNftables(old, CFG, { full: true }).text);
  const b = new NftablesBackend({ nft: fake, nodeConfig: CFG, log: silentLogger() });
  await b.sync(A, { full: true });
  t.same(fake.table('ip', 'kube-proxy'), await expected(A));
  t.notOk([...fake.table('ip', 'kube-proxy')!.chains.keys()].some((c) => c.includes('old/gone')));
});

t.test('a failed sync throws RuleApply with the failing lines, changes nothing, and forces the next sync full', async (t) => {
  const { fake, nft, b } = setup();
  await b.sync(A, { full: true });
  const before = fake.table('ip', 'kube-proxy');
  nft.failNext = true;
  const err = await b.sync(B, changedSvc1).catch((e: unknown) => e);
  t.ok(err instanceof NodenetError);
  if (err instanceof NodenetError) {
    t.equal(err.code, ErrorCode.RuleApply);
    t.match(err.message, /nft -f failed at line \d+/);
    t.match(err.details, /> +\d+ \| add rule ip kube-proxy services goto no-such-chain/);
  }
  t.same(fake.table('ip', 'kube-proxy'), before, 'all or nothing');
  await b.sync(B, changedSvc1);
  t.equal(b.lastSync!.full, true, 'partial asked, full done');
  t.equal(fake.calls.listNames, 1, 'after a failed partial the record still holds (nft is atomic)');
  t.same(fake.table('ip', 'kube-proxy'), await expected(B));
});

t.test('after a failed full sync the kernel is listed again', async (t) => {
  const { fake, nft, b } = setup();
  await b.sync(A, { full: true });
  nft.failNext = true;
  await t.rejects(b.sync(B, { full: true }), { code: ErrorCode.RuleApply });
  t.equal(b.appliedState, null);
  await b.sync(B, { full: true });
  t.equal(fake.calls.listNames, 2);
  t.same(fake.table('ip', 'kube-proxy'), await expected(B));
});

t.test('canary: our table deleted behind our back', async (t) => {
  const { fake, b } = setup();
  await b.sync(A, { full: true });
  t.equal(await b.canaryMissing(), false);
  fake.externalDeleteTable('ip', 'kube-proxy');
  t.equal(await b.canaryMissing(), true);
  await b.sync(B, changedSvc1);
  t.equal(b.lastSync!.full, true);
  t.equal(fake.calls.listNames, 1, 'a missing table holds nothing: no listing needed');
  t.same(fake.table('ip', 'kube-proxy'), await expected(B));
  t.equal(await b.canaryMissing(), false);
});

t.test('cleanup deletes the table, is idempotent, and the next sync is full', async (t) => {
  const { fake, b } = setup();
  await b.sync(A, { full: true });
  await b.cleanup();
  t.equal(await fake.tableExists('ip', 'kube-proxy'), false);
  await b.cleanup();
  await b.sync(A, changedSvc1);
  t.equal(b.lastSync!.full, true);
  t.same(fake.table('ip', 'kube-proxy'), await expected(A));
});

t.test('a prefix gives its own table, leaving kube-proxy alone', async (t) => {
  const fake = new NftFake();
  await fake.apply('add table ip kube-proxy\nadd chain ip kube-proxy mine');
  const b = new NftablesBackend({ nft: fake, nodeConfig: { ...CFG, prefix: 'NN' }, log: silentLogger() });
  await b.sync(A, { full: true });
  await b.cleanup();
  t.equal(await fake.tableExists('ip', 'nn-proxy'), false);
  t.ok(fake.table('ip', 'kube-proxy')!.chains.has('mine'));
});

t.test('the silent-drop option reaches the rules', async (t) => {
  const fake = new NftFake();
  const b = new NftablesBackend({ nft: fake, nodeConfig: CFG, log: silentLogger(), options: { clusterIPPing: 'drop' } });
  await b.sync(A, { full: true });
  const r = traceNftables(fake.table('ip', 'kube-proxy')!, { sourceIP: '10.0.1.1', protocol: 'ICMP', destIP: '172.30.0.41' }, { nodeIPs: [NODE_IP] });
  t.equal(r.destination, 'DROP');
});

t.test('with the core Proxier: Kubernetes objects in, traced packets out', async (t) => {
  const clock = new FakeClock(0);
  const fake = new NftFake();
  const backend = new NftablesBackend({ nft: fake, nodeConfig: { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 }, log: silentLogger() });
  const proxier = new Proxier({
    backend,
    conntrack: new FakeConntrack(),
    clock,
    log: silentLogger(),
    nodeConfig: { nodeName: nodeName(1), nodeIPs: [nodeIP(1)], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 },
    minSyncIntervalMs: 1000,
    maxSyncIntervalMs: 30_000,
  });
  proxier.start();
  t.teardown(() => proxier.stop());
  const slice = (ips: string[]) =>
    makeEndpointSlice({ service: 'web', ports: [{ name: 'http', port: 8080 }], endpoints: ips.map((ip, i) => ({ ip, nodeName: nodeName(1 + (i % 2)) })) });
  proxier.onServiceAdd(makeService({ name: 'web', type: 'NodePort', clusterIP: clusterIP(1), ports: [{ name: 'http', port: 80, nodePort: 30080 }] }));
  proxier.onEndpointSliceAdd(slice([podIP(1, 1), podIP(2, 1)]));
  proxier.onServicesSynced();
  proxier.onEndpointSlicesSynced();
  await clock.advance(0);
  await proxier.whenIdle();
  const trace = (dst: string, port: number) =>
    traceNftables(fake.table('ip', 'kube-proxy')!, { sourceIP: podIP(1, 5), protocol: 'TCP', destIP: dst as IPv4, destPort: port }, { nodeIPs: [nodeIP(1)] }).destination;
  t.equal(trace(clusterIP(1), 80), '10.244.1.2:8080, 10.244.2.2:8080');
  t.equal(trace(nodeIP(1), 30080), '10.244.1.2:8080, 10.244.2.2:8080');
  t.equal(trace(clusterIP(1), 81), 'REJECT');

  proxier.onEndpointSliceUpdate(slice([podIP(1, 1), podIP(2, 1)]), slice([podIP(2, 1)]));
  await clock.advance(1000);
  await proxier.whenIdle();
  t.equal(proxier.lastSync?.scope, 'partial');
  t.equal(proxier.lastSync?.ok, true);
  t.equal(trace(clusterIP(1), 80), '10.244.2.2:8080');
  t.equal(proxier.lastSync?.ruleCount, backend.lastSyncRuleCount());
});
