import t from 'tap';
import { parsePrevResult } from './prev-result.js';

// Results as the reference plugins print them, one per version.
const v040 = {
  cniVersion: '0.4.0',
  interfaces: [
    { name: 'cni0', mac: '6e:4b:8f:3a:2e:01' },
    { name: 'veth3a2b1c', mac: '6e:4b:8f:3a:2e:02' },
    { name: 'eth0', mac: '6e:4b:8f:3a:2e:03', sandbox: '/var/run/netns/cni-1' },
  ],
  ips: [{ version: '4', interface: 2, address: '10.22.0.5/16', gateway: '10.22.0.1' }],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: {},
};

t.test('0.3.0, 0.3.1 and 0.4.0 results convert to the 1.1 shape (ip version dropped)', async (t) => {
  for (const v of ['0.3.0', '0.3.1', '0.4.0']) {
    const r = parsePrevResult({ ...v040, cniVersion: v }, v);
    t.same(r, {
      interfaces: v040.interfaces,
      ips: [{ interface: 2, address: '10.22.0.5/16', gateway: '10.22.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: {},
    }, v);
  }
});

t.test('1.0.0 and 1.1.0 results parse, 1.1 fields included', async (t) => {
  const r10 = parsePrevResult({ cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: '/proc/1/ns/net' }], ips: [{ address: '10.0.0.2/24', interface: 0 }] }, '1.0.0');
  t.same(r10, { interfaces: [{ name: 'eth0', sandbox: '/proc/1/ns/net' }], ips: [{ address: '10.0.0.2/24', interface: 0 }], routes: [], dns: {} });
  const r11 = parsePrevResult({
    cniVersion: '1.1.0',
    interfaces: [{ name: 'eth0', mtu: 1450, socketPath: '/s', pciID: '0000:01:00.0' }],
    ips: [{ address: 'fd00::2/64', gateway: 'fd00::1' }],
    routes: [{ dst: '10.96.0.0/12', gw: '10.0.0.1', mtu: 1400, advmss: 1360, priority: 5, table: 254, scope: 253 }],
    dns: { nameservers: ['10.96.0.10', 'fd00::a'], search: ['svc.cluster.local'], options: ['ndots:5'], domain: 'cluster.local' },
  }, '1.1.0');
  t.same(r11.interfaces, [{ name: 'eth0', mtu: 1450, socketPath: '/s', pciID: '0000:01:00.0' }]);
  t.same(r11.routes, [{ dst: '10.96.0.0/12', gw: '10.0.0.1', mtu: 1400, advmss: 1360, priority: 5, table: 254, scope: 253 }]);
  t.same(r11.dns, { nameservers: ['10.96.0.10', 'fd00::a'], domain: 'cluster.local', search: ['svc.cluster.local'], options: ['ndots:5'] });
});

t.test('without its own cniVersion the config version decides the format; with one, it must be supported', async (t) => {
  const { cniVersion: _drop, ...noVersion } = v040;
  t.same(parsePrevResult(noVersion, '0.4.0').ips, [{ interface: 2, address: '10.22.0.5/16', gateway: '10.22.0.1' }]);
  t.throws(() => parsePrevResult({ ...v040, cniVersion: '0.2.0' }, '0.4.0'), { cniCode: 1, message: /prevResult\.cniVersion/ });
  t.throws(() => parsePrevResult(noVersion, '9.9.9'), { cniCode: 1, code: 'NN_ERR_INCOMPATIBLE_VERSION' });
});

t.test('malformed results fail with CNI 7 naming the field', async (t) => {
  const cases: [unknown, RegExp][] = [
    ['nope', /^prevResult: must be an object/],
    [{ ...v040, interfaces: {} }, /^prevResult\.interfaces: must be an array/],
    [{ ...v040, interfaces: [{ mac: 'aa:bb:cc:dd:ee:ff' }] }, /^prevResult\.interfaces\[0\]\.name: required value/],
    [{ ...v040, interfaces: [{ name: 'eth0', mac: 'zz' }], ips: [] }, /^prevResult\.interfaces\[0\]\.mac: not a MAC/],
    [{ ...v040, ips: [{ version: '4', address: '10.22.0.5' }] }, /^prevResult\.ips\[0\]\.address: not an address with prefix/],
    [{ ...v040, ips: [{ version: '4', address: '10.22.0.5/33' }] }, /^prevResult\.ips\[0\]\.address/],
    [{ ...v040, ips: [{ version: '6', address: '10.22.0.5/16' }] }, /^prevResult\.ips\[0\]\.version: is "6" but address 10\.22\.0\.5\/16 is IPv4/],
    [{ ...v040, ips: [{ address: '10.22.0.5/16', gateway: '10.22.0.300' }] }, /^prevResult\.ips\[0\]\.gateway: not an IP/],
    [{ ...v040, ips: [{ address: '10.22.0.5/16', interface: 3 }] }, /^prevResult\.ips\[0\]\.interface: index 3 names no interface/],
    [{ ...v040, ips: [{ address: '10.22.0.5/16', interface: -1 }] }, /^prevResult\.ips\[0\]\.interface: must be an integer/],
    [{ ...v040, routes: [{ gw: '10.0.0.1' }] }, /^prevResult\.routes\[0\]\.dst: required value/],
    [{ ...v040, routes: [{ dst: '0.0.0.0/0', gw: 'x' }] }, /^prevResult\.routes\[0\]\.gw: not an IP/],
    [{ ...v040, cniVersion: '1.1.0', routes: [{ dst: '0.0.0.0/0', scope: 256 }] }, /^prevResult\.routes\[0\]\.scope: must be an integer from 0 to 255/],
    [{ ...v040, dns: { nameservers: ['ns1'] } }, /^prevResult\.dns\.nameservers\[0\]: not an IP/],
    [{ ...v040, dns: { search: 'x' } }, /^prevResult\.dns\.search: must be an array/],
  ];
  for (const [raw, msg] of cases) {
    t.throws(() => parsePrevResult(raw, '0.4.0'), { cniCode: 7, code: 'NN_ERR_INVALID_CONFIG', message: msg }, String(msg));
  }
});

t.test('a custom root names fields from it', async (t) => {
  t.throws(() => parsePrevResult({ ips: [{}] }, '1.0.0', 'result'), { message: /^result\.ips\[0\]\.address/ });
});
