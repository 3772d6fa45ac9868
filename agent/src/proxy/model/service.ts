/**
 * proxy/model/service: a core/v1 Service (as JSON, `unknown`) → the
 * ServicePortInfo list the proxy renders from. Pure.
 *
 * What it accepts mirrors the API server's Service validation for the fields
 * a proxy reads, so a Service nodenet accepts is one Kubernetes would accept:
 * an invalid object throws InvalidObjectError whose `field` is the JSON path
 * (`spec.ports[1].port`). Services a proxy has nothing to do for are not
 * errors: like kube-proxy's ShouldSkipService they come back as `ignored`
 * with a reason — headless (`clusterIP: None`), no ClusterIP allocated yet,
 * ExternalName, IPv6-only — and so are Services labelled for another proxy
 * (`service.kubernetes.io/service-proxy-name`) or as headless
 * (`service.kubernetes.io/headless`): kube-proxy's informers never list
 * those (label selector `!service-proxy-name,!headless`), so they are judged
 * before anything else and never rejected. Defaults are the API server's
 * (protocol TCP, targetPort = port, traffic policies Cluster, affinity
 * timeout 10800 s), so a Service written by hand for the embedded control
 * plane parses the same as one that went through a real API server.
 *
 * type LoadBalancer is served as kube-proxy serves it (pkg/proxy/serviceport.go):
 * ClusterIP and NodePorts as for NodePort, plus the `status.loadBalancer.ingress`
 * IPs in VIP mode (`ipMode: Proxy` and hostname-only ingress get no rules:
 * that load balancer proxies to the NodePorts itself), `loadBalancerSourceRanges`
 * and, with externalTrafficPolicy Local, `healthCheckNodePort`. As in
 * Kubernetes, `allocateLoadBalancerNodePorts: false` only tells the allocator
 * not to pick NodePorts: a Service without `nodePort` values has none, and a
 * nodePort the user asked for explicitly is still served.
 *
 * targetPort is validated and returned, but the proxy does not use it: as in
 * kube-proxy, the endpoint port comes from the EndpointSlice port whose name
 * equals the Service port's name (the slice controller resolved targetPort).
 */
import { InvalidObjectError } from '../../../../lib/errors/errors.js';
import { isIPv4, parseCidr, parseIPv4, cidrContains, type Cidr, type IPv4 } from '../../../../lib/net/ip.js';
import type { Protocol, ServiceKey, ServicePortInfo, ServiceType, TrafficPolicy } from '../types.js';
import { compact } from '../flat.js';
import {
  isDNS1035Label,
  isDNS1123Label,
  isIanaSvcName,
  excludedByLabels,
  isObj,
  join,
  objectMeta,
  optArr,
  optBool,
  optInt,
  optObj,
  optStr,
  portNumber,
  protocolField,
  reqObj,
  show,
  type Obj,
} from './fields.js';

export interface PortRange {
  readonly min: number;
  readonly max: number;
}

/** The API server's default --service-node-port-range. */
export const DEFAULT_NODE_PORT_RANGE: PortRange = { min: 30000, max: 32767 };
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10800;
export const MAX_AFFINITY_TIMEOUT_SECONDS = 86400;

export interface ServiceParseOptions {
  readonly nodePortRange?: PortRange;
}

export type ParsedService =
  | {
      readonly kind: 'service';
      readonly key: ServiceKey;
      /** One per spec.ports entry, in spec order. */
      readonly ports: readonly ServicePortInfo[];
      /** spec.ports[i].targetPort (defaulted to the port), aligned with `ports`. */
      readonly targetPorts: readonly (number | string)[];
    }
  | { readonly kind: 'ignored'; readonly key: ServiceKey; readonly reason: string };

const SUPPORTED_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];
export { LABEL_HEADLESS, LABEL_SERVICE_PROXY_NAME, excludedByLabels } from './fields.js';


function isIPv6Like(s: string): boolean {
  return s.includes(':') && /^[0-9a-fA-F:.]+$/.test(s);
}

