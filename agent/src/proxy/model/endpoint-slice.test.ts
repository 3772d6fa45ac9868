import t from 'tap';
import { InvalidObjectError } from '../../../../lib/errors/errors.js';
import { makeEndpointSlice, nodeName, podIP, withField, type JsonObject } from '../../testing/addresses.js';
import { ipToInt, parseIPv4 } from '../../../../lib/net/ip.js';
import { compareEndpoints, mergeSlices, parseEndpointSlice, type EndpointSliceInfo, type ParsedEndpointSlice } from './endpoint-slice.js';

function info(p: ParsedEndpointSlice): EndpointSliceInfo {
  if (p.kind !== 'slice') throw new Error(`expected a slice, got ignored: ${p.reason}`);
  return p.info;
}

const slice = (): JsonObject =>
  makeEndpointSlice({
    service: 'web',
    namespace: 'shop',
    name: 'web-1',
    ports: [
      { name: 'http', port: 8080 },
      { name: 'dns', port: 5353, protocol: 'UDP' },
    ],
    endpoints: [
      { ip: podIP(1, 1), nodeName: nodeName(1) },
      { ip: podIP(2, 1), nodeName: nodeName(2), ready: false, serving: true, terminating: true },
    ],
  });

t.test('parses ports, endpoints and conditions', async (t) => {
  const i = info(parseEndpointSlice(slice()));
  t.equal(i.key, 'shop/web-1');
  t.equal(i.serviceKey, 'shop/web');
  t.same(i.ports, [
    { name: 'http', protocol: 'TCP', port: 8080 },
    { name: 'dns', protocol: 'UDP', port: 5353 },
  ]);
  t.same(i.endpoints, [
    { ip: '10.244.1.2', ready: true, serving: true, terminating: false, nodeName: 'node-1' },
    { ip: '10.244.2.2', ready: false, serving: true, terminating: true, nodeName: 'node-2' },
  ]);
});

t.test('nil conditions: ready → true, serving → ready, terminating → false', async (t) => {
  const s = makeEndpointSlice({
    service: 'a',
    ports: [{ port: 80 }],
    endpoints: [
      { ip: podIP(1, 1), ready: null, serving: null, terminating: null },
      { ip: podIP(1, 2), ready: false, serving: null, terminating: null },
    ],
  });
  const eps = info(parseEndpointSlice(withField(s, 'endpoints[0].conditions', undefined))).endpoints;
  t.same(
    eps.map((e) => [e.ready, e.serving, e.terminating, e.nodeName]),
    [
      [true, true, false, null],
      [false, false, false, null],
    ],
  );
});

t.test('only the first address counts; a port without a number is skipped; a missing port name is ""', async (t) => {
  let s = withField(slice(), 'endpoints[0].addresses', ['10.244.1.9', '10.244.1.10']);
  s = withField(s, 'ports[1].port', undefined);
  s = withField(s, 'ports[0].name', undefined);
  const i = info(parseEndpointSlice(s));
  t.equal(i.endpoints[0]!.ip, '10.244.1.9');
  t.same(i.ports, [{ name: '', protocol: 'TCP', port: 8080 }]);
});

t.test('ignored: non-IPv4 address types and slices without a Service', async (t) => {
  const v6 = makeEndpointSlice({ service: 'a', addressType: 'IPv6', ports: [{ port: 80 }], endpoints: [{ ip: 'fd00::1' }] });
  const p = parseEndpointSlice(v6);
  t.equal(p.kind, 'ignored');
  if (p.kind === 'ignored') t.match(p.reason, /IPv6/);
  t.equal(parseEndpointSlice(withField(slice(), 'addressType', 'FQDN')).kind, 'ignored');
  const orphan = withField(slice(), 'metadata.labels', {});
  const q = parseEndpointSlice(orphan);
  t.equal(q.kind, 'ignored');
  if (q.kind === 'ignored') t.match(q.reason, /kubernetes.io\/service-name/);
  for (const label of ['service.kubernetes.io/service-proxy-name', 'service.kubernetes.io/headless']) {
    const labelled = withField(slice(), 'metadata.labels', { 'kubernetes.io/service-name': 'a', [label]: 'x' });
    const r = parseEndpointSlice(labelled);
    t.equal(r.kind, 'ignored', `${label}: kube-proxy's informers exclude it`);
    if (r.kind === 'ignored') t.match(r.reason, label);
  }
});

t.test('a slice without endpoints: absent or null (as kube-apiserver serializes an empty one) is none, not invalid', async (t) => {
  for (const v of [undefined, null, []]) {
    const i = info(parseEndpointSlice(withField(slice(), 'endpoints', v)));
    t.same(i.endpoints, [], `endpoints: ${JSON.stringify(v)}`);
    t.equal(i.ports.length, 2, 'its ports are still read');
  }
});

