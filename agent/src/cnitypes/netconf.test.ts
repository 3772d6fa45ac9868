import t from 'tap';
import { parseBridgeNetConf } from './netconf.js';
import { parseCniArgs } from './cni-args.js';

const base = { cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.0/24' }]] } };
const parse = (extra: Record<string, unknown>) => parseBridgeNetConf(JSON.stringify({ ...base, ...extra }));

t.test('defaults', async (t) => {
  const c = parseBridgeNetConf(new TextEncoder().encode(JSON.stringify(base)));
  t.same(c, {
    cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0',
    isGateway: false, isDefaultGateway: false, forceAddress: false, ipMasq: false, hairpinMode: false, promiscMode: false,
    ipam: base.ipam, runtimeConfig: {}, args: {}, requestedIPs: [], agentSocket: '/run/nodenet/cni.sock',
  });
  t.notOk('mtu' in c);
  t.notOk('prevResult' in c);
  t.notOk('dns' in c);
});

t.test('every field read and typed', async (t) => {
  const c = parse({
    bridge: 'br-nn', isGateway: false, isDefaultGateway: true, forceAddress: true, ipMasq: true, mtu: 1450,
    hairpinMode: true, promiscMode: true, dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
    runtimeConfig: { ips: ['10.244.1.9/24'], portMappings: [] }, args: { cni: { ips: ['10.244.1.10'] } },
    agentSocket: '/run/nn-test/cni.sock', agentTimeoutMs: 5000, vlan: 0, macspoofchk: false,
    'cni.dev/valid-attachments': [{ containerID: 'abc', ifname: 'eth0' }],
    prevResult: { cniVersion: '1.1.0', interfaces: [{ name: 'eth0' }], ips: [{ address: '10.244.1.9/24', interface: 0 }] },
    capabilities: { ips: true }, someOtherPluginsKey: 1,
  });
  t.equal(c.bridge, 'br-nn');
  t.equal(c.isGateway, true, 'isDefaultGateway implies isGateway');
  t.equal(c.isDefaultGateway, true);
  t.equal(c.forceAddress, true);
  t.equal(c.ipMasq, true);
  t.equal(c.mtu, 1450);
  t.equal(c.hairpinMode, true);
  t.equal(c.promiscMode, true);
  t.same(c.dns, { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] });
  t.same(c.requestedIPs, ['10.244.1.9/24', '10.244.1.10']);
  t.same(c.validAttachments, [{ containerId: 'abc', ifName: 'eth0' }]);
  t.same(c.prevResult, { interfaces: [{ name: 'eth0' }], ips: [{ address: '10.244.1.9/24', interface: 0 }], routes: [], dns: {} });
  t.equal(c.agentSocket, '/run/nn-test/cni.sock');
  t.equal(c.agentTimeoutMs, 5000);
  t.same(c.runtimeConfig, { ips: ['10.244.1.9/24'], portMappings: [] });
  t.equal(parse({ mtu: 0 }).mtu, undefined, 'mtu 0 means default');
});

t.test('the pod MAC: runtimeConfig.mac (the "mac" capability) before args.cni.mac, lower-cased', async (t) => {
  t.equal(parse({ runtimeConfig: { mac: '0A:58:0A:F4:01:05' }, args: { cni: { mac: '0a:58:00:00:00:01' } } }).mac, '0a:58:0a:f4:01:05');
  t.equal(parse({ args: { cni: { mac: '0a:58:00:00:00:01' } } }).mac, '0a:58:00:00:00:01');
  t.notOk('mac' in parse({ runtimeConfig: { mac: '' } }), 'empty means none');
});

t.test('prevResult is read in the config version when it has none of its own', async (t) => {
  const c = parse({ cniVersion: '0.4.0', prevResult: { interfaces: [{ name: 'eth0' }], ips: [{ version: '4', address: '10.0.0.2/24', interface: 0 }] } });
  t.same(c.prevResult?.ips, [{ address: '10.0.0.2/24', interface: 0 }]);
});

t.test('decoding and version errors', async (t) => {
  t.throws(() => parseBridgeNetConf('{'), { cniCode: 6, code: 'NN_ERR_DECODING' });
  t.throws(() => parseBridgeNetConf('[]'), { cniCode: 6, code: 'NN_ERR_DECODING' });
  t.throws(() => parseBridgeNetConf(new Uint8Array([0x7b, 0xff, 0x7d])), { cniCode: 6, code: 'NN_ERR_DECODING' }, 'invalid UTF-8');
  t.throws(() => parse({ cniVersion: undefined }), { cniCode: 1, message: /^cniVersion/ });
  t.throws(() => parse({ cniVersion: '0.2.0' }), { cniCode: 1, message: /^cniVersion: unsupported CNI version "0\.2\.0"/ });
});

