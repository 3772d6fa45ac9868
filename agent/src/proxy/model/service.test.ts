import t from 'tap';
import { InvalidObjectError } from '../../../../lib/errors/errors.js';
import { clusterIP, makeService, withField, type Json, type JsonObject } from '../../testing/addresses.js';
import { parseService, type ParsedService } from './service.js';

function ok(p: ParsedService): Extract<ParsedService, { kind: 'service' }> {
  if (p.kind !== 'service') throw new Error(`expected a service, got ${p.kind}: ${p.reason}`);
  return p;
}

const lb = (): JsonObject => makeService({ name: 'lb', type: 'LoadBalancer', clusterIP: clusterIP(4), ports: [{ port: 80, nodePort: 30001 }] });

const twoPorts = (): JsonObject =>
  makeService({
    name: 'web',
    namespace: 'shop',
    type: 'NodePort',
    clusterIP: clusterIP(10),
    ports: [
      { name: 'http', port: 80, targetPort: 'web', nodePort: 30080 },
      { name: 'dns', port: 53, protocol: 'UDP', nodePort: 30053 },
    ],
  });

t.test('parses a NodePort Service into one ServicePortInfo per port with API defaults', async (t) => {
  const p = ok(parseService(twoPorts()));
  t.equal(p.key, 'shop/web');
  t.same(p.targetPorts, ['web', 53]);
  t.same(p.ports, [
    {
      spn: { namespace: 'shop', name: 'web', port: 'http', protocol: 'TCP' },
      serviceType: 'NodePort',
      clusterIP: '10.96.0.10',
      port: 80,
      protocol: 'TCP',
      nodePort: 30080,
      affinityTimeoutSeconds: null,
      externalTrafficPolicy: 'Cluster',
      internalTrafficPolicy: 'Cluster',
      externalIPs: [],
      loadBalancerVIPs: [],
      loadBalancerSourceRanges: [],
      healthCheckNodePort: 0,
    },
    {
      spn: { namespace: 'shop', name: 'web', port: 'dns', protocol: 'UDP' },
      serviceType: 'NodePort',
      clusterIP: '10.96.0.10',
      port: 53,
      protocol: 'UDP',
      nodePort: 30053,
      affinityTimeoutSeconds: null,
      externalTrafficPolicy: 'Cluster',
      internalTrafficPolicy: 'Cluster',
      externalIPs: [],
      loadBalancerVIPs: [],
      loadBalancerSourceRanges: [],
      healthCheckNodePort: 0,
    },
  ]);
});

t.test('a minimal hand-written Service gets the API server defaults', async (t) => {
  const p = ok(parseService({ metadata: { name: 'a', namespace: 'default' }, spec: { clusterIP: '10.96.0.5', ports: [{ port: 8080 }] } }));
  t.equal(p.ports.length, 1);
  const port = p.ports[0]!;
  t.same(port.spn, { namespace: 'default', name: 'a', port: '', protocol: 'TCP' });
  t.equal(port.serviceType, 'ClusterIP');
  t.equal(port.nodePort, 0);
  t.same(p.targetPorts, [8080]);
  t.equal(port.externalTrafficPolicy, 'Cluster');
});

t.test('session affinity: ClientIP defaults to 10800 s, honours timeoutSeconds', async (t) => {
  const base = { name: 's', clusterIP: clusterIP(2), ports: [{ port: 80 }] };
  t.equal(ok(parseService(makeService({ ...base, affinityTimeoutSeconds: null }))).ports[0]!.affinityTimeoutSeconds, 10800);
  t.equal(ok(parseService(makeService({ ...base, affinityTimeoutSeconds: 60 }))).ports[0]!.affinityTimeoutSeconds, 60);
  t.equal(ok(parseService(makeService({ ...base, affinityTimeoutSeconds: 86400 }))).ports[0]!.affinityTimeoutSeconds, 86400);
  const noCfg = withField(makeService({ ...base, affinityTimeoutSeconds: 60 }), 'spec.sessionAffinityConfig', undefined);
  t.equal(ok(parseService(noCfg)).ports[0]!.affinityTimeoutSeconds, 10800);
  t.equal(ok(parseService(makeService(base))).ports[0]!.affinityTimeoutSeconds, null);
});