/** externalIPs may not be unspecified, loopback or link-local (the API server's ValidateNonSpecialIP). */
function specialIPv4(ip: string): string | null {
  if (ip === '0.0.0.0') return 'may not be unspecified (0.0.0.0)';
  if (cidrContains('127.0.0.0/8', ip)) return 'may not be in the loopback range (127.0.0.0/8)';
  if (cidrContains('169.254.0.0/16', ip)) return 'may not be in the link-local range (169.254.0.0/16)';
  if (cidrContains('224.0.0.0/24', ip)) return 'may not be in the link-local multicast range (224.0.0.0/24)';
  return null;
}

/**
 * Parses and validates one Service. Throws InvalidObjectError (field = JSON
 * path) when the object is invalid; returns `ignored` when it is valid but
 * gets no proxy rules.
 */
export function parseService(raw: unknown, opts: ServiceParseOptions = {}): ParsedService {
  const range = opts.nodePortRange ?? DEFAULT_NODE_PORT_RANGE;
  if (!isObj(raw)) throw new InvalidObjectError('(root)', `must be a JSON object, got ${show(raw)}`);
  const { namespace, name } = objectMeta(raw, isDNS1035Label, 'an RFC 1035 label (lowercase alphanumerics and "-", starting with a letter)');
  const key: ServiceKey = `${namespace}/${name}`;
  const excluded = excludedByLabels(raw);
  if (excluded) return { kind: 'ignored', key, reason: excluded };
  const spec = reqObj(raw, 'spec', '');

  const typeRaw = optStr(spec, 'type', 'spec') || 'ClusterIP';
  if (!SUPPORTED_TYPES.includes(typeRaw)) {
    throw new InvalidObjectError('spec.type', `unsupported value ${show(typeRaw)}: supported values: ${SUPPORTED_TYPES.map((t) => `"${t}"`).join(', ')}`);
  }
  if (typeRaw === 'ExternalName') return { kind: 'ignored', key, reason: 'type ExternalName is a DNS alias: no proxy rules' };
  const type: ServiceType = typeRaw === 'NodePort' ? 'NodePort' : typeRaw === 'LoadBalancer' ? 'LoadBalancer' : 'ClusterIP';

  const clusterIP = clusterIPField(spec, key);
  if (typeof clusterIP !== 'string') return clusterIP;

  const portsRaw = optArr(spec, 'ports', 'spec');
  if (!portsRaw || portsRaw.length === 0) throw new InvalidObjectError('spec.ports', 'required value: a Service needs at least one port');

  const affinityTimeoutSeconds = affinityField(spec);
  const externalIPsAll = optArr(spec, 'externalIPs', 'spec') ?? [];
  const externalIPs: IPv4[] = [];
  externalIPsAll.forEach((v, i) => {
    const f = `spec.externalIPs[${i}]`;
    if (typeof v !== 'string') throw new InvalidObjectError(f, `must be a string, got ${show(v)}`);
    if (isIPv6Like(v)) return; // an IPv6 external IP is valid Kubernetes, but not this IPv4 proxy's
    if (!isIPv4(v)) throw new InvalidObjectError(f, `${show(v)} must be a valid IP address`);
    const special = specialIPv4(v);
    if (special) throw new InvalidObjectError(f, special);
    if (!externalIPs.includes(v as IPv4)) externalIPs.push(parseIPv4(v));
  });

  const keptExternalIPs = compact(externalIPs);
  const externallyAccessible = type === 'NodePort' || type === 'LoadBalancer' || externalIPsAll.length > 0;
  const etpRaw = optStr(spec, 'externalTrafficPolicy', 'spec') ?? '';
  if (etpRaw !== '' && !externallyAccessible) {
    throw new InvalidObjectError('spec.externalTrafficPolicy', 'may only be set for externally-accessible services (type NodePort or LoadBalancer, or with externalIPs)');
  }
  const externalTrafficPolicy = trafficPolicy(etpRaw, 'spec.externalTrafficPolicy');
  const internalTrafficPolicy = trafficPolicy(optStr(spec, 'internalTrafficPolicy', 'spec') ?? '', 'spec.internalTrafficPolicy');
  const lb = loadBalancerFields(raw, spec, type, externalTrafficPolicy);

  const ports: ServicePortInfo[] = [];
  const targetPorts: (number | string)[] = [];
  const names = new Set<string>();
  const portProto = new Set<string>();
  const nodePortProto = new Set<string>();
  portsRaw.forEach((p, i) => {
    const path = `spec.ports[${i}]`;
    if (!isObj(p)) throw new InvalidObjectError(path, `must be an object, got ${show(p)}`);
    const portName = optStr(p, 'name', path) ?? '';
    if (portsRaw.length > 1 && portName === '') {
      throw new InvalidObjectError(join(path, 'name'), 'required value: every port of a multi-port Service needs a name');
    }
    if (portName !== '' && !isDNS1123Label(portName)) throw new InvalidObjectError(join(path, 'name'), `${show(portName)} must be an RFC 1123 label`);
    if (names.has(portName)) throw new InvalidObjectError(join(path, 'name'), `duplicate value ${show(portName)}`);
    names.add(portName);

    const protocol = protocolField(p, path);
    const portRaw = optInt(p, 'port', path);
    if (portRaw === undefined) throw new InvalidObjectError(join(path, 'port'), 'required value');
    const port = portNumber(portRaw, join(path, 'port'));
    if (portProto.has(`${port}/${protocol}`)) throw new InvalidObjectError(path, `duplicate value: port ${port}/${protocol} appears twice`);
    portProto.add(`${port}/${protocol}`);

    targetPorts.push(targetPortField(p, path, port));
    const nodePort = nodePortField(p, path, type, range, protocol, nodePortProto);

    ports.push({
      spn: { namespace, name, port: portName, protocol },
      serviceType: type,
      clusterIP,
      port,
      protocol,
      nodePort,
      affinityTimeoutSeconds,
      externalTrafficPolicy,
      internalTrafficPolicy,
      // Kept for as long as the Service: exact-size arrays (proxy/flat.ts), and the properties
      // written out rather than spread, so the object keeps them in-object.
      externalIPs: keptExternalIPs,
      loadBalancerVIPs: lb.loadBalancerVIPs,
      loadBalancerSourceRanges: lb.loadBalancerSourceRanges,
      healthCheckNodePort: lb.healthCheckNodePort,
    });
  });
  return { kind: 'service', key, ports, targetPorts };
}

