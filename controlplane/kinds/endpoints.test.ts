/**
 * The Endpoints strategy: SetDefaults_Endpoints and ValidateEndpoints in kube-apiserver's field-error words, one
 * case per rule (pure), then the REST path: a bad Endpoints is refused with upstream's 422 and nothing is stored,
 * and an update of a missing Endpoints creates it (AllowCreateOnUpdate).
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import type { FieldError } from '../api/errors.js';
import { RESOURCES } from '../api/resources.js';
import { Rest } from '../api/rest.js';
import { loadSchemas } from '../api/schema.js';
import { failure } from '../testing/control-plane.js';
import { openTestStore } from '../testing/store.js';
import { STRATEGIES } from './kinds.js';

type O = Record<string, unknown>;
const S = STRATEGIES['endpoints']!;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const ep = (subsets: unknown[]): O => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'web', namespace: 'default' }, subsets });
const v = (subsets: unknown[]) => {
  const o = structuredClone(ep(subsets));
  S.defaults(o);
  return text(S.validate(o, null));
};

t.test('a port without a protocol is TCP (SetDefaults_Endpoints)', async (t) => {
  const o = ep([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80 }, { port: 53, protocol: 'UDP' }] }]);
  S.defaults(o);
  t.same(((o['subsets'] as O[])[0]!['ports'] as O[]).map((p) => p['protocol']), ['TCP', 'UDP']);
});

t.test('valid: ready and not-ready addresses with hostname, nodeName and targetRef; a headless subset without ports; none at all', async (t) => {
  t.same(v([{
    addresses: [{ ip: '10.244.1.5', hostname: 'web-0', nodeName: 'node1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-0', uid: 'u1' } }],
    notReadyAddresses: [{ ip: '2001:db8::5' }],
    ports: [{ name: 'http', port: 80, appProtocol: 'kubernetes.io/h2c' }, { name: 'dns', port: 53, protocol: 'UDP' }],
  }]), []);
  t.same(v([{ addresses: [{ ip: '10.244.1.6' }] }]), [], 'a headless Service\'s endpoints may have no ports');
  t.same(v([]), [], 'no subsets');
  t.same(v([{ notReadyAddresses: [{ ip: '10.244.1.7' }], ports: [{ port: 8080 }] }]), [], 'only not-ready addresses; one port needs no name');
});

t.test('a subset needs addresses or notReadyAddresses', async (t) => {
  t.same(v([{ ports: [{ port: 80 }] }]), ['subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`']);
  t.same(v([{ addresses: [], notReadyAddresses: [], ports: [{ port: 80 }] }]), ['subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`']);
});

t.test('addresses: a valid IP that is not special; hostname a label; nodeName a subdomain', async (t) => {
  t.same(v([{ addresses: [{ ip: '10.0.0.300' }] }]), [
    'subsets[0].addresses[0].ip: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    'subsets[0].addresses[0].ip: Invalid value: "10.0.0.300": must be a valid IP address',
  ]);
  t.same(v([{ addresses: [{}] }]), [
    'subsets[0].addresses[0].ip: Invalid value: "": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    'subsets[0].addresses[0].ip: Invalid value: "": must be a valid IP address',
  ], 'an address without an ip');
  t.same(v([{ addresses: [{ ip: '127.0.0.1' }], notReadyAddresses: [{ ip: '169.254.169.254' }, { ip: '0.0.0.0' }, { ip: '224.0.0.251' }, { ip: 'fe80::1' }] }]), [
    'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'subsets[0].notReadyAddresses[0].ip: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'subsets[0].notReadyAddresses[1].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
    'subsets[0].notReadyAddresses[2].ip: Invalid value: "224.0.0.251": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    'subsets[0].notReadyAddresses[3].ip: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
  ]);
  t.match(v([{ addresses: [{ ip: '10.244.1.5', hostname: 'Web_0' }] }]), [/^subsets\[0\]\.addresses\[0\]\.hostname: Invalid value: "Web_0": a lowercase RFC 1123 label must consist of/]);
  t.match(v([{ addresses: [{ ip: '10.244.1.5', nodeName: 'Node 1' }] }]), [/^subsets\[0\]\.addresses\[0\]\.nodeName: Invalid value: "Node 1": a lowercase RFC 1123 subdomain must consist of/]);
  t.match(v([{ addresses: [{ ip: '10.244.1.5', nodeName: '' }] }]), [/^subsets\[0\]\.addresses\[0\]\.nodeName: Invalid value: "": a lowercase RFC 1123 subdomain/], 'a nodeName that is set must be valid, even empty');
  t.same(v([{ addresses: [{ ip: '10.244.1.5', hostname: '' }] }]), [], 'an empty hostname is unset');
});

t.test('ports: names required when there are several, labels; numbers 1..65535; protocols; appProtocol', async (t) => {
  t.same(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80 }, { name: 'b', port: 81 }] }]), ['subsets[0].ports[0].name: Required value']);
  t.match(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ name: 'HTTP', port: 80 }] }]), [/^subsets\[0\]\.ports\[0\]\.name: Invalid value: "HTTP": a lowercase RFC 1123 label/]);
  t.same(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 0 }] }]), ['subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive']);
  t.same(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 70000 }] }]), ['subsets[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive']);
  t.same(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80, protocol: 'ICMP' }] }]), ['subsets[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']);
  t.match(v([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80, appProtocol: 'not a name' }] }]), [/^subsets\[0\]\.ports\[0\]\.appProtocol: Invalid value: "not a name": name part must consist of/]);
  t.same(text(S.validate(ep([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80 }] }]), null)), ['subsets[0].ports[0].protocol: Required value'], 'without the defaults: the protocol is required');
});

t.test('through the REST layer: upstream\'s 422, nothing stored; an update of a missing Endpoints creates it', async (t) => {
  const clock = new FakeClock();
  const ts = openTestStore({ clock });
  t.teardown(() => ts.close());
  const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
  const rest = new Rest({ storage: ts.storage, cache: ts.cache, schemas, clock });
  const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
  await rest.create(R('namespaces'), '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const st = await failure(() => rest.create(R('endpoints'), 'default', ep([{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: 80 }] }])));
  t.equal(st.code, 422);
  t.equal(st.message, 'Endpoints "web" is invalid: subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)');
  t.notOk(ts.cache.get('endpoints/default/web'), 'not stored');
  const put = await rest.update(R('endpoints'), 'default', 'web', ep([{ addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 80 }] }]));
  t.match(put.object, { subsets: [{ ports: [{ port: 80, protocol: 'TCP' }] }] }, 'created by PUT, defaulted');
  t.ok(ts.cache.get('endpoints/default/web'));
});