t.test('traffic policies and externalIPs', async (t) => {
  const svc = makeService({
    name: 'ext',
    clusterIP: clusterIP(3),
    ports: [{ port: 80 }],
    externalIPs: ['192.168.77.250', 'fd00::1', '192.168.77.250'],
    externalTrafficPolicy: 'Local',
    internalTrafficPolicy: 'Local',
  });
  const port = ok(parseService(svc)).ports[0]!;
  t.same(port.externalIPs, ['192.168.77.250'], 'IPv6 skipped, duplicates folded');
  t.equal(port.externalTrafficPolicy, 'Local');
  t.equal(port.internalTrafficPolicy, 'Local');
});

t.test('dual-stack: an IPv6-primary Service uses its IPv4 secondary ClusterIP', async (t) => {
  const svc = withField(withField(makeService({ name: 'ds', clusterIP: 'fd00::10', ports: [{ port: 80 }] }), 'spec.clusterIPs', ['fd00::10', '10.96.0.77']), 'spec.ipFamilies', ['IPv6', 'IPv4']);
  t.equal(ok(parseService(svc)).ports[0]!.clusterIP, '10.96.0.77');
});

t.test('Services without proxy rules are ignored with a reason, not rejected', async (t) => {
  const cases: [string, JsonObject, RegExp][] = [
    ['headless', makeService({ name: 'h', clusterIP: 'None', ports: [{ port: 80 }] }), /headless/],
    ['headless without ports', withField(makeService({ name: 'h', clusterIP: 'None', ports: [] }), 'spec.ports', undefined), /headless/],
    ['unallocated', makeService({ name: 'u', clusterIP: '', ports: [{ port: 80 }] }), /no ClusterIP allocated/],
    ['ExternalName', withField(makeService({ name: 'x', type: 'ExternalName', clusterIP: '', ports: [] }), 'spec.externalName', 'example.com'), /ExternalName/],
    ['labelled for another proxy', withField(makeService({ name: 'o', clusterIP: clusterIP(4), ports: [{ port: 80 }] }), 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'other' }), /service-proxy-name=other: served by another proxy/],
    ['labelled for another proxy, empty value', withField(makeService({ name: 'o', clusterIP: clusterIP(4), ports: [{ port: 80 }] }), 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': '' }), /service-proxy-name=: served by another proxy/],
    ['labelled headless', withField(makeService({ name: 'hl', clusterIP: clusterIP(4), ports: [{ port: 80 }] }), 'metadata.labels', { 'service.kubernetes.io/headless': '' }), /service.kubernetes.io\/headless/],
    // kube-proxy never sees such a Service, so even an invalid one is only ignored.
    ['labelled and invalid', withField(withField(makeService({ name: 'o', clusterIP: clusterIP(4), ports: [{ port: 80 }] }), 'spec.ports[0].port', 0), 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'x' }), /another proxy/],
    ['IPv6-only', makeService({ name: 'v6', clusterIP: 'fd00::1', ports: [{ port: 80 }] }), /IPv6/],
  ];
  for (const [what, obj, re] of cases) {
    const p = parseService(obj);
    t.equal(p.kind, 'ignored', what);
    if (p.kind === 'ignored') t.match(p.reason, re, what);
  }
});

