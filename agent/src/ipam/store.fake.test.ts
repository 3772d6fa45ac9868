import t from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { parseIPv4, type IPv4 } from '../../../lib/net/ip.js';
import { FakeStore } from './store.fake.js';
import { rejectsWith } from './test-helpers.js';

const ip = (s: string): IPv4 => parseIPv4(s);

t.test('FakeStore validates like a real store', async (t) => {
  const s = new FakeStore();
  await s.withLock(async () => {
    t.equal(await s.reserve('a', 'eth0', ip('10.0.0.2'), '0'), true);
    t.equal(await s.reserve('b', 'eth0', ip('10.0.0.2'), '0'), false, 'taken');
    t.equal(await s.reserve('a', 'eth0', ip('10.0.0.2'), '0'), false, 'taken by itself too');
    t.equal(await s.reserve('a', 'eth1', ip('10.0.0.3'), '1'), true);
    await s.release(ip('10.9.9.9')); // unknown: no-op
    t.same(await s.releaseByID('nobody', 'eth0'), []);
    await rejectsWith(t, s.reserve('a', 'eth0', '10.0.0.256' as IPv4, '0'), ErrorCode.Internal, /not an IPv4/);
    await rejectsWith(t, s.reserve('', 'eth0', ip('10.0.0.4'), '0'), ErrorCode.Internal, /container id/);
    await rejectsWith(t, s.reserve('a', 'eth0', ip('10.0.0.4'), ''), ErrorCode.Internal, /rangeId/);
    await rejectsWith(t, s.withLock(async () => 1), ErrorCode.Internal, /not reentrant/);
  });
  t.equal(await s.lastReservedIP('0'), '10.0.0.2');
  t.equal(await s.lastReservedIP('1'), '10.0.0.3');
  t.equal(await s.lastReservedIP('2'), undefined);
  t.same(await s.getByID('a', 'eth0'), ['10.0.0.2']);
  await rejectsWith(t, s.release(ip('10.0.0.2')), ErrorCode.Internal, /outside withLock/);
  await rejectsWith(t, s.releaseByID('a', 'eth0'), ErrorCode.Internal, /outside withLock/);
  t.same(await s.withLock(() => s.releaseByID('a', 'eth0')), ['10.0.0.2']);
  t.same(await s.listAll(), [{ ip: '10.0.0.3', id: 'a', ifName: 'eth1' }]);
  t.throws(() => s.seed([{ ip: ip('10.0.0.3'), id: 'z', ifName: 'eth0' }]), /given twice/);
});

t.test('withLock serialises in FIFO order and releases on throw', async (t) => {
  const s = new FakeStore();
  const order: string[] = [];
  const slow = (name: string, ms: number) =>
    s.withLock(async () => {
      order.push(`${name}+`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${name}-`);
    });
  const failing = () =>
    s.withLock(async () => {
      order.push('f');
      throw new Error('boom');
    });
  const results = await Promise.allSettled([slow('a', 20), failing(), slow('b', 1), slow('c', 5)]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  t.same(order, ['a+', 'a-', 'f', 'b+', 'b-', 'c+', 'c-']);
});
