/**
 * controlplane/kinds/service: core/v1 Service as kube-apiserver's registry
 * treats it: SetDefaults_Service, the strategy's PrepareForUpdate
 * (patchAllocatedValues, NormalizeClusterIPs, dropTypeDependentFields) and
 * ValidateService / ValidateServiceUpdate, plus the allocator's IP-family
 * checks for this single-stack IPv4 cluster. Pure.
 *
 * Every agent parses the stored Service and drops the rules of one it finds
 * invalid, so whatever a client can reach by update or patch is checked here.
 *
 * Upstream's rules and where they are (x: here, -: left out, why):
 *   defaults     x type, sessionAffinity, no sessionAffinityConfig unless ClientIP (then timeout 10800),
 *                x port protocol and targetPort, externalTrafficPolicy when externally accessible,
 *                x internalTrafficPolicy, allocateLoadBalancerNodePorts, ipFamilyPolicy/ipFamilies (alloc)
 *   update prep  x allocated IPs kept, clusterIPs follows clusterIP, type-dependent fields dropped when
 *                  the type no longer uses them and the client left them as they were (IPs, families,
 *                  policy, NodePorts, health check port, allocateLoadBalancerNodePorts, class, traffic policy)
 *   ports        x required unless headless/ExternalName, names (label, required when several, unique),
 *                x port number, protocol, targetPort number or IANA name, appProtocol, unique port+protocol,
 *                x unique nodePort+protocol, nodePort forbidden for ClusterIP; its range: the allocator
 *   affinity     x sessionAffinity values, ClientIP timeout 1..86400, config forbidden with None
 *   IPs          x clusterIP/clusterIPs linked, valid IPs, "None" alone, at most 2, families valid and
 *                  unique and matching the IPs, headless not for NodePort/LoadBalancer, none for ExternalName;
 *                x on update: clusterIPs and ipFamilies may not change; x dual stack refused (not configured)
 *                x externalIPs valid and not special
 *   policies     x externalTrafficPolicy only when externally accessible, internalTrafficPolicy,
 *                x healthCheckNodePort (immutable, LoadBalancer+Local only), trafficDistribution
 *   LB           x source ranges, allocateLoadBalancerNodePorts, loadBalancerClass (immutable),
 *                x status ingress IP, ipMode and hostname
 *                - status ingress on a non-LoadBalancer is not refused (a status written by hand stays)
 *   other        x selector labels, externalName, topology-mode annotation
 */
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import {
  arr,
  blank,
  CIDR_TEXT,
  ensure,
  ipErrors,
  isCidr,
  isIP,
  isSet,
  isV6,
  labelsErrors,
  nameErrors,
  type O,
  obj,
  portNumErrors,
  portNumOrNameErrors,
  qualifiedNameErrors,
  specialIPProblems,
  str,
} from './common.js';
import type { Strategy } from './strategy.js';

/** The cluster's only IP family (the service CIDR is IPv4). */
const CLUSTER_FAMILIES = ['IPv4'];
export const DEFAULT_AFFINITY_TIMEOUT = 10800;
export const MAX_AFFINITY_TIMEOUT = 86400;
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const LB_ONLY = "may only be used when `type` is 'LoadBalancer'";
const SOURCE_RANGES_ANNOTATION = 'service.beta.kubernetes.io/load-balancer-source-ranges';
const TOPOLOGY_MODE = 'service.kubernetes.io/topology-mode';
const TOPOLOGY_HINTS = 'service.kubernetes.io/topology-aware-hints';

/** ExternallyAccessible (pkg/api/service): the Services externalTrafficPolicy means something for. */
const externallyAccessible = (spec: O): boolean => spec['type'] === 'LoadBalancer' || spec['type'] === 'NodePort' || (spec['type'] === 'ClusterIP' && arr(spec['externalIPs']).length > 0);
/** NeedsHealthCheck: a LoadBalancer keeping the client's address has a health check NodePort. */
const needsHealthCheck = (spec: O): boolean => spec['type'] === 'LoadBalancer' && spec['externalTrafficPolicy'] === 'Local';
const needsClusterIP = (spec: O): boolean => spec['type'] !== 'ExternalName';
const needsNodePort = (spec: O): boolean => spec['type'] === 'NodePort' || spec['type'] === 'LoadBalancer';
const headless = (spec: O): boolean => {
  const ips = arr(spec['clusterIPs']);
  return ips.length === 1 && ips[0] === 'None';
};
const nodePortsOf = (spec: O): number[] => arr(spec['ports']).map((p) => obj(p)?.['nodePort']).filter((n): n is number => typeof n === 'number' && n !== 0);