t.test('every rejection names the field', async (t) => {
  const base = twoPorts();
  const cip = makeService({ name: 'c', clusterIP: clusterIP(5), ports: [{ port: 80 }] });
  const cases: [string, JsonObject | unknown, string, RegExp][] = [
    ['not an object', 'nope', '(root)', /JSON object/],
    ['no metadata', withField(base, 'metadata', undefined), 'metadata', /required/],
    ['no name', withField(base, 'metadata.name', undefined), 'metadata.name', /required/],
    ['bad name', withField(base, 'metadata.name', 'Web_1'), 'metadata.name', /RFC 1035/],
    ['no namespace', withField(base, 'metadata.namespace', undefined), 'metadata.namespace', /required/],
    ['no spec', withField(base, 'spec', undefined), 'spec', /required/],
    ['bad type', withField(base, 'spec.type', 'Magic'), 'spec.type', /unsupported value "Magic"/],
    ['bad clusterIP', withField(withField(base, 'spec.clusterIPs', undefined), 'spec.clusterIP', '10.96.0.300'), 'spec.clusterIP', /valid IP/],
    ['clusterIP 0.0.0.0', withField(withField(base, 'spec.clusterIPs', undefined), 'spec.clusterIP', '0.0.0.0'), 'spec.clusterIP', /unspecified/],
    ['clusterIPs mismatch', withField(base, 'spec.clusterIPs', ['10.96.0.99']), 'spec.clusterIPs[0]', /must match/],
    ['clusterIP not a string', withField(base, 'spec.clusterIP', 7), 'spec.clusterIP', /string/],
    ['no ports', withField(base, 'spec.ports', []), 'spec.ports', /at least one port/],
    ['ports missing', withField(base, 'spec.ports', undefined), 'spec.ports', /required/],
    ['port not an object', withField(base, 'spec.ports[1]', 5), 'spec.ports[1]', /object/],
    ['port missing', withField(base, 'spec.ports[1].port', undefined), 'spec.ports[1].port', /required/],
    ['port zero', withField(base, 'spec.ports[1].port', 0), 'spec.ports[1].port', /between 1 and 65535/],
    ['port too big', withField(base, 'spec.ports[1].port', 65536), 'spec.ports[1].port', /between 1 and 65535/],
    ['port a string', withField(base, 'spec.ports[0].port', '80'), 'spec.ports[0].port', /integer/],
    ['port fractional', withField(base, 'spec.ports[0].port', 80.5), 'spec.ports[0].port', /integer/],
    ['bad protocol', withField(base, 'spec.ports[1].protocol', 'ICMP'), 'spec.ports[1].protocol', /unsupported value "ICMP"/],
    ['duplicate names', withField(base, 'spec.ports[1].name', 'http'), 'spec.ports[1].name', /duplicate value "http"/],
    ['unnamed port among several', withField(base, 'spec.ports[1].name', undefined), 'spec.ports[1].name', /required/],
    ['two unnamed ports', withField(withField(base, 'spec.ports[0].name', ''), 'spec.ports[1].name', ''), 'spec.ports[0].name', /required/],
    ['bad port name', withField(base, 'spec.ports[0].name', 'HTTP'), 'spec.ports[0].name', /RFC 1123/],
    ['duplicate port/protocol', withField(withField(base, 'spec.ports[1].port', 80), 'spec.ports[1].protocol', 'TCP'), 'spec.ports[1]', /duplicate value: port 80\/TCP/],
    ['bad targetPort number', withField(base, 'spec.ports[0].targetPort', 70000), 'spec.ports[0].targetPort', /between 1 and 65535/],
    ['bad targetPort name', withField(base, 'spec.ports[0].targetPort', 'a-very-long-port-name'), 'spec.ports[0].targetPort', /IANA_SVC_NAME/],
    ['numeric-string targetPort', withField(base, 'spec.ports[0].targetPort', '8080'), 'spec.ports[0].targetPort', /port name/],
    ['targetPort bool', withField(base, 'spec.ports[0].targetPort', true), 'spec.ports[0].targetPort', /integer or a port name/],
    ['nodePort below range', withField(base, 'spec.ports[0].nodePort', 29999), 'spec.ports[0].nodePort', /between 30000 and 32767/],
    ['nodePort above range', withField(base, 'spec.ports[1].nodePort', 32768), 'spec.ports[1].nodePort', /between 30000 and 32767/],
    ['nodePort on ClusterIP', withField(cip, 'spec.ports[0].nodePort', 30001), 'spec.ports[0].nodePort', /may not be used when `type` is 'ClusterIP'/],
    ['duplicate nodePort', withField(withField(base, 'spec.ports[1].nodePort', 30080), 'spec.ports[1].protocol', 'TCP'), 'spec.ports[1].nodePort', /duplicate value 30080\/TCP/],
    ['bad sessionAffinity', withField(base, 'spec.sessionAffinity', 'Cookie'), 'spec.sessionAffinity', /unsupported value "Cookie"/],
    ['timeout zero', withField(withField(base, 'spec.sessionAffinity', 'ClientIP'), 'spec.sessionAffinityConfig', { clientIP: { timeoutSeconds: 0 } }), 'spec.sessionAffinityConfig.clientIP.timeoutSeconds', /greater than 0/],
    ['timeout too long', withField(withField(base, 'spec.sessionAffinity', 'ClientIP'), 'spec.sessionAffinityConfig', { clientIP: { timeoutSeconds: 86401 } }), 'spec.sessionAffinityConfig.clientIP.timeoutSeconds', /86400/],
    ['affinity config without ClientIP', withField(base, 'spec.sessionAffinityConfig', { clientIP: { timeoutSeconds: 5 } }), 'spec.sessionAffinityConfig', /must not be set/],
    ['bad externalTrafficPolicy', withField(base, 'spec.externalTrafficPolicy', 'Global'), 'spec.externalTrafficPolicy', /unsupported value "Global"/],
    ['externalTrafficPolicy on internal Service', withField(cip, 'spec.externalTrafficPolicy', 'Local'), 'spec.externalTrafficPolicy', /externally-accessible/],
    ['bad internalTrafficPolicy', withField(base, 'spec.internalTrafficPolicy', 'Node'), 'spec.internalTrafficPolicy', /unsupported value "Node"/],
    ['bad externalIP', withField(base, 'spec.externalIPs', ['192.168.77.250', 'foo']), 'spec.externalIPs[1]', /valid IP/],
    ['loopback externalIP', withField(base, 'spec.externalIPs', ['127.0.0.2']), 'spec.externalIPs[0]', /loopback/],
    ['externalIPs not an array', withField(base, 'spec.externalIPs', '1.2.3.4'), 'spec.externalIPs', /array/],
    ['allocateLoadBalancerNodePorts on NodePort', withField(base, 'spec.allocateLoadBalancerNodePorts', false), 'spec.allocateLoadBalancerNodePorts', /only be used when `type` is 'LoadBalancer'/],
    ['allocateLoadBalancerNodePorts not a bool', withField(lb(), 'spec.allocateLoadBalancerNodePorts', 'no'), 'spec.allocateLoadBalancerNodePorts', /boolean/],
    ['source ranges on NodePort', withField(base, 'spec.loadBalancerSourceRanges', ['10.0.0.0/8']), 'spec.loadBalancerSourceRanges', /only be used when `type` is 'LoadBalancer'/],
    ['bad source range', withField(lb(), 'spec.loadBalancerSourceRanges', ['10.0.0.0/8', '10.0.0.0/33']), 'spec.loadBalancerSourceRanges[1]', /list of IP ranges/],
    ['source range not a string', withField(lb(), 'spec.loadBalancerSourceRanges', [8]), 'spec.loadBalancerSourceRanges[0]', /string/],
    ['healthCheckNodePort with Cluster policy', withField(lb(), 'spec.healthCheckNodePort', 32000), 'spec.healthCheckNodePort', /externalTrafficPolicy` is 'Local'/],
    ['healthCheckNodePort on NodePort', withField(withField(base, 'spec.externalTrafficPolicy', 'Local'), 'spec.healthCheckNodePort', 32000), 'spec.healthCheckNodePort', /`type` is 'LoadBalancer'/],
    ['healthCheckNodePort out of range', withField(withField(lb(), 'spec.externalTrafficPolicy', 'Local'), 'spec.healthCheckNodePort', 70000), 'spec.healthCheckNodePort', /between 1 and 65535/],
    ['bad ingress IP', withField(lb(), 'status', { loadBalancer: { ingress: [{ ip: '1.2.3.999' }] } }), 'status.loadBalancer.ingress[0].ip', /valid IP/],
    ['bad ipMode', withField(lb(), 'status', { loadBalancer: { ingress: [{ ip: '1.2.3.4', ipMode: 'NAT' }] } }), 'status.loadBalancer.ingress[0].ipMode', /unsupported value "NAT"/],
    ['ipMode without ip', withField(lb(), 'status', { loadBalancer: { ingress: [{ hostname: 'lb.example.com', ipMode: 'VIP' }] } }), 'status.loadBalancer.ingress[0].ipMode', /only be set when `ip` is set/],
    ['ingress not an object', withField(lb(), 'status', { loadBalancer: { ingress: ['1.2.3.4'] } }), 'status.loadBalancer.ingress[0]', /object/],
  ];
  for (const [what, obj, field, re] of cases) {
    try {
      parseService(obj);
      t.fail(`${what}: accepted`);
    } catch (e) {
      t.type(e, InvalidObjectError, what);
      if (e instanceof InvalidObjectError) {
        t.equal(e.field, field, `${what}: field`);
        t.match(e.message, re, `${what}: message`);
        t.ok(e.message.startsWith(`${field}: `), `${what}: message starts with the field`);
      }
    }
  }
});

t.test('the NodePort range is configurable', async (t) => {
  const svc = withField(twoPorts(), 'spec.ports[0].nodePort', 20080);
  t.throws(() => parseService(svc), { field: 'spec.ports[0].nodePort', message: /between 30000 and 32767/ });
  t.equal(ok(parseService(svc, { nodePortRange: { min: 20000, max: 40000 } })).ports[0]!.nodePort, 20080);
  t.throws(() => parseService(twoPorts(), { nodePortRange: { min: 31000, max: 32000 } }), { field: 'spec.ports[0].nodePort', message: /between 31000 and 32000/ });
});

t.test('a NodePort Service whose nodePort is not allocated yet gets no NodePort', async (t) => {
  const svc = withField(twoPorts(), 'spec.ports[1].nodePort', undefined);
  const p = ok(parseService(svc));
  t.equal(p.ports[0]!.nodePort, 30080);
  t.equal(p.ports[1]!.nodePort, 0);
});

t.test('parsing does not depend on unknown fields (status, annotations)', async (t) => {
  const a = ok(parseService(twoPorts()));
  const extra: Json = { loadBalancer: {} };
  const b = ok(parseService(withField(withField(twoPorts(), 'status', extra), 'metadata.annotations', { x: 'y' })));
  t.same(a, b);
});

t.test('type LoadBalancer: ClusterIP and NodePorts as NodePort, plus the VIP-mode ingress IPs, source ranges and health check port', async (t) => {
  let svc = withField(lb(), 'spec.externalTrafficPolicy', 'Local');
  svc = withField(svc, 'spec.healthCheckNodePort', 32000);
  svc = withField(svc, 'spec.loadBalancerSourceRanges', [' 203.0.113.7/24 ', '198.51.100.0/25', 'fd00::/64', '198.51.100.0/25']);
  svc = withField(svc, 'status', {
    loadBalancer: {
      ingress: [{ ip: '192.0.2.10', ipMode: 'VIP' }, { ip: '192.0.2.11' }, { ip: '192.0.2.12', ipMode: 'Proxy' }, { hostname: 'lb.example.com' }, { ip: 'fd00::10' }, { ip: '192.0.2.10' }],
    },
  });
  const p = ok(parseService(svc)).ports[0]!;
  t.equal(p.serviceType, 'LoadBalancer');
  t.equal(p.nodePort, 30001);
  t.equal(p.externalTrafficPolicy, 'Local');
  t.same(p.loadBalancerVIPs, ['192.0.2.10', '192.0.2.11'], 'VIP mode (explicit or defaulted) only, IPv4, deduplicated; ipMode Proxy and hostnames get no rules');
  t.same(p.loadBalancerSourceRanges, ['203.0.113.0/24', '198.51.100.0/25'], 'trimmed (as kube-proxy), as networks, IPv6 left out, deduplicated');
  t.equal(p.healthCheckNodePort, 32000);
});

t.test('allocateLoadBalancerNodePorts: false is only for the allocator; what the Service has is served', async (t) => {
  const none = ok(parseService(withField(withField(lb(), 'spec.ports[0].nodePort', undefined), 'spec.allocateLoadBalancerNodePorts', false))).ports[0]!;
  t.equal(none.nodePort, 0, 'no nodePort: no NodePort');
  const asked = ok(parseService(withField(lb(), 'spec.allocateLoadBalancerNodePorts', false))).ports[0]!;
  t.equal(asked.nodePort, 30001, 'a nodePort requested explicitly is kept by the API server, and served (as kube-proxy does)');
});

t.test('a LoadBalancer without status, or with Local policy but no health check port, is still served', async (t) => {
  const p = ok(parseService(withField(lb(), 'spec.externalTrafficPolicy', 'Local'))).ports[0]!;
  t.same([p.loadBalancerVIPs, p.healthCheckNodePort], [[], 0]);
  // status is read whatever the type, as kube-proxy reads it
  const cip = withField(makeService({ name: 'c', clusterIP: clusterIP(5), ports: [{ port: 80 }] }), 'status', { loadBalancer: { ingress: [{ ip: '192.0.2.20' }] } });
  t.same(ok(parseService(cip)).ports[0]!.loadBalancerVIPs, ['192.0.2.20']);
});
