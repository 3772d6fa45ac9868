import t from 'tap';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { parseIPv4, type IPv4 } from '../../../lib/net/ip.js';
import { parseIpamConf } from './config.js';
import { Ipam } from './ipam.js';
import { FakeStore } from './store.fake.js';
import { rejectsWith } from './test-helpers.js';

const ip = (s: string): IPv4 => parseIPv4(s);

function setup() {
  const stores = new Map<string, FakeStore>();
  const ipam = new Ipam({
    storeFor: (n) => {
      let s = stores.get(n);
      if (!s) stores.set(n, (s = new FakeStore()));
      return s;
    },
  });
  return { ipam, store: (n: string) => stores.get(n)! };
}

const conf = parseIpamConf('net1', {
  type: 'host-local',
  ranges: [[{ subnet: '10.1.0.0/24', rangeEnd: '10.1.0.9' }], [{ subnet: '10.2.0.0/24' }]],
  routes: [{ dst: '0.0.0.0/0' }],
});

t.test('add gives one address per range set, with routes; retry returns the same', async (t) => {
  const { ipam, store } = setup();
  const r = await ipam.add(conf, { id: 'c1', ifName: 'eth0' });
  t.same(r, {
    ips: [
      { address: '10.1.0.2/24', gateway: '10.1.0.1' },
      { address: '10.2.0.2/24', gateway: '10.2.0.1' },
    ],
    routes: [{ dst: '0.0.0.0/0' }],
  });
  t.same(await ipam.add(conf, { id: 'c1', ifName: 'eth0' }), r, 'retried ADD is idempotent');
  t.equal((await store('net1').listAll()).length, 2, 'no leak');
  t.same(await ipam.check(conf, 'c1', 'eth0'), ['10.1.0.2', '10.2.0.2']);
});

t.test('a failure in a later range set releases what this call reserved, nothing else', async (t) => {
  const { ipam, store } = setup();
  const small = parseIpamConf('net1', { ranges: [[{ subnet: '10.1.0.0/24' }], [{ subnet: '10.2.0.0/30' }]] });
  await ipam.add(small, { id: 'a', ifName: 'eth0' }); // takes the only 10.2.0.x address
  await rejectsWith(t, ipam.add(small, { id: 'b', ifName: 'eth0' }), ErrorCode.IpamExhausted, /10\.2\.0\.1-10\.2\.0\.2/);
  t.same((await store('net1').listAll()).map((r) => `${r.id} ${r.ip}`), ['a 10.1.0.2', 'a 10.2.0.2']);
});

t.test('requested IPs go to the range set that contains them', async (t) => {
  const { ipam, store } = setup();
  const r = await ipam.add(conf, { id: 'c', ifName: 'eth0', requestedIPs: [ip('10.2.0.77')] });
  t.same(r.ips.map((x) => x.address), ['10.1.0.2/24', '10.2.0.77/24']);
  await rejectsWith(t, ipam.add(conf, { id: 'd', ifName: 'eth0', requestedIPs: ['10.2.0.300'] }), ErrorCode.IpamInvalid, /^requested IP: "10\.2\.0\.300" is not an IPv4/);
  await rejectsWith(t, ipam.add(conf, { id: 'd', ifName: 'eth0', requestedIPs: [ip('10.3.0.1')] }), ErrorCode.IpamInvalid, /10\.3\.0\.1 is not in any range set of network net1/);
  await rejectsWith(t, ipam.add(conf, { id: 'd', ifName: 'eth0', requestedIPs: [ip('10.2.0.5'), ip('10.2.0.6')] }), ErrorCode.IpamInvalid, /both in range set/);
  // Taken: the first range set's fresh address is rolled back.
  await rejectsWith(t, ipam.add(conf, { id: 'd', ifName: 'eth0', requestedIPs: [ip('10.2.0.77')] }), ErrorCode.IpamInvalid, /already allocated/);
  t.same((await store('net1').listAll()).map((x) => x.id), ['c', 'c']);
  // Out of range in the first range set (rangeEnd .3).
  await rejectsWith(t, ipam.add(conf, { id: 'd', ifName: 'eth0', requestedIPs: [ip('10.1.0.200')] }), ErrorCode.IpamInvalid, /not in any range set/);
});