/** SetDefaults_Service (and the allocator's family defaults), in place; on create and on every update. */
export function defaultService(o: O): void {
  const spec = ensure(o, 'spec');
  if (blank(spec['type'])) spec['type'] = 'ClusterIP';
  const type = spec['type'];
  if (blank(spec['sessionAffinity'])) spec['sessionAffinity'] = 'None';
  // A Service without affinity has no affinity config: a patch to None takes the defaulted config away with it.
  if (spec['sessionAffinity'] === 'None') delete spec['sessionAffinityConfig'];
  if (spec['sessionAffinity'] === 'ClientIP') {
    const ip = obj(obj(spec['sessionAffinityConfig'])?.['clientIP']);
    if (!ip || !isSet(ip['timeoutSeconds'])) spec['sessionAffinityConfig'] = { clientIP: { timeoutSeconds: DEFAULT_AFFINITY_TIMEOUT } };
  }
  for (const p of arr(spec['ports'])) {
    const port = obj(p);
    if (!port) continue;
    if (blank(port['protocol'])) port['protocol'] = 'TCP';
    if (port['targetPort'] === undefined || port['targetPort'] === null || port['targetPort'] === 0 || port['targetPort'] === '') port['targetPort'] = port['port'];
  }
  if (externallyAccessible(spec) && blank(spec['externalTrafficPolicy'])) spec['externalTrafficPolicy'] = 'Cluster';
  if ((type === 'NodePort' || type === 'LoadBalancer' || type === 'ClusterIP') && !isSet(spec['internalTrafficPolicy'])) spec['internalTrafficPolicy'] = 'Cluster';
  if (type === 'LoadBalancer' && !isSet(spec['allocateLoadBalancerNodePorts'])) spec['allocateLoadBalancerNodePorts'] = true;
  if (type !== 'ExternalName') {
    // The allocator's initIPFamilyFields, for a cluster with one family.
    if (!isSet(spec['ipFamilyPolicy'])) spec['ipFamilyPolicy'] = 'SingleStack';
    if (blank(spec['ipFamilies'])) spec['ipFamilies'] = [...CLUSTER_FAMILIES];
  }
  // NormalizeClusterIPs: a client that sets only the singular field gets the plural one.
  if (typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '' && arr(spec['clusterIPs']).length === 0) spec['clusterIPs'] = [spec['clusterIP']];
}

/** The strategy's PrepareForUpdate: what an update keeps from the stored Service, and what goes with a change of type. */
export function prepareServiceUpdate(o: O, old: O): void {
  const spec = ensure(o, 'spec');
  const was = obj(old['spec']) ?? {};
  // patchAllocatedValues: an update that leaves the allocated IPs out keeps them (`kubectl replace` of a manifest without clusterIP).
  if (needsClusterIP(was) && needsClusterIP(spec)) {
    if (blank(spec['clusterIP']) && was['clusterIP'] !== undefined) spec['clusterIP'] = was['clusterIP'];
    if (arr(spec['clusterIPs']).length === 0 && arr(was['clusterIPs']).length > 0) spec['clusterIPs'] = was['clusterIPs'];
  }
  // NormalizeClusterIPs: the singular field changed and the plural one did not: the plural follows (and validation refuses it).
  if (spec['clusterIP'] !== was['clusterIP'] && typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '' && deepEqual(arr(spec['clusterIPs']), arr(was['clusterIPs']))) {
    spec['clusterIPs'] = [spec['clusterIP']];
  }
  dropTypeDependentFields(o, old);
}

/**
 * dropTypeDependentFields (and patchAllocatedValues' health check port): what no longer applies to
 * the new type and the client left as it was goes; what the client changed stays, for validation to
 * refuse. The load-balancer status goes when the Service stops being a LoadBalancer (upstream clears
 * it on any update of a non-LoadBalancer; here only on the change, so a status written by hand stays).
 */
