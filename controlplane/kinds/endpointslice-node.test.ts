/**
 * The EndpointSlice and Node strategies on their own (pure): the rules the agents depend on that
 * kinds.test.ts does not already cover, one case per rule, in kube-apiserver's words.
 */
import t from 'tap';
import type { FieldError } from '../api/errors.js';
import { STRATEGIES } from './kinds.js';

type O = Record<string, unknown>;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const ES = STRATEGIES['endpointslices.discovery.k8s.io']!;
const NODE = STRATEGIES['nodes']!;

const slice = (extra: O = {}): O => ({
  apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-abc', namespace: 'default' },
  addressType: 'IPv4', endpoints: [{ addresses: ['10.244.1.5'], conditions: { ready: true } }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  ...extra,
});
const es = (o: O, old: O | null = null) => {
  const c = structuredClone(o);
  ES.defaults(c);
  return text(ES.validate(c, old));
};
const ep = (e: O) => slice({ endpoints: [{ addresses: ['10.244.1.5'], ...e }] });

t.test('EndpointSlice: appProtocol is a qualified name', async (t) => {
  t.same(es(slice({ ports: [{ name: 'http', port: 80, appProtocol: 'kubernetes.io/h2c' }] })), []);
  t.match(es(slice({ ports: [{ name: 'http', port: 80, appProtocol: 'h2c!' }] })), [/^ports\[0\]\.appProtocol: Invalid value: "h2c!": name part must consist of alphanumeric characters/]);
});

t.test('EndpointSlice: hints for at most 8 zones, unique, label values', async (t) => {
  t.same(es(ep({ hints: { forZones: [{ name: 'zone-a' }, { name: 'zone-b' }] } })), []);
  t.same(es(ep({ hints: { forZones: Array.from({ length: 9 }, (_, i) => ({ name: `z${i}` })) } })), ['endpoints[0].hints.forZones: Too many: 9: must have at most 8 items']);
  t.same(es(ep({ hints: { forZones: [{ name: 'zone-a' }, { name: 'zone-a' }] } })), ['endpoints[0].hints.forZones[1].name: Duplicate value: "zone-a"']);
  t.match(es(ep({ hints: { forZones: [{ name: 'zone a' }] } })), [/^endpoints\[0\]\.hints\.forZones\[0\]\.name: Invalid value: "zone a": a valid label must be an empty string/]);
});

t.test('EndpointSlice: deprecatedTopology: at most 16 labels, valid ones', async (t) => {
  t.same(es(ep({ deprecatedTopology: { 'kubernetes.io/hostname': 'node-1' } })), []);
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
  t.same(es(ep({ deprecatedTopology: many })), ['endpoints[0].deprecatedTopology: Too many: 17: must have at most 16 items']);
  t.match(es(ep({ deprecatedTopology: { 'bad key': 'v' } })), [/^endpoints\[0\]\.deprecatedTopology: Invalid value: "bad key": name part must consist of/]);
});

t.test('EndpointSlice: addresses: special IPv6 ones, and each label of an FQDN', async (t) => {
  const v6 = (addresses: string[]) => es(slice({ addressType: 'IPv6', endpoints: [{ addresses }] }));
  t.same(v6(['::', '::ffff:127.0.0.1', 'fe9f::1', 'ff12::1']), [
    'endpoints[0].addresses[0]: Invalid value: "::": may not be unspecified (::)',
    'endpoints[0].addresses[1]: Invalid value: "::ffff:127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[0].addresses[2]: Invalid value: "fe9f::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'endpoints[0].addresses[3]: Invalid value: "ff12::1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
  ], 'an IPv4-mapped address is judged as IPv4; link-local multicast whatever the flags');
  t.same(v6(['2001:db8::1', 'fec0::1', 'ff05::1']), [], 'site-local and other multicast scopes are not special');
  const long = `${'a'.repeat(64)}.example.com`;
  t.same(es(slice({ addressType: 'FQDN', endpoints: [{ addresses: [long] }] })), [`endpoints[0].addresses[0]: Invalid value: "${'a'.repeat(64)}": must be no more than 63 characters`]);
});

t.test('EndpointSlice: on update the immutable addressType is reported after the slice\'s own errors', async (t) => {
  t.same(text(ES.validate(slice({ addressType: 'FQDN', endpoints: [{ addresses: ['nope'] }] }), slice())), [
    'endpoints[0].addresses[0]: Invalid value: "nope": should be a domain with at least two segments separated by dots',
    'addressType: Invalid value: "FQDN": field is immutable',
  ]);
});

const node = (spec: O = {}, status: O = {}): O => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec, status });
const nv = (o: O, old: O | null = null) => {
  const c = structuredClone(o);
  NODE.defaults(c);
  return text(NODE.validate(c, old));
};

