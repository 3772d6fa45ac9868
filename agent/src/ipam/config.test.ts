import t, { type Test } from 'tap';
import { NodenetError, ErrorCode, CniCode } from '../../../lib/errors/errors.js';
import { parseIpamConf, parseRequestedIPs, parseNetworkName } from './config.js';
import { parseRange, rangeContains, rangesOverlap } from './range.js';

/** Assert fn throws IpamInvalid / CNI 7 whose message starts with `field`. */
function invalid(t: Test, fn: () => unknown, field: string, also?: RegExp): void {
  try {
    fn();
    t.fail(`expected an IpamInvalid error for ${field}`);
  } catch (e) {
    t.ok(e instanceof NodenetError, 'NodenetError');
    const ne = e as NodenetError;
    t.equal(ne.code, ErrorCode.IpamInvalid);
    t.equal(ne.cniCode, CniCode.InvalidNetworkConfig);
    t.ok(ne.message.startsWith(`${field}`), `message "${ne.message}" names ${field}`);
    if (also) t.match(ne.message, also);
  }
}

t.test('defaults follow host-local', async (t) => {
  const r = parseRange({ subnet: '10.244.1.0/24' }, 'r');
  t.same(r, { subnet: '10.244.1.0/24', prefix: 24, rangeStart: '10.244.1.1', rangeEnd: '10.244.1.254', gateway: '10.244.1.1' });
  const r2 = parseRange({ subnet: '10.0.0.0/30', gateway: '10.0.0.2' }, 'r');
  t.equal(r2.rangeStart, '10.0.0.1');
  t.equal(r2.rangeEnd, '10.0.0.2');
  t.ok(rangeContains(r, '10.244.1.1'));
  t.notOk(rangeContains(r, '10.244.1.255'));
  t.notOk(rangeContains(r, '10.244.1.0'));
  t.ok(rangesOverlap(parseRange({ subnet: '10.0.0.0/24', rangeEnd: '10.0.0.100' }, 'a'), parseRange({ subnet: '10.0.0.0/24', rangeStart: '10.0.0.100' }, 'b')));
  t.notOk(rangesOverlap(parseRange({ subnet: '10.0.0.0/24', rangeEnd: '10.0.0.99' }, 'a'), parseRange({ subnet: '10.0.0.0/24', rangeStart: '10.0.0.100' }, 'b')));
});

