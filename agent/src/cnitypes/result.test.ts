import t from 'tap';
import { encodeResult, type CniResult } from './result.js';
import { parsePrevResult } from './prev-result.js';
import { SUPPORTED_VERSIONS } from './version.js';
import { SUPPORTED_VERSIONS as CONTRACT_VERSIONS } from '../../../proto/cni/v1/contract.js';
import { NodenetError } from '../../../lib/errors/errors.js';

const full: CniResult = {
  interfaces: [
    { name: 'cbr0', mac: '0a:58:0a:f4:01:01', mtu: 1450 },
    { name: 'veth1234567890a', mac: '0a:58:0a:f4:01:02', mtu: 1450 },
    { name: 'eth0', mac: '0a:58:0a:f4:01:05', mtu: 1450, sandbox: '/var/run/netns/nn-x', socketPath: '/run/vhost.sock', pciID: '0000:00:1f.6' },
  ],
  ips: [
    { address: '10.244.1.5/24', gateway: '10.244.1.1', interface: 2 },
    { address: 'fd00::5/64', interface: 2 },
  ],
  routes: [
    { dst: '0.0.0.0/0', gw: '10.244.1.1', mtu: 1400, advmss: 1360, priority: 10, table: 100, scope: 0 },
    { dst: '10.96.0.0/12' },
  ],
  dns: { nameservers: ['10.96.0.10'], domain: 'cluster.local', search: ['default.svc.cluster.local'], options: ['ndots:5'] },
};

t.test('the agent speaks the versions of the contract (the shim answers VERSION with them: cni/shim.test.ts)', async (t) => {
  t.same([...SUPPORTED_VERSIONS], [...CONTRACT_VERSIONS]);
});

t.test('1.1.0 keeps every field', async (t) => {
  t.same(JSON.parse(encodeResult(full, '1.1.0')), {
    cniVersion: '1.1.0',
    interfaces: [
      { name: 'cbr0', mac: '0a:58:0a:f4:01:01', mtu: 1450 },
      { name: 'veth1234567890a', mac: '0a:58:0a:f4:01:02', mtu: 1450 },
      { name: 'eth0', mac: '0a:58:0a:f4:01:05', mtu: 1450, sandbox: '/var/run/netns/nn-x', socketPath: '/run/vhost.sock', pciID: '0000:00:1f.6' },
    ],
    ips: [
      { interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' },
      { interface: 2, address: 'fd00::5/64' },
    ],
    routes: [{ dst: '0.0.0.0/0', gw: '10.244.1.1', mtu: 1400, advmss: 1360, priority: 10, table: 100, scope: 0 }, { dst: '10.96.0.0/12' }],
    dns: { nameservers: ['10.96.0.10'], domain: 'cluster.local', search: ['default.svc.cluster.local'], options: ['ndots:5'] },
  });
});

t.test('1.0.0 drops the fields 1.1 added and has no ip version', async (t) => {
  const r = JSON.parse(encodeResult(full, '1.0.0'));
  t.equal(r.cniVersion, '1.0.0');
  t.same(r.interfaces[2], { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/nn-x' });
  t.same(r.interfaces[0], { name: 'cbr0', mac: '0a:58:0a:f4:01:01' });
  t.same(r.ips[0], { interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' });
  t.same(r.routes, [{ dst: '0.0.0.0/0', gw: '10.244.1.1' }, { dst: '10.96.0.0/12' }]);
  t.same(r.dns.nameservers, ['10.96.0.10']);
});

for (const v of ['0.3.0', '0.3.1', '0.4.0'] as const) {
  t.test(`${v} puts "version" in each ip, derived from the address`, async (t) => {
    const r = JSON.parse(encodeResult(full, v));
    t.equal(r.cniVersion, v);
    t.same(r.ips, [
      { version: '4', interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' },
      { version: '6', interface: 2, address: 'fd00::5/64' },
    ]);
    t.same(r.interfaces[2], { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/nn-x' });
    t.same(r.routes[0], { dst: '0.0.0.0/0', gw: '10.244.1.1' });
  });
}

t.test('empty lists and an empty dns are omitted', async (t) => {
  const r = JSON.parse(encodeResult({ interfaces: [], ips: [{ address: '10.0.0.2/24' }], routes: [], dns: {} }, '1.1.0'));
  t.same(r, { cniVersion: '1.1.0', ips: [{ address: '10.0.0.2/24' }] });
});

t.test('an unsupported version is CNI 1; a dangling interface index is an internal error', async (t) => {
  t.throws(() => encodeResult(full, '0.2.0'), { cniCode: 1, code: 'NN_ERR_INCOMPATIBLE_VERSION' });
  t.throws(() => encodeResult(full, '2.0.0'), { cniCode: 1, code: 'NN_ERR_INCOMPATIBLE_VERSION' });
  const err = (() => {
    try {
      encodeResult({ interfaces: [], ips: [{ address: '10.0.0.2/24', interface: 0 }], routes: [], dns: {} }, '1.0.0');
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  t.ok(err instanceof NodenetError);
  t.equal((err as NodenetError).cniCode, 999);
});

t.test('encode then parse gives the same result back, per version (minus what the version cannot carry)', async (t) => {
  for (const v of SUPPORTED_VERSIONS) {
    const back = parsePrevResult(JSON.parse(encodeResult(full, v)), v);
    if (v === '1.1.0') {
      t.same(back, full, v);
    } else {
      t.same(back.ips, full.ips, `${v} ips`);
      t.same(back.dns, full.dns, `${v} dns`);
      t.same(back.routes, full.routes.map((r) => (r.gw ? { dst: r.dst, gw: r.gw } : { dst: r.dst })), `${v} routes`);
      t.same(back.interfaces.map((i) => Object.keys(i).sort()), [['mac', 'name'], ['mac', 'name'], ['mac', 'name', 'sandbox']], `${v} interfaces`);
    }
  }
});