t.test('invalid fields are CNI 7 and named', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ name: undefined }, /^name: required value/],
    [{ name: 'bad name' }, /^name: invalid characters/],
    [{ type: 5 }, /^type: must be a string/],
    [{ type: '' }, /^type: required value/],
    [{ bridge: 'this-name-is-too-long' }, /^bridge: not a valid interface name/],
    [{ bridge: 'br:0' }, /^bridge: not a valid interface name/],
    [{ isGateway: 'true' }, /^isGateway: must be true or false/],
    [{ isDefaultGateway: 1 }, /^isDefaultGateway: must be true or false/],
    [{ forceAddress: 'false' }, /^forceAddress: must be true or false/],
    [{ ipMasq: 'yes' }, /^ipMasq: must be true or false/],
    [{ hairpinMode: 0 }, /^hairpinMode: must be true or false/],
    [{ promiscMode: [] }, /^promiscMode: must be true or false/],
    [{ mtu: 1500.5 }, /^mtu: must be an integer/],
    [{ mtu: 70000 }, /^mtu: must be an integer from 0 to 65535/],
    [{ mtu: 40 }, /^mtu: must be at least 68/],
    [{ dns: [] }, /^dns: must be an object/],
    [{ dns: { nameservers: ['dns.example'] } }, /^dns\.nameservers\[0\]: not an IP address/],
    [{ dns: { domain: 3 } }, /^dns\.domain: must be a string/],
    [{ runtimeConfig: 'x' }, /^runtimeConfig: must be an object/],
    [{ runtimeConfig: { ips: ['10.0.0.300'] } }, /^runtimeConfig\.ips\[0\]: not an IP address/],
    [{ args: { cni: { ips: 'x' } } }, /^args\.cni\.ips: must be an array of strings/],
    [{ runtimeConfig: { mac: 'zz:00:00:00:00:01' } }, /^runtimeConfig\.mac: not an Ethernet MAC address/],
    [{ args: { cni: { mac: '01:00:5e:00:00:01' } } }, /^args\.cni\.mac: 01:00:5e:00:00:01 is a multicast address/],
    [{ agentSocket: 'relative.sock' }, /^agentSocket: must be an absolute path/],
    [{ agentTimeoutMs: 0 }, /^agentTimeoutMs: must be an integer/],
    [{ 'cni.dev/valid-attachments': [{ containerID: 'a' }] }, /^cni\.dev\/valid-attachments\[0\]\.ifname: required value/],
    [{ prevResult: { ips: [{ address: 'x' }] } }, /^prevResult\.ips\[0\]\.address/],
  ];
  for (const [extra, msg] of cases) {
    t.throws(() => parse(extra), { cniCode: 7, code: 'NN_ERR_INVALID_CONFIG', message: msg }, String(msg));
  }
  try {
    parse({ mtu: 'big' });
    t.fail('expected a throw');
  } catch (e) {
    t.equal((e as { details?: string }).details, 'mtu', 'details carry the field path alone');
  }
});

t.test('bridge features nodenet lacks are CNI 2 unless left at their default', async (t) => {
  for (const [k, v] of [['vlan', 100], ['vlanTrunk', [{ id: 5 }]], ['macspoofchk', true], ['enabledad', true], ['disableContainerInterface', true], ['portIsolation', true]] as const) {
    t.throws(() => parse({ [k]: v }), { cniCode: 2, code: 'NN_ERR_UNSUPPORTED_FIELD', message: new RegExp(`^${k}: not supported`) }, k);
  }
  t.doesNotThrow(() => parse({ vlan: 0, vlanTrunk: [], macspoofchk: false, enabledad: false, disableContainerInterface: false, portIsolation: false }));
});

t.test('CNI_ARGS', async (t) => {
  const m = parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;IP=10.244.1.9;X=a=b;');
  t.same([...m], [['IgnoreUnknown', '1'], ['K8S_POD_NAMESPACE', 'default'], ['K8S_POD_NAME', 'web-0'], ['IP', '10.244.1.9'], ['X', 'a=b']]);
  t.same([...parseCniArgs('')], []);
  t.throws(() => parseCniArgs('A=1;junk'), { cniCode: 4, message: /CNI_ARGS: invalid pair "junk"/ });
  t.throws(() => parseCniArgs('=1'), { cniCode: 4, code: 'NN_ERR_INVALID_ENV' });
});