function dropTypeDependentFields(o: O, old: O): void {
  const spec = ensure(o, 'spec');
  const was = obj(old['spec']) ?? {};
  const same = (k: string) => deepEqual(spec[k] ?? null, was[k] ?? null);
  const unchanged = (k: string) => spec[k] !== undefined && deepEqual(spec[k], was[k]);
  if (needsClusterIP(was) && !needsClusterIP(spec)) {
    if (str(spec['clusterIP']) === str(was['clusterIP']) && deepEqual(arr(spec['clusterIPs']), arr(was['clusterIPs']))) {
      delete spec['clusterIP'];
      delete spec['clusterIPs'];
    }
    if (deepEqual(arr(spec['ipFamilies']), arr(was['ipFamilies']))) delete spec['ipFamilies'];
    if (str(spec['ipFamilyPolicy']) === str(was['ipFamilyPolicy'])) delete spec['ipFamilyPolicy'];
  }
  // Users may add, remove or change ports, as long as they add no NodePort of their own.
  if (needsNodePort(was) && !needsNodePort(spec)) {
    const had = new Set(nodePortsOf(was));
    if (nodePortsOf(spec).every((n) => had.has(n))) for (const p of arr(spec['ports'])) delete (obj(p) ?? {})['nodePort'];
  }
  if (needsHealthCheck(was) && needsHealthCheck(spec) && !spec['healthCheckNodePort'] && was['healthCheckNodePort'] !== undefined) spec['healthCheckNodePort'] = was['healthCheckNodePort'];
  if (needsHealthCheck(was) && !needsHealthCheck(spec) && same('healthCheckNodePort')) delete spec['healthCheckNodePort'];
  if (was['type'] === 'LoadBalancer' && spec['type'] !== 'LoadBalancer') {
    if (unchanged('allocateLoadBalancerNodePorts')) delete spec['allocateLoadBalancerNodePorts'];
    if (unchanged('loadBalancerClass')) delete spec['loadBalancerClass'];
  }
  if (externallyAccessible(was) && !externallyAccessible(spec) && unchanged('externalTrafficPolicy')) delete spec['externalTrafficPolicy'];
  if (was['type'] === 'LoadBalancer' && spec['type'] !== 'LoadBalancer' && obj(o['status'])?.['loadBalancer'] !== undefined) (o['status'] as O)['loadBalancer'] = {};
}