t.test('Node: taints (reported under metadata.taints, as upstream)', async (t) => {
  t.same(nv(node({ taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'dedicated', value: 'gpu', effect: 'NoExecute' }] })), [], 'one key, two effects');
  t.same(nv(node({ taints: [{ key: 'k', effect: 'Evict' }] })), ['metadata.taints[0].effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"']);
  t.same(nv(node({ taints: [{ key: 'k' }] })), ['metadata.taints[0].effect: Required value']);
  t.match(nv(node({ taints: [{ key: 'bad key', effect: 'NoSchedule' }] })), [/^metadata\.taints\[0\]\.key: Invalid value: "bad key": name part must consist of/]);
  t.match(nv(node({ taints: [{ key: 'k', value: 'bad value', effect: 'NoSchedule' }] })), [/^metadata\.taints\[0\]\.value: Invalid value: "bad value": a valid label must be an empty string/]);
  t.same(nv(node({ taints: [{ key: 'k', value: 'a', effect: 'NoSchedule' }, { key: 'k', value: 'b', effect: 'NoSchedule' }] })), [
    'metadata.taints[1]: Duplicate value: {"key":"k","value":"b","effect":"NoSchedule"}: taints must be unique by key and effect pair',
  ]);
});

t.test('Node: pod CIDRs: valid, one per family, no duplicates; podCIDR follows podCIDRs', async (t) => {
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] })), []);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/33'] })), ['spec.podCIDRs[0]: Invalid value: "10.244.1.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)']);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24', '10.244.2.0/24'] })), ['spec.podCIDRs: Invalid value: ["10.244.1.0/24","10.244.2.0/24"]: may specify no more than one CIDR for each IP family']);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24', '10.244.1.0/24'] })), [
    'spec.podCIDRs: Invalid value: ["10.244.1.0/24","10.244.1.0/24"]: may specify no more than one CIDR for each IP family',
    'spec.podCIDRs[1]: Duplicate value: "10.244.1.0/24"',
  ]);
  const o = node({ podCIDR: '10.244.9.0/24', podCIDRs: ['10.244.1.0/24'] });
  NODE.defaults(o);
  t.equal((o['spec'] as O)['podCIDR'], '10.244.1.0/24', 'the v1 conversion keeps the plural field: a singular one that differs is not stored');
  const single = node({ podCIDR: '10.244.2.0/24' });
  NODE.defaults(single);
  t.same((single['spec'] as O)['podCIDRs'], ['10.244.2.0/24']);
});

t.test('Node updates: pod CIDRs, providerID and externalID stay once set; no duplicate addresses', async (t) => {
  const stored = node({ podCIDR: '10.244.1.0/24', providerID: 'nodenet://n1' }, { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }] });
  NODE.defaults(stored);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24'], providerID: 'nodenet://n1', unschedulable: true }), stored), [], 'unschedulable may change');
  t.same(nv(node({ podCIDRs: ['10.244.2.0/24'], providerID: 'nodenet://n1' }), stored), ['spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid']);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24'], providerID: 'aws://x' }), stored), ['spec.providerID: Forbidden: node updates may not change providerID except from "" to valid']);
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24'], providerID: 'nodenet://n1', externalID: 'x' }), stored), ['spec.externalID: Forbidden: may not be updated']);
  const noProvider = node({ podCIDRs: ['10.244.1.0/24'] });
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24'], providerID: 'nodenet://n1' }), noProvider), [], 'from "" to a value');
  const addr = { type: 'InternalIP', address: '192.168.1.10' };
  t.same(nv(node({ podCIDRs: ['10.244.1.0/24'], providerID: 'nodenet://n1' }, { addresses: [addr, { type: 'Hostname', address: 'n1' }, addr] }), stored), [
    'status.addresses[2]: Duplicate value: {"type":"InternalIP","address":"192.168.1.10"}',
  ]);
});

t.test('Node status: capacity and allocatable are quantities, not negative', async (t) => {
  t.same(nv(node({}, { capacity: { cpu: '2', memory: '4Gi', pods: '110' }, allocatable: { cpu: '1500m' } })), []);
  t.same(nv(node({}, { capacity: { cpu: '-1' } })), ['status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0']);
  t.same(nv(node({}, { allocatable: { memory: 'lots' } })), ["status.allocatable.memory: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]);
});