const ONLY_LOAD_BALANCER = "forbidden: may only be used when `type` is 'LoadBalancer'";

/**
 * The LoadBalancer fields kube-proxy reads (newBaseServiceInfo), validated as
 * the API server validates them: the VIP-mode ingress IPs, the source ranges
 * (whitespace trimmed, as kube-proxy does: validation once let padding
 * through) and the health check NodePort.
 */
function loadBalancerFields(
  raw: Obj,
  spec: Obj,
  type: ServiceType,
  etp: TrafficPolicy,
): Pick<ServicePortInfo, 'loadBalancerVIPs' | 'loadBalancerSourceRanges' | 'healthCheckNodePort'> {
  const allocate = optBool(spec, 'allocateLoadBalancerNodePorts', 'spec');
  if (allocate !== undefined && type !== 'LoadBalancer') throw new InvalidObjectError('spec.allocateLoadBalancerNodePorts', ONLY_LOAD_BALANCER);

  const rangesRaw = optArr(spec, 'loadBalancerSourceRanges', 'spec') ?? [];
  if (rangesRaw.length > 0 && type !== 'LoadBalancer') throw new InvalidObjectError('spec.loadBalancerSourceRanges', ONLY_LOAD_BALANCER);
  const loadBalancerSourceRanges: Cidr[] = [];
  rangesRaw.forEach((v, i) => {
    const f = `spec.loadBalancerSourceRanges[${i}]`;
    if (typeof v !== 'string') throw new InvalidObjectError(f, `must be a string, got ${show(v)}`);
    const r = v.trim();
    if (r.includes(':') && /^[0-9a-fA-F:.]+\/\d{1,3}$/.test(r)) return; // IPv6: valid, not this IPv4 proxy's
    let c: Cidr;
    try {
      c = parseCidr(r).cidr;
    } catch {
      throw new InvalidObjectError(f, `${show(v)} must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24`);
    }
    if (!loadBalancerSourceRanges.includes(c)) loadBalancerSourceRanges.push(c);
  });

  const hc = optInt(spec, 'healthCheckNodePort', 'spec') ?? 0;
  if (hc !== 0) {
    if (type !== 'LoadBalancer' || etp !== 'Local') {
      throw new InvalidObjectError('spec.healthCheckNodePort', "forbidden: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'");
    }
    portNumber(hc, 'spec.healthCheckNodePort');
  }

  // status.loadBalancer.ingress: read whatever the type (as kube-proxy does; the service controller clears it).
  const status = optObj(raw, 'status', '');
  const lbStatus = status ? optObj(status, 'loadBalancer', 'status') : undefined;
  const ingress = lbStatus ? (optArr(lbStatus, 'ingress', 'status.loadBalancer') ?? []) : [];
  const loadBalancerVIPs: IPv4[] = [];
  ingress.forEach((ing, i) => {
    const path = `status.loadBalancer.ingress[${i}]`;
    if (!isObj(ing)) throw new InvalidObjectError(path, `must be an object, got ${show(ing)}`);
    const ip = optStr(ing, 'ip', path) ?? '';
    const mode = optStr(ing, 'ipMode', path);
    if (mode !== undefined && mode !== 'VIP' && mode !== 'Proxy') {
      throw new InvalidObjectError(join(path, 'ipMode'), `unsupported value ${show(mode)}: supported values: "Proxy", "VIP"`);
    }
    if (mode !== undefined && ip === '') throw new InvalidObjectError(join(path, 'ipMode'), 'forbidden: may only be set when `ip` is set');
    if (ip === '' || isIPv6Like(ip)) return; // a hostname-only ingress, or IPv6: nothing for this proxy
    if (!isIPv4(ip)) throw new InvalidObjectError(join(path, 'ip'), `${show(ip)} must be a valid IP address`);
    if (mode === 'Proxy') return; // the load balancer proxies to the NodePorts: no rules for its IP (kube-proxy's IsVIPMode)
    if (!loadBalancerVIPs.includes(ip as IPv4)) loadBalancerVIPs.push(parseIPv4(ip));
  });
  return { loadBalancerVIPs: compact(loadBalancerVIPs), loadBalancerSourceRanges: compact(loadBalancerSourceRanges), healthCheckNodePort: hc };
}