/** ValidateService, and ValidateServiceUpdate when `old` is set. */
export function validateService(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']) ?? {};
  const was = old ? (obj(old['spec']) ?? {}) : null;
  const type = spec['type'];
  // ValidateServiceUpdate reports what may not change before what ValidateService finds.
  if (was) {
    errs.push(...clusterIPUpdateErrors(spec, was), ...ipFamilyUpdateErrors(spec, was));
    const cls = spec['loadBalancerClass'];
    if (was['type'] === 'LoadBalancer' && type === 'LoadBalancer' && (cls ?? null) !== (was['loadBalancerClass'] ?? null)) errs.push(fieldErr.invalid('spec.loadBalancerClass', cls ?? null, 'may not change once set'));
    // validateServiceExternalTrafficFieldsUpdate
    if (needsHealthCheck(was) && needsHealthCheck(spec) && num0(spec['healthCheckNodePort']) !== num0(was['healthCheckNodePort'])) errs.push(fieldErr.forbidden('spec.healthCheckNodePort', 'field is immutable'));
  }
  const annotations = obj(obj(o['metadata'])?.['annotations']) ?? {};
  if (TOPOLOGY_MODE in annotations && TOPOLOGY_HINTS in annotations && annotations[TOPOLOGY_MODE] !== annotations[TOPOLOGY_HINTS]) {
    errs.push(fieldErr.invalid(`metadata.annotations[${TOPOLOGY_MODE}]`, annotations[TOPOLOGY_MODE], `must match annotations[${TOPOLOGY_HINTS}] when both are specified`));
  }
  // nodenet reports the type first (upstream reports it after the ports and IPs).
  if (blank(type)) errs.push(fieldErr.required('spec.type'));
  else if (!SERVICE_TYPES.includes(String(type))) errs.push(fieldErr.notSupported('spec.type', type, SERVICE_TYPES));
  const ports = arr(spec['ports']);
  if (ports.length === 0 && !headless(spec) && type !== 'ExternalName') errs.push(fieldErr.required('spec.ports'));
  if ((type === 'LoadBalancer' || type === 'NodePort') && headless(spec)) {
    errs.push(fieldErr.invalid('spec.clusterIPs[0]', 'None', `may not be set to 'None' for ${String(type)} services`));
  }
  if (type === 'ExternalName') {
    if (arr(spec['clusterIPs']).length > 0) errs.push(fieldErr.forbidden('spec.clusterIPs', 'may not be set for ExternalName services'));
    if (arr(spec['ipFamilies']).length > 0) errs.push(fieldErr.forbidden('spec.ipFamilies', 'may not be set for ExternalName services'));
    if (isSet(spec['ipFamilyPolicy'])) errs.push(fieldErr.forbidden('spec.ipFamilyPolicy', 'may not be set for ExternalName services'));
    // The name (a CNAME) may end in a dot.
    const cname = str(spec['externalName']).replace(/\.$/, '');
    if (cname === '') errs.push(fieldErr.required('spec.externalName'));
    else errs.push(...nameErrors('spec.externalName', 'subdomain', cname));
  }
  const names = new Set<string>();
  ports.forEach((p, i) => errs.push(...servicePortErrors(`spec.ports[${i}]`, obj(p) ?? {}, ports.length > 1, names)));
  if (isSet(spec['selector'])) errs.push(...labelsErrors('spec.selector', spec['selector']));
  errs.push(...affinityErrors(spec));
  if (type !== 'ExternalName') errs.push(...clusterIPsErrors(spec));
  arr(spec['externalIPs']).forEach((ip, i) => {
    const path = `spec.externalIPs[${i}]`;
    const bad = ipErrors(path, ip);
    errs.push(...(bad.length ? bad : specialIPProblems(String(ip)).map((m) => fieldErr.invalid(path, ip, m))));
  });
  if (type === 'ClusterIP') {
    ports.forEach((p, i) => {
      if (num0(obj(p)?.['nodePort']) !== 0) errs.push(fieldErr.forbidden(`spec.ports[${i}].nodePort`, "may not be used when `type` is 'ClusterIP'"));
    });
  } else if (type === 'NodePort' || type === 'LoadBalancer') {
    // The allocator checks the NodePort range; a number no port can be is refused here.
    ports.forEach((p, i) => {
      const n = obj(p)?.['nodePort'];
      if (num0(n) !== 0) errs.push(...portNumErrors(`spec.ports[${i}].nodePort`, n));
    });
  }
  const nodePorts = new Set<string>();
  ports.forEach((p, i) => {
    const port = obj(p) ?? {};
    if (num0(port['nodePort']) === 0) return;
    const key = `${str(port['protocol'])}/${String(port['nodePort'])}`;
    if (nodePorts.has(key)) errs.push(fieldErr.duplicate(`spec.ports[${i}].nodePort`, port['nodePort']));
    nodePorts.add(key);
  });
  const portKeys = new Set<string>();
  ports.forEach((p, i) => {
    const port = obj(p) ?? {};
    const key = `${String(port['port'])}/${str(port['protocol'])}`;
    if (portKeys.has(key)) errs.push(fieldErr.duplicate(`spec.ports[${i}]`, { port: port['port'], protocol: port['protocol'] }));
    portKeys.add(key);
  });
  errs.push(...loadBalancerErrors(o));
  errs.push(...trafficPolicyErrors(spec));
  if (isSet(spec['trafficDistribution']) && spec['trafficDistribution'] !== 'PreferClose') errs.push(fieldErr.notSupported('spec.trafficDistribution', spec['trafficDistribution'], ['PreferClose']));
  errs.push(...loadBalancerStatusErrors(o));
  if (type !== 'ExternalName') errs.push(...familyAllocationErrors(spec));
  return errs;
}

const num0 = (v: unknown): number => (typeof v === 'number' ? v : v === undefined || v === null ? 0 : NaN);

