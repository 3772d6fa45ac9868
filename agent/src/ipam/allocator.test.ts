import t from 'tap';
import { ErrorCode, CniCode } from '../../../lib/errors/errors.js';
import { parseIPv4, type IPv4 } from '../../../lib/net/ip.js';
import { allocate, candidates } from './allocator.js';
import { parseRangeSet } from './range-set.js';
import { FakeStore } from './store.fake.js';
import { rejectsWith } from './test-helpers.js';

const ip = (s: string): IPv4 => parseIPv4(s);
const set24 = parseRangeSet([{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.1', rangeEnd: '10.0.0.5' }], 's');
// /30: network .0, gateway .1, broadcast .3: exactly one allocatable address.
const set30 = parseRangeSet([{ subnet: '10.9.9.0/30' }], 's');

async function take(store: FakeStore, set = set24, id = 'c', ifName = 'eth0', requestedIP?: IPv4) {
  return store.withLock(() => allocate(store, set, { rangeId: '0', id, ifName, ...(requestedIP ? { requestedIP } : {}) }));
}

t.test('round-robin order skips the gateway and wraps', async (t) => {
  const store = new FakeStore();
  const got: string[] = [];
  for (let i = 0; i < 4; i++) got.push((await take(store, set24, `c${i}`)).address);
  // .1 is the gateway: never given.
  t.same(got, ['10.0.0.2/24', '10.0.0.3/24', '10.0.0.4/24', '10.0.0.5/24']);
  t.equal(await store.lastReservedIP('0'), '10.0.0.5');
  // Free .3, then the next allocation wraps from .5 past .1 (gateway) and .2 (taken) to .3.
  await store.withLock(() => store.release(ip('10.0.0.3')));
  const a = await take(store, set24, 'c9');
  t.equal(a.address, '10.0.0.3/24');
  t.equal(a.gateway, '10.0.0.1');
  t.equal(a.existing, false);
});

t.test('starts after the last reserved IP, not at the lowest free one', async (t) => {
  const store = new FakeStore().seed([], { '0': ip('10.0.0.3') });
  t.equal((await take(store, set24, 'a')).ip, '10.0.0.4');
  // A release behind the cursor is not reused before the cursor wraps.
  t.equal((await take(store, set24, 'b')).ip, '10.0.0.5');
  t.equal((await take(store, set24, 'c')).ip, '10.0.0.2');
  // A last IP outside the set (config changed) restarts at rangeStart.
  const s2 = new FakeStore().seed([], { '0': ip('192.168.0.9') });
  t.equal((await take(s2, set24, 'a')).ip, '10.0.0.2');
});

t.test('candidates: every address once, across ranges, in order', async (t) => {
  const set = parseRangeSet(
    [
      { subnet: '10.0.0.0/24', rangeStart: '10.0.0.1', rangeEnd: '10.0.0.3' },
      { subnet: '10.0.1.0/24', rangeStart: '10.0.1.10', rangeEnd: '10.0.1.11', gateway: '10.0.1.254' },
    ],
    's',
  );
  const list = (last?: string) => [...candidates(set, last === undefined ? undefined : ip(last))].map(([, x]) => x);
  t.same(list(), ['10.0.0.2', '10.0.0.3', '10.0.1.10', '10.0.1.11']);
  t.same(list('10.0.0.3'), ['10.0.1.10', '10.0.1.11', '10.0.0.2', '10.0.0.3']);
  t.same(list('10.0.1.11'), ['10.0.0.2', '10.0.0.3', '10.0.1.10', '10.0.1.11']);
  // The gateway itself as cursor (requested-IP bookkeeping cannot put it there, but be safe).
  t.same(list('10.0.0.1'), ['10.0.0.2', '10.0.0.3', '10.0.1.10', '10.0.1.11']);
  // The allocator gives them in that order.
  const store = new FakeStore();
  const got: string[] = [];
  for (let i = 0; i < 4; i++) got.push((await take(store, set, `c${i}`)).address);
  t.same(got, ['10.0.0.2/24', '10.0.0.3/24', '10.0.1.10/24', '10.0.1.11/24']);
  const e = await rejectsWith(t, take(store, set, 'c5'), ErrorCode.IpamExhausted, /10\.0\.0\.1-10\.0\.0\.3,10\.0\.1\.10-10\.0\.1\.11/);
  t.equal(e?.cniCode, CniCode.Internal);
});

t.test('exhaustion of a /30 names the range; network, gateway and broadcast never given', async (t) => {
  const store = new FakeStore();
  const a = await take(store, set30, 'a');
  t.equal(a.address, '10.9.9.2/30');
  t.equal(a.gateway, '10.9.9.1');
  await rejectsWith(t, take(store, set30, 'b'), ErrorCode.IpamExhausted, /range set 10\.9\.9\.1-10\.9\.9\.2/);
  t.same((await store.listAll()).map((r) => r.ip), ['10.9.9.2']);
  // Exhaustion tries each candidate once and stops: .2 only (gateway .1 is skipped).
  const before = store.reserveCalls;
  await rejectsWith(t, take(store, set30, 'b'), ErrorCode.IpamExhausted, /no IP addresses/);
  t.equal(store.reserveCalls - before, 1);
});

t.test('a /24 hands out exactly .2-.254, never .0, .1 or .255', async (t) => {
  const set = parseRangeSet([{ subnet: '10.7.0.0/24' }], 's');
  const store = new FakeStore();
  const seen = new Set<string>();
  for (let i = 0; i < 253; i++) seen.add((await take(store, set, `c${i}`)).ip);
  t.equal(seen.size, 253);
  for (const bad of ['10.7.0.0', '10.7.0.1', '10.7.0.255']) t.notOk(seen.has(bad), `${bad} never given`);
  await rejectsWith(t, take(store, set, 'x'), ErrorCode.IpamExhausted, /10\.7\.0\.1-10\.7\.0\.254/);
});

t.test('requested IP: honoured, or rejected clearly', async (t) => {
  const store = new FakeStore();
  const a = await take(store, set24, 'a', 'eth0', ip('10.0.0.4'));
  t.equal(a.address, '10.0.0.4/24');
  t.equal(await store.lastReservedIP('0'), '10.0.0.4');
  await rejectsWith(t, take(store, set24, 'b', 'eth0', ip('10.0.0.4')), ErrorCode.IpamInvalid, /^requested IP: 10\.0\.0\.4 is already allocated \(held by a\/eth0\)/);
  await rejectsWith(t, take(store, set24, 'b', 'eth0', ip('10.0.0.9')), ErrorCode.IpamInvalid, /^requested IP: 10\.0\.0\.9 is not in range set 10\.0\.0\.1-10\.0\.0\.5/);
  await rejectsWith(t, take(store, set24, 'b', 'eth0', ip('10.0.0.1')), ErrorCode.IpamInvalid, /is the gateway/);
  await rejectsWith(t, take(store, set24, 'b', 'eth0', ip('10.0.0.0')), ErrorCode.IpamInvalid, /not in range set/);
  t.same((await store.listAll()).map((r) => r.id), ['a'], 'failed requests reserved nothing');
});

t.test('idempotent: a retried allocation returns the held IP', async (t) => {
  const store = new FakeStore();
  const a1 = await take(store, set24, 'a');
  const a2 = await take(store, set24, 'a');
  t.equal(a2.ip, a1.ip);
  t.equal(a2.existing, true);
  t.equal((await store.listAll()).length, 1);
  // Same id, other interface: a separate attachment.
  const b = await take(store, set24, 'a', 'eth1');
  t.not(b.ip, a1.ip);
  // Retry with the same requested IP is fine; a different one is refused.
  t.equal((await take(store, set24, 'a', 'eth0', a1.ip)).existing, true);
  await rejectsWith(t, take(store, set24, 'a', 'eth0', ip('10.0.0.5')), ErrorCode.IpamInvalid, /already holds/);
  // An IP held in another range set does not count for this one.
  const other = parseRangeSet([{ subnet: '10.8.0.0/24' }], 's');
  t.equal((await take(store, other, 'a')).existing, false);
});

t.test('the allocator refuses to run outside the store lock', async (t) => {
  const store = new FakeStore();
  await rejectsWith(t, allocate(store, set24, { rangeId: '0', id: 'a', ifName: 'eth0' }), ErrorCode.Internal, /reserve.*outside withLock/);
});