/** The Service's IPv4 ClusterIP, or an `ignored` result (headless, unallocated, IPv6-only). */
function clusterIPField(spec: Obj, key: ServiceKey): IPv4 | ParsedService {
  const single = optStr(spec, 'clusterIP', 'spec');
  const list = optArr(spec, 'clusterIPs', 'spec') ?? [];
  const ips: string[] = list.map((v, i) => {
    if (typeof v !== 'string') throw new InvalidObjectError(`spec.clusterIPs[${i}]`, `must be a string, got ${show(v)}`);
    return v;
  });
  if (single && ips.length > 0 && ips[0] !== single) {
    throw new InvalidObjectError('spec.clusterIPs[0]', `${show(ips[0])} must match spec.clusterIP ${show(single)}`);
  }
  const primary = single || ips[0] || '';
  if (primary === 'None') return { kind: 'ignored', key, reason: 'headless Service (clusterIP: None): no proxy rules' };
  if (primary === '') return { kind: 'ignored', key, reason: 'no ClusterIP allocated yet' };
  const candidates = [primary, ...ips.slice(1)];
  let chosen: IPv4 | null = null;
  candidates.forEach((ip, i) => {
    const f = i === 0 ? (single ? 'spec.clusterIP' : 'spec.clusterIPs[0]') : `spec.clusterIPs[${i}]`;
    if (isIPv6Like(ip)) return;
    if (!isIPv4(ip)) throw new InvalidObjectError(f, `${show(ip)} must be a valid IP address or "None"`);
    if (ip === '0.0.0.0') throw new InvalidObjectError(f, 'may not be unspecified (0.0.0.0)');
    chosen ??= parseIPv4(ip);
  });
  return chosen ?? { kind: 'ignored', key, reason: 'no IPv4 ClusterIP (IPv6-only Service); nodenet proxies IPv4' };
}