/** validateServicePort. */
function servicePortErrors(path: string, port: O, requireName: boolean, names: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(port['name']);
  if (requireName && name === '') errs.push(fieldErr.required(`${path}.name`));
  else if (name !== '') {
    errs.push(...nameErrors(`${path}.name`, 'label', name));
    if (names.has(name)) errs.push(fieldErr.duplicate(`${path}.name`, name));
    else names.add(name);
  }
  // IsValidPortNum only: a missing port is port 0, "Invalid value: 0" (a container's is "Required").
  errs.push(...portNumErrors(`${path}.port`, port['port'] ?? 0));
  if (blank(port['protocol'])) errs.push(fieldErr.required(`${path}.protocol`));
  else if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${path}.protocol`, port['protocol'], PROTOCOLS));
  errs.push(...portNumOrNameErrors(`${path}.targetPort`, port['targetPort']));
  if (isSet(port['appProtocol'])) errs.push(...qualifiedNameErrors(`${path}.appProtocol`, port['appProtocol']));
  return errs;
}

/** sessionAffinity and validateClientIPAffinityConfig. */
function affinityErrors(spec: O): FieldError[] {
  const a = spec['sessionAffinity'];
  if (blank(a)) return [fieldErr.required('spec.sessionAffinity')];
  if (a !== 'ClientIP' && a !== 'None') return [fieldErr.notSupported('spec.sessionAffinity', a, ['ClientIP', 'None'])];
  const path = 'spec.sessionAffinityConfig';
  const cfg = spec['sessionAffinityConfig'];
  if (a === 'None') return isSet(cfg) ? [fieldErr.forbidden(path, 'must not be set when session affinity is None')] : [];
  const when = 'when session affinity type is ClientIP';
  if (!isSet(cfg)) return [fieldErr.required(path, when)];
  const ip = obj(cfg)?.['clientIP'];
  if (!isSet(ip)) return [fieldErr.required(`${path}.clientIP`, when)];
  const t = obj(ip)?.['timeoutSeconds'];
  if (!isSet(t)) return [fieldErr.required(`${path}.clientIP.timeoutSeconds`, when)];
  if (typeof t !== 'number' || t <= 0 || t > MAX_AFFINITY_TIMEOUT) return [fieldErr.invalid(`${path}.clientIP.timeoutSeconds`, t, `must be greater than 0 and less than ${MAX_AFFINITY_TIMEOUT}`)];
  return [];
}

/** ValidateServiceClusterIPsRelatedFields (not for ExternalName). */
function clusterIPsErrors(spec: O): FieldError[] {
  const errs: FieldError[] = [];
  const path = 'spec.clusterIPs';
  const ip = str(spec['clusterIP']);
  const ips = arr(spec['clusterIPs']);
  const families = arr(spec['ipFamilies']);
  if (ip !== '') {
    if (ips.length === 0) errs.push(fieldErr.required(path));
    else if (ips[0] !== ip) errs.push(fieldErr.invalid(path, ips, 'first value must match `clusterIP`'));
  } else if (ips.length !== 0) errs.push(fieldErr.invalid(path, ips, 'must be empty when `clusterIP` is not specified'));
  const seen = new Set<unknown>();
  families.forEach((f, i) => {
    if (f !== 'IPv4' && f !== 'IPv6') errs.push(fieldErr.notSupported(`spec.ipFamilies[${i}]`, f, ['IPv4', 'IPv6']));
    if (seen.has(f)) errs.push(fieldErr.duplicate(`spec.ipFamilies[${i}]`, f));
    seen.add(f);
  });
  const policy = spec['ipFamilyPolicy'];
  const POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'];
  if (isSet(policy) && !POLICIES.includes(String(policy))) errs.push(fieldErr.notSupported('spec.ipFamilyPolicy', policy, POLICIES));
  let invalidIPs = false;
  ips.forEach((v, i) => {
    if (i === 0 && v === 'None') {
      if (ips.length > 1) {
        invalidIPs = true;
        errs.push(fieldErr.invalid(path, ips, "'None' must be the first and only value"));
      }
      return;
    }
    const bad = ipErrors(`${path}[${i}]`, v);
    if (bad.length) invalidIPs = true;
    errs.push(...bad);
  });
  if (ips.length > 2) errs.push(fieldErr.invalid(path, ips, 'may only hold up to 2 values'));
  if (invalidIPs) return errs;
  if (ips.length > 1 && (ips.length > 2 || isV6(String(ips[0])) === isV6(String(ips[1])))) errs.push(fieldErr.invalid(path, ips, 'may specify no more than one IP for each IP family'));
  if (!headless(spec)) {
    ips.forEach((v, i) => {
      const f = families[i];
      if (f === 'IPv4' && isV6(String(v))) errs.push(fieldErr.invalid(`${path}[${i}]`, v, `expected an IPv4 value as indicated by \`ipFamilies[${i}]\``));
      if (f === 'IPv6' && !isV6(String(v))) errs.push(fieldErr.invalid(`${path}[${i}]`, v, `expected an IPv6 value as indicated by \`ipFamilies[${i}]\``));
    });
  }
  return errs;
}