t.test('full form with ranges and routes', async (t) => {
  const c = parseIpamConf('podnet', {
    type: 'host-local',
    ranges: [[{ subnet: '10.1.0.0/24', rangeStart: '10.1.0.10', rangeEnd: '10.1.0.20' }, { subnet: '10.1.1.0/24', gateway: '10.1.1.254' }], [{ subnet: '10.2.0.0/16' }]],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.1.0.1' }],
    dataDir: '/var/lib/x',
    resolvConf: '/etc/resolv.conf',
    somethingElse: 1,
  });
  t.equal(c.name, 'podnet');
  t.equal(c.type, 'host-local');
  t.equal(c.rangeSets.length, 2);
  t.same(c.rangeSets[0]![0], { subnet: '10.1.0.0/24', prefix: 24, rangeStart: '10.1.0.10', rangeEnd: '10.1.0.20', gateway: '10.1.0.1' });
  t.same(c.rangeSets[0]![1], { subnet: '10.1.1.0/24', prefix: 24, rangeStart: '10.1.1.1', rangeEnd: '10.1.1.254', gateway: '10.1.1.254' });
  t.same(c.rangeSets[1]![0]!.rangeEnd, '10.2.255.254');
  t.same(c.routes, [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.1.0.1' }]);
  t.equal(c.dataDir, '/var/lib/x');
  t.equal(c.resolvConf, '/etc/resolv.conf');
});

t.test('legacy flat form becomes the first range set', async (t) => {
  const c = parseIpamConf('n', {
    type: 'host-local',
    subnet: '10.9.0.0/24',
    rangeStart: '10.9.0.50',
    rangeEnd: '10.9.0.60',
    gateway: '10.9.0.254',
    ranges: [[{ subnet: '10.10.0.0/24' }]],
  });
  t.equal(c.rangeSets.length, 2);
  t.same(c.rangeSets[0], [{ subnet: '10.9.0.0/24', prefix: 24, rangeStart: '10.9.0.50', rangeEnd: '10.9.0.60', gateway: '10.9.0.254' }]);
  t.equal(c.rangeSets[1]![0]!.subnet, '10.10.0.0/24');
  invalid(t, () => parseIpamConf('n', { subnet: '10.9.0.0/24', rangeStart: '10.8.0.1' }), 'ipam.rangeStart', /not in subnet/);
});

t.test('default subnet from the caller', async (t) => {
  const c = parseIpamConf('n', { type: 'host-local' }, { defaultSubnet: '10.244.3.0/24' });
  t.same(c.rangeSets, [[{ subnet: '10.244.3.0/24', prefix: 24, rangeStart: '10.244.3.1', rangeEnd: '10.244.3.254', gateway: '10.244.3.1' }]]);
  const c2 = parseIpamConf('n', { ranges: [[{ rangeStart: '10.244.3.100' }]] }, { defaultSubnet: '10.244.3.0/24' });
  t.equal(c2.rangeSets[0]![0]!.subnet, '10.244.3.0/24');
  t.equal(c2.rangeSets[0]![0]!.rangeStart, '10.244.3.100');
  // An explicit subnet wins over the default.
  t.equal(parseIpamConf('n', { subnet: '10.5.0.0/24' }, { defaultSubnet: '10.244.3.0/24' }).rangeSets[0]![0]!.subnet, '10.5.0.0/24');
  invalid(t, () => parseIpamConf('n', { type: 'host-local' }), 'ipam.ranges', /no IP ranges/);
  invalid(t, () => parseIpamConf('n', { ranges: [[{}]] }), 'ipam.ranges[0][0].subnet', /required/);
  invalid(t, () => parseIpamConf('n', {}, { defaultSubnet: '10.244.3.7/24' }), 'ipam.subnet (default pod CIDR 10.244.3.7/24)', /host bits/);
});

t.test('each error names its field', async (t) => {
  const p = (ipam: unknown): unknown => parseIpamConf('n', ipam);
  invalid(t, () => parseIpamConf('bad/name', {}), 'name');
  invalid(t, () => parseIpamConf('', {}), 'name');
  invalid(t, () => p(null), 'ipam');
  invalid(t, () => p({ type: 3, subnet: '10.0.0.0/24' }), 'ipam.type');
  invalid(t, () => p({ ranges: {} }), 'ipam.ranges', /array/);
  invalid(t, () => p({ ranges: [{}] }), 'ipam.ranges[0]', /array/);
  invalid(t, () => p({ ranges: [[]] }), 'ipam.ranges[0]', /empty/);
  invalid(t, () => p({ ranges: [['x']] }), 'ipam.ranges[0][0]', /object/);
  invalid(t, () => p({ ranges: [[{ subnet: 24 }]] }), 'ipam.ranges[0][0].subnet', /string/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0' }]] }), 'ipam.ranges[0][0].subnet', /CIDR/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.1/24' }]] }), 'ipam.ranges[0][0].subnet', /host bits.*10\.0\.0\.0\/24/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/31' }]] }), 'ipam.ranges[0][0].subnet', /too small/);
  invalid(t, () => p({ ranges: [[{ subnet: 'fd00::/64' }]] }), 'ipam.ranges[0][0].subnet', /IPv6.*IPv4 only/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', gateway: 'fd00::1' }]] }), 'ipam.ranges[0][0].gateway', /IPv6/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', gateway: '10.0.1.1' }]] }), 'ipam.ranges[0][0].gateway', /not in subnet/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', gateway: '10.0.0.255' }]] }), 'ipam.ranges[0][0].gateway', /broadcast/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.0' }]] }), 'ipam.ranges[0][0].rangeStart', /network address/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', rangeEnd: '10.0.0.255' }]] }), 'ipam.ranges[0][0].rangeEnd', /broadcast/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.9', rangeEnd: '10.0.0.8' }]] }), 'ipam.ranges[0][0].rangeEnd', /before rangeStart/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.300' }]] }), 'ipam.ranges[0][0].rangeStart', /not an IPv4/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.1', rangeEnd: '10.0.0.1' }]] }), 'ipam.ranges[0][0]', /no allocatable/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24' }, { subnet: '10.0.0.0/25' }]] }), 'ipam.ranges[0][1]', /overlaps ipam.ranges\[0\]\[0\]/);
  invalid(t, () => p({ ranges: [[{ subnet: '10.0.0.0/24' }], [{ subnet: '10.0.0.128/25' }]] }), 'ipam.ranges[1]', /overlaps ipam.ranges\[0\]/);
  invalid(t, () => p({ subnet: '10.0.0.0/24', ranges: [[{ subnet: '10.0.0.0/24' }]] }), 'ipam.ranges[0]', /overlaps ipam$/);
  invalid(t, () => p({ subnet: '10.0.0.0/24', routes: {} }), 'ipam.routes', /array/);
  invalid(t, () => p({ subnet: '10.0.0.0/24', routes: [{}] }), 'ipam.routes[0].dst', /string/);
  invalid(t, () => p({ subnet: '10.0.0.0/24', routes: [{ dst: '10.1.0.0/16', gw: 'x' }] }), 'ipam.routes[0].gw');
  invalid(t, () => p({ subnet: '10.0.0.0/24', routes: [{ dst: '0.0.0.0/0' }, { dst: '10.1.0.1/16' }] }), 'ipam.routes[1].dst', /host bits/);
  invalid(t, () => p({ subnet: '10.0.0.0/24', dataDir: 7 }), 'ipam.dataDir');
});

t.test('network names', async (t) => {
  t.equal(parseNetworkName('cbr0.net_1-a'), 'cbr0.net_1-a');
  for (const bad of ['..', '.hidden', 'a/b', '-x', 'a b']) invalid(t, () => parseNetworkName(bad), 'name');
});

t.test('requested IPs from CNI_ARGS, args and runtimeConfig', async (t) => {
  t.same(parseRequestedIPs({}), []);
  t.same(
    parseRequestedIPs({
      cniArgs: 'IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.0.0.5,10.1.0.5',
      argsIPs: ['10.2.0.5', '10.0.0.5'],
      runtimeConfigIPs: ['10.3.0.5/24'],
    }),
    ['10.0.0.5', '10.1.0.5', '10.2.0.5', '10.3.0.5'],
  );
  invalid(t, () => parseRequestedIPs({ cniArgs: 'IP=10.0.0.256' }), 'CNI_ARGS IP');
  invalid(t, () => parseRequestedIPs({ runtimeConfigIPs: ['fd00::5/64'] }), 'runtimeConfig.ips[0]', /IPv6/);
  invalid(t, () => parseRequestedIPs({ runtimeConfigIPs: ['10.0.0.1/40'] }), 'runtimeConfig.ips[0]', /prefix/);
  invalid(t, () => parseRequestedIPs({ argsIPs: '10.0.0.1' }), 'args.cni.ips', /array/);
});