t.test('every rejection names the field', async (t) => {
  const base = slice();
  const cases: [string, unknown, string, RegExp][] = [
    ['not an object', [], '(root)', /JSON object/],
    ['no name', withField(base, 'metadata.name', undefined), 'metadata.name', /required/],
    ['no namespace', withField(base, 'metadata.namespace', ''), 'metadata.namespace', /required/],
    ['no addressType', withField(base, 'addressType', undefined), 'addressType', /required/],
    ['bad addressType', withField(base, 'addressType', 'IPX'), 'addressType', /unsupported value "IPX"/],
    ['endpoints not a list', withField(base, 'endpoints', 'x'), 'endpoints', /must be an array/],
    ['endpoint not an object', withField(base, 'endpoints[1]', 'x'), 'endpoints[1]', /object/],
    ['no addresses', withField(base, 'endpoints[1].addresses', []), 'endpoints[1].addresses', /at least one/],
    ['bad address', withField(base, 'endpoints[1].addresses', ['10.244.2.2', '10.244.2.256']), 'endpoints[1].addresses[1]', /valid IPv4/],
    ['IPv6 address in an IPv4 slice', withField(base, 'endpoints[0].addresses', ['fd00::1']), 'endpoints[0].addresses[0]', /valid IPv4/],
    ['ready not a boolean', withField(base, 'endpoints[0].conditions.ready', 'yes'), 'endpoints[0].conditions.ready', /boolean/],
    ['nodeName not a string', withField(base, 'endpoints[0].nodeName', 3), 'endpoints[0].nodeName', /string/],
    ['bad port', withField(base, 'ports[1].port', 0), 'ports[1].port', /between 1 and 65535/],
    ['bad protocol', withField(base, 'ports[0].protocol', 'GRE'), 'ports[0].protocol', /unsupported value "GRE"/],
    ['duplicate port names', withField(base, 'ports[1].name', 'http'), 'ports[1].name', /duplicate/],
    ['bad port name', withField(base, 'ports[1].name', 'DNS'), 'ports[1].name', /RFC 1123/],
  ];
  for (const [what, obj, field, re] of cases) {
    try {
      parseEndpointSlice(obj);
      t.fail(`${what}: accepted`);
    } catch (e) {
      t.type(e, InvalidObjectError, what);
      if (e instanceof InvalidObjectError) {
        t.equal(e.field, field, `${what}: field`);
        t.match(e.message, re, `${what}: message`);
      }
    }
  }
});

t.test('mergeSlices: union of slices per ServicePort, dedup by ip:port preferring ready, sorted', async (t) => {
  const a = info(
    parseEndpointSlice(
      makeEndpointSlice({
        service: 'web',
        name: 'web-a',
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [
          { ip: podIP(2, 5), nodeName: nodeName(2), ready: false, serving: false },
          { ip: podIP(1, 10), nodeName: nodeName(1) },
        ],
      }),
    ),
  );
  const b = info(
    parseEndpointSlice(
      makeEndpointSlice({
        service: 'web',
        name: 'web-b',
        ports: [{ name: 'http', port: 8080 }, { name: 'dns', port: 53, protocol: 'UDP' }],
        endpoints: [{ ip: podIP(2, 5), nodeName: nodeName(2) }, { ip: podIP(1, 2), nodeName: nodeName(1) }],
      }),
    ),
  );
  for (const order of [[a, b], [b, a]]) {
    const m = mergeSlices(order, 'node-1');
    t.same([...m.keys()], ['default/web:dns/UDP', 'default/web:http/TCP']);
    const http = m.get('default/web:http/TCP')!;
    t.same(
      http.map((e) => `${e.ip}:${e.port}/${e.ready}/${e.isLocal}`),
      ['10.244.1.3:8080/true/true', '10.244.1.11:8080/true/true', '10.244.2.6:8080/true/false'],
      'numeric IP order; the ready copy of 10.244.2.6 wins whatever the slice order',
    );
    t.same(
      m.get('default/web:dns/UDP')!.map((e) => `${e.ip}:${e.port}`),
      ['10.244.1.3:53', '10.244.2.6:53'],
    );
  }
});

t.test('mergeSlices: different port numbers for the same port name across slices (named targetPort)', async (t) => {
  const a = info(parseEndpointSlice(makeEndpointSlice({ service: 's', name: 's-a', ports: [{ name: 'http', port: 8080 }], endpoints: [{ ip: podIP(1, 1) }] })));
  const b = info(parseEndpointSlice(makeEndpointSlice({ service: 's', name: 's-b', ports: [{ name: 'http', port: 9090 }], endpoints: [{ ip: podIP(1, 2) }] })));
  t.same(
    mergeSlices([a, b], '').get('default/s:http/TCP')!.map((e) => `${e.ip}:${e.port}/${e.isLocal}`),
    ['10.244.1.2:8080/false', '10.244.1.3:9090/false'],
  );
});

t.test('mergeSlices: no ports or no endpoints give no entry', async (t) => {
  const a = info(parseEndpointSlice(makeEndpointSlice({ service: 's', ports: [], endpoints: [{ ip: podIP(1, 1) }] })));
  const b = info(parseEndpointSlice(makeEndpointSlice({ service: 's', name: 's-2', ports: [{ port: 80 }], endpoints: [] })));
  t.equal(mergeSlices([a, b], 'node-1').size, 0);
});

t.test('compareEndpoints orders by the numeric IP, then port, as ipToInt does', async (t) => {
  const ips = ['0.0.0.0', '9.255.255.255', '10.0.0.1', '10.0.0.10', '10.0.0.2', '10.244.1.2', '192.168.0.1', '255.255.255.255', '1.2.3.4', '100.0.0.0'];
  for (const a of ips) {
    for (const b of ips) {
      const want = Math.sign(ipToInt(a) - ipToInt(b));
      t.equal(Math.sign(compareEndpoints({ ip: parseIPv4(a), port: 80 }, { ip: parseIPv4(b), port: 80 })), want, `${a} vs ${b}`);
    }
  }
  t.ok(compareEndpoints({ ip: parseIPv4('10.0.0.1'), port: 80 }, { ip: parseIPv4('10.0.0.1'), port: 8080 }) < 0, 'same IP: by port');
});