/** The allocator's checks of the families a Service asks for (initIPFamilyFields), on a cluster with IPv4 only. */
function familyAllocationErrors(spec: O): FieldError[] {
  const errs: FieldError[] = [];
  if (spec['ipFamilyPolicy'] === 'RequireDualStack') errs.push(fieldErr.invalid('spec.ipFamilyPolicy', 'RequireDualStack', 'Cluster is not configured for dual stack services'));
  arr(spec['ipFamilies']).forEach((f, i) => {
    if ((f === 'IPv4' || f === 'IPv6') && !CLUSTER_FAMILIES.includes(f)) errs.push(fieldErr.invalid(`spec.ipFamilies[${i}]`, arr(spec['clusterIPs']), `ipfamily ${f} is not configured on cluster`));
  });
  return errs;
}

/** validateUpgradeDowngradeClusterIPs: the allocated IPs may not change (ExternalName and headless-to-headless aside). */
function clusterIPUpdateErrors(spec: O, was: O): FieldError[] {
  if (spec['type'] === 'ExternalName' || was['type'] === 'ExternalName') return [];
  if (headless(spec) && headless(was)) return [];
  const now = arr(spec['clusterIPs']);
  const before = arr(was['clusterIPs']);
  const errs: FieldError[] = [];
  if (now.length === before.length) {
    before.forEach((ip, i) => {
      if (ip !== now[i]) errs.push(fieldErr.invalid(`spec.clusterIPs[${i}]`, now, 'may not change once set'));
    });
  } else if (before.length > now.length) {
    if (now.length === 0) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'primary clusterIP can not be unset'));
    if (before.length > 0 && now.length > 0 && now[0] !== before[0]) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'may not change once set'));
    if (now.length === 1 && spec['ipFamilyPolicy'] !== 'SingleStack') errs.push(fieldErr.invalid('spec.ipFamilyPolicy', spec['ipFamilyPolicy'] ?? null, "must be set to 'SingleStack' when releasing the secondary clusterIP"));
  } else if (before.length > 0 && now[0] !== before[0]) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'may not change once set'));
  return errs;
}

/** validateUpgradeDowngradeIPFamilies. */
function ipFamilyUpdateErrors(spec: O, was: O): FieldError[] {
  if (spec['type'] === 'ExternalName' || was['type'] === 'ExternalName') return [];
  if (headless(spec) !== headless(was) || headless(spec)) return [];
  const now = arr(spec['ipFamilies']);
  const before = arr(was['ipFamilies']);
  const errs: FieldError[] = [];
  if (now.length === before.length) {
    before.forEach((f, i) => {
      if (f !== now[i]) errs.push(fieldErr.invalid('spec.ipFamilies[0]', now, 'may not change once set'));
    });
  } else if (before.length > now.length) {
    if (arr(spec['clusterIPs']).length === 0) errs.push(fieldErr.invalid('spec.ipFamilies[0]', now, 'primary ipFamily can not be unset'));
    if (now.length > 0 && now[0] !== before[0]) errs.push(fieldErr.invalid('spec.ipFamilies[0]', arr(spec['clusterIPs']), 'may not change once set'));
    if (now.length === 1 && spec['ipFamilyPolicy'] !== 'SingleStack') errs.push(fieldErr.invalid('spec.ipFamilyPolicy', spec['ipFamilyPolicy'] ?? null, "must be set to 'SingleStack' when releasing the secondary ipFamily"));
  } else if (before.length > 0 && now.length > 0 && now[0] !== before[0]) errs.push(fieldErr.invalid('spec.ipFamilies[0]', arr(spec['clusterIPs']), 'may not change once set'));
  return errs;
}

/**
 * The load-balancer fields of ValidateService, in upstream's words. healthCheckNodePort is not Required here: the allocator fills it in after validation (before
 * it, upstream), and checks a requested one against the NodePort range.
 */