t.test('del releases by id+ifName and is idempotent', async (t) => {
  const { ipam, store } = setup();
  await ipam.add(conf, { id: 'a', ifName: 'eth0' });
  await ipam.add(conf, { id: 'a', ifName: 'eth1' });
  await ipam.add(conf, { id: 'b', ifName: 'eth0' });
  await ipam.del('net1', 'a', 'eth0');
  t.same((await store('net1').listAll()).map((r) => `${r.id}/${r.ifName}`).sort(), ['a/eth1', 'a/eth1', 'b/eth0', 'b/eth0']);
  await ipam.del('net1', 'a', 'eth0');
  await ipam.del('net1', 'nobody', 'eth0');
  await ipam.del('other-net', 'a', 'eth1');
  t.equal((await store('net1').listAll()).length, 4);
  await rejectsWith(t, ipam.check(conf, 'a', 'eth0'), ErrorCode.CheckFailed, /a\/eth0 holds no address in range set 0/);
  await rejectsWith(t, ipam.del('../x', 'a', 'eth0'), ErrorCode.IpamInvalid, /^network:/);
});

t.test('check fails when one range set is missing', async (t) => {
  const { ipam, store } = setup();
  await ipam.add(conf, { id: 'a', ifName: 'eth0' });
  const s = store('net1');
  await s.withLock(() => s.release(ip('10.2.0.2')));
  await rejectsWith(t, ipam.check(conf, 'a', 'eth0'), ErrorCode.CheckFailed, /range set 1/);
});

t.test('gc releases exactly the attachments not in the valid list', async (t) => {
  const { ipam, store } = setup();
  const c = parseIpamConf('net1', { subnet: '10.5.0.0/24' });
  for (const [id, ifName] of [['a', 'eth0'], ['a', 'eth1'], ['b', 'eth0'], ['c', 'eth0']] as const) await ipam.add(c, { id, ifName });
  const s = store('net1');
  // A legacy record (id only) and one with an unreadable owner.
  s.seed([
    { ip: ip('10.5.0.100'), id: 'legacy', ifName: '' },
    { ip: ip('10.5.0.101'), id: '', ifName: '' },
  ]);
  const released = await ipam.gc('net1', [
    { id: 'a', ifName: 'eth1' },
    { id: 'c', ifName: 'eth0' },
    { id: 'legacy', ifName: 'eth0' },
    { id: 'gone', ifName: 'eth0' },
    { id: '', ifName: '' },
  ]);
  t.same(released, ['10.5.0.2', '10.5.0.4', '10.5.0.101']);
  t.same((await s.listAll()).map((r) => `${r.ip} ${r.id}/${r.ifName}`), ['10.5.0.3 a/eth1', '10.5.0.5 c/eth0', '10.5.0.100 legacy/']);
  t.same(await ipam.gc('net1', [{ id: 'a', ifName: 'eth1' }, { id: 'c', ifName: 'eth0' }, { id: 'legacy', ifName: 'x' }]), [], 'second gc is a no-op');
  t.same(await ipam.gc('net1', []), ['10.5.0.3', '10.5.0.5', '10.5.0.100']);
});

t.test('invalid attachment keys are refused before touching the store', async (t) => {
  const { ipam } = setup();
  await rejectsWith(t, ipam.add(conf, { id: '', ifName: 'eth0' }), ErrorCode.Internal, /invalid container id/);
  await rejectsWith(t, ipam.add(conf, { id: 'a\nb', ifName: 'eth0' }), ErrorCode.Internal, /invalid container id/);
  await rejectsWith(t, ipam.add(conf, { id: 'a', ifName: 'eth 0' }), ErrorCode.Internal, /invalid ifName/);
});