function affinityField(spec: Obj): number | null {
  const affinity = optStr(spec, 'sessionAffinity', 'spec') || 'None';
  if (affinity !== 'None' && affinity !== 'ClientIP') {
    throw new InvalidObjectError('spec.sessionAffinity', `unsupported value ${show(affinity)}: supported values: "ClientIP", "None"`);
  }
  const cfg = optObj(spec, 'sessionAffinityConfig', 'spec');
  const clientIP = cfg ? optObj(cfg, 'clientIP', 'spec.sessionAffinityConfig') : undefined;
  if (affinity === 'None') {
    if (clientIP) throw new InvalidObjectError('spec.sessionAffinityConfig', 'must not be set when sessionAffinity is None');
    return null;
  }
  const t = clientIP ? optInt(clientIP, 'timeoutSeconds', 'spec.sessionAffinityConfig.clientIP') : undefined;
  const timeout = t ?? DEFAULT_AFFINITY_TIMEOUT_SECONDS;
  if (timeout < 1 || timeout > MAX_AFFINITY_TIMEOUT_SECONDS) {
    throw new InvalidObjectError('spec.sessionAffinityConfig.clientIP.timeoutSeconds', `must be greater than 0 and less than or equal to ${MAX_AFFINITY_TIMEOUT_SECONDS}, got ${timeout}`);
  }
  return timeout;
}

function trafficPolicy(v: string, field: string): TrafficPolicy {
  if (v === '' || v === 'Cluster') return 'Cluster';
  if (v === 'Local') return 'Local';
  throw new InvalidObjectError(field, `unsupported value ${show(v)}: supported values: "Cluster", "Local"`);
}

function targetPortField(p: Obj, path: string, port: number): number | string {
  const f = join(path, 'targetPort');
  const v = p['targetPort'];
  if (v === undefined || v === null || v === 0 || v === '') return port;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new InvalidObjectError(f, `must be an integer or a port name, got ${show(v)}`);
    return portNumber(v, f);
  }
  if (typeof v === 'string') {
    if (!isIanaSvcName(v)) throw new InvalidObjectError(f, `${show(v)} must be a number or a port name (IANA_SVC_NAME: at most 15 lowercase alphanumerics or "-", with a letter)`);
    return v;
  }
  throw new InvalidObjectError(f, `must be an integer or a port name, got ${show(v)}`);
}

function nodePortField(p: Obj, path: string, type: ServiceType, range: PortRange, protocol: Protocol, seen: Set<string>): number {
  const f = join(path, 'nodePort');
  const v = optInt(p, 'nodePort', path) ?? 0;
  if (v === 0) return 0; // NodePort type without an allocated port yet: no NodePort rule
  if (type === 'ClusterIP') throw new InvalidObjectError(f, "forbidden: may not be used when `type` is 'ClusterIP'");
  if (v < range.min || v > range.max) throw new InvalidObjectError(f, `must be between ${range.min} and ${range.max}, inclusive, got ${v}`);
  if (seen.has(`${v}/${protocol}`)) throw new InvalidObjectError(f, `duplicate value ${v}/${protocol}`);
  seen.add(`${v}/${protocol}`);
  return v;
}