function loadBalancerErrors(o: O): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']) ?? {};
  const lb = spec['type'] === 'LoadBalancer';
  const ranges = arr(spec['loadBalancerSourceRanges']);
  if (ranges.length > 0) {
    // Upstream's path is spelled so (a historical accident it keeps); values may be space-padded.
    if (!lb) errs.push(fieldErr.forbidden('spec.LoadBalancerSourceRanges', LB_ONLY));
    ranges.forEach((r, i) => {
      const v = typeof r === 'string' ? r.trim() : r;
      if (!isCidr(v)) errs.push(fieldErr.invalid(`spec.LoadBalancerSourceRanges[${i}]`, v, CIDR_TEXT));
    });
  } else {
    const ann = obj(obj(o['metadata'])?.['annotations'])?.[SOURCE_RANGES_ANNOTATION];
    if (typeof ann === 'string') {
      const path = `metadata.annotations[${SOURCE_RANGES_ANNOTATION}]`;
      if (!lb) errs.push(fieldErr.forbidden(path, LB_ONLY));
      if (ann.trim() !== '') for (const v of ann.trim().split(',').map((x) => x.trim())) if (!isCidr(v)) errs.push(fieldErr.invalid(path, v, CIDR_TEXT));
    }
  }
  if (isSet(spec['allocateLoadBalancerNodePorts']) && !lb) errs.push(fieldErr.forbidden('spec.allocateLoadBalancerNodePorts', LB_ONLY));
  // validateLoadBalancerClassField
  const cls = spec['loadBalancerClass'];
  if (lb && isSet(cls)) errs.push(...qualifiedNameErrors('spec.loadBalancerClass', cls));
  else if (!lb && isSet(cls)) errs.push(fieldErr.forbidden('spec.loadBalancerClass', LB_ONLY));
  return errs;
}

/** validateServiceExternalTrafficPolicy, validateServiceInternalTrafficFieldsValue, and the health check port's immutability. */
function trafficPolicyErrors(spec: O): FieldError[] {
  const errs: FieldError[] = [];
  const etp = spec['externalTrafficPolicy'];
  if (!externallyAccessible(spec)) {
    if (!blank(etp)) errs.push(fieldErr.invalid('spec.externalTrafficPolicy', etp, 'may only be set for externally-accessible services'));
  } else if (blank(etp)) errs.push(fieldErr.required('spec.externalTrafficPolicy'));
  else if (etp !== 'Cluster' && etp !== 'Local') errs.push(fieldErr.notSupported('spec.externalTrafficPolicy', etp, ['Cluster', 'Local']));
  const hc = spec['healthCheckNodePort'];
  if (num0(hc) !== 0) {
    if (!needsHealthCheck(spec)) errs.push(fieldErr.invalid('spec.healthCheckNodePort', hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"));
    else errs.push(...portNumErrors('spec.healthCheckNodePort', hc));
  }
  const itp = spec['internalTrafficPolicy'];
  if (!isSet(itp)) {
    // Not required of ExternalName Services, for historical reasons.
    if (['NodePort', 'LoadBalancer', 'ClusterIP'].includes(String(spec['type']))) errs.push(fieldErr.required('spec.internalTrafficPolicy'));
  } else if (itp !== 'Cluster' && itp !== 'Local') errs.push(fieldErr.notSupported('spec.internalTrafficPolicy', itp, ['Cluster', 'Local']));
  return errs;
}

/**
 * ValidateLoadBalancerStatus (upstream runs it on status updates; the main resource keeps the stored
 * status, so checking it on every write is the same): what the agents read from the ingress.
 */
function loadBalancerStatusErrors(o: O): FieldError[] {
  const errs: FieldError[] = [];
  arr(obj(obj(o['status'])?.['loadBalancer'])?.['ingress']).forEach((ing, i) => {
    const path = `status.loadBalancer.ingress[${i}]`;
    const g = obj(ing) ?? {};
    const ip = str(g['ip']);
    if (ip !== '') errs.push(...ipErrors(`${path}.ip`, ip));
    const mode = g['ipMode'];
    if (isSet(mode) && ip === '') errs.push(fieldErr.forbidden(`${path}.ipMode`, 'may not be specified when `ip` is not set'));
    else if (isSet(mode) && mode !== 'Proxy' && mode !== 'VIP') errs.push(fieldErr.notSupported(`${path}.ipMode`, mode, ['Proxy', 'VIP']));
    const host = str(g['hostname']);
    if (host !== '') {
      errs.push(...nameErrors(`${path}.hostname`, 'subdomain', host));
      if (isIP(host)) errs.push(fieldErr.invalid(`${path}.hostname`, host, 'must be a DNS name, not an IP address'));
    }
  });
  return errs;
}

/** The Service's strategy. */
export const serviceStrategy: Strategy = {
  nameRule: 'dns1035',
  defaults: defaultService,
  validate: validateService,
  initialStatus: () => ({ loadBalancer: {} }),
  prepareForUpdate: prepareServiceUpdate,
};
