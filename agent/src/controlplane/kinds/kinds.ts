/**
 * controlplane/kinds: what each served kind does on create and update, as
 * kube-apiserver's registry strategies do it: defaults (pkg/apis/<group>/
 * <version>/defaults.go), validation (pkg/apis/<group>/validation) in its
 * field-error words, the name rule, and which status a new object starts
 * with. Pure: objects in, objects and field errors out.
 */
import { isIPv6 } from 'node:net';
import { isDNS1123Label, isDNS1123Subdomain } from '../../net/dns-names.js';
import { isIPv4, parseCidr } from '../../net/ip.js';
import { deepEqual } from '../../reconcile/deep-equal.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem, labelSelectorRequirements, labelValueProblem, matchesLabels } from '../api/selectors.js';
import type { KObject } from '../store/types.js';

type O = Record<string, unknown>;
const obj = (v: unknown): O | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as O) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const ensure = (o: O, k: string): O => (obj(o[k]) ?? (o[k] = {})) as O;

/** The name rules of upstream's ValidateObjectMeta: DNS subdomain, DNS-1123 label, DNS-1035 label, or only a valid path segment (core/v1 Events). */
export type NameRule = 'subdomain' | 'label' | 'dns1035' | 'path';

export interface Strategy {
  readonly nameRule: NameRule;
  /** Fills defaults in place (the object is the caller's fresh copy). Runs on create and on every update. */
  defaults(o: O): void;
  /** Field errors of the object (old set on update). */
  validate(o: O, old: O | null): FieldError[];
  /** The status a new object starts with (its submitted status is dropped, as kube-apiserver's PrepareForCreate does). */
  initialStatus?(o: O): O | undefined;
  /** Create-only preparation, before defaults (PrepareForCreate beyond the status). */
  prepareForCreate?(o: O): void;
  /** Update-only preparation, before defaults: what the update keeps from the stored object (PrepareForUpdate). */
  prepareForUpdate?(o: O, old: O): void;
  /**
   * Whether an update moves metadata.generation on (PrepareForUpdate). Absent: the kind has no
   * generation at all (Services, Namespaces, Nodes, Events and Leases do not, in kube-apiserver).
   */
  bumpsGeneration?(o: O, old: O): boolean;
  /** An update of a missing object creates it (Events and Leases: AllowCreateOnUpdate). */
  readonly allowCreateOnUpdate?: boolean;
}

const NAME_TEXT: Record<NameRule, string> = {
  subdomain: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  path: '',
  label: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  dns1035: "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
};

/** Every problem the name rule finds with a name, in upstream's order (too long, then the pattern); [] when valid. */
export function nameProblems(rule: NameRule, name: string): string[] {
  if (rule === 'path') {
    // path.IsValidPathSegmentName
    if (name === '.' || name === '..') return [`may not be '${name}'`];
    return ['/', '%'].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
  }
  const max = rule === 'subdomain' ? 253 : 63;
  const re = rule === 'subdomain' ? /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/ : rule === 'label' ? /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/ : /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
  const out: string[] = [];
  if (name.length > max) out.push(`must be no more than ${max} characters`);
  if (!re.test(name)) out.push(NAME_TEXT[rule]);
  return out;
}

/** The name rule's first problem with a name, or null. */
export function nameProblem(rule: NameRule, name: string): string | null {
  return nameProblems(rule, name)[0] ?? null;
}

/** metadata rules every kind shares: labels and annotations. */
export function validateMeta(meta: O): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(obj(meta['labels']) ?? {})) {
    const kp = labelKeyProblem(k);
    if (kp) errs.push(fieldErr.invalid('metadata.labels', k, kp));
    if (typeof v !== 'string') errs.push(fieldErr.invalid(`metadata.labels`, v, 'must be a string'));
    else {
      const vp = labelValueProblem(v);
      if (vp) errs.push(fieldErr.invalid('metadata.labels', v, vp));
    }
  }
  let size = 0;
  for (const [k, v] of Object.entries(obj(meta['annotations']) ?? {})) {
    const kp = labelKeyProblem(k.toLowerCase());
    if (kp) errs.push(fieldErr.invalid('metadata.annotations', k, kp));
    size += k.length + (typeof v === 'string' ? v.length : 0);
  }
  if (size > 256 * 1024) errs.push(fieldErr.tooLong('metadata.annotations', 256 * 1024));
  // ValidateFinalizers: qualified names, and not both of the garbage collector's policies.
  const finalizers = arr(meta['finalizers']);
  finalizers.forEach((f, i) => {
    const p = typeof f === 'string' ? labelKeyProblem(f) : 'must be a string';
    if (p) errs.push(fieldErr.invalid(`metadata.finalizers[${i}]`, f, p));
  });
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion')) {
    errs.push(fieldErr.invalid('metadata.finalizers', finalizers, 'finalizer orphan and foregroundDeletion cannot be both set'));
  }
  return errs;
}

/** Whether anything but metadata and status differs (the spec, for kinds whose spec is not one field). */
const specChanged = (o: O, old: O): boolean => {
  const strip = (x: O) => {
    const c: O = { ...x };
    delete c['metadata'];
    delete c['status'];
    return c;
  };
  return !deepEqual(strip(o), strip(old));
};
/** Maps compared as Go's apiequality.Semantic does: nil and empty are the same. */
const sameMap = (a: unknown, b: unknown): boolean => deepEqual(obj(a) ?? {}, obj(b) ?? {});

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];

function portRange(errs: FieldError[], path: string, v: unknown, required: boolean | 'invalid'): void {
  if (required !== 'invalid' && (v === undefined || v === null || v === 0)) {
    if (required) errs.push(fieldErr.required(path));
    return;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 65535) errs.push(fieldErr.invalid(path, v, 'must be between 1 and 65535, inclusive'));
}

/** The IANA_SVC_NAME rule of a named port. */
function ianaSvcNameProblem(s: string): string | null {
  if (s.length > 15) return 'must be no more than 15 characters';
  if (!/^[-a-z0-9]+$/.test(s)) return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
  if (s.includes('--')) return "must not contain consecutive hyphens";
  if (!/[a-z]/.test(s)) return 'must contain at least one letter (a-z)';
  if (s.startsWith('-') || s.endsWith('-')) return 'must not begin or end with a hyphen';
  return null;
}

function selectorMapErrors(errs: FieldError[], path: string, sel: unknown): void {
  for (const [k, v] of Object.entries(obj(sel) ?? {})) {
    const kp = labelKeyProblem(k);
    if (kp) errs.push(fieldErr.invalid(path, k, kp));
    if (typeof v === 'string') {
      const vp = labelValueProblem(v);
      if (vp) errs.push(fieldErr.invalid(`${path}[${k}]`, v, vp));
    }
  }
}

const service: Strategy = {
  nameRule: 'dns1035',
  defaults(o) {
    const spec = ensure(o, 'spec');
    spec['type'] ??= 'ClusterIP';
    const type = spec['type'];
    spec['sessionAffinity'] ??= 'None';
    if (type !== 'ExternalName') {
      spec['internalTrafficPolicy'] ??= 'Cluster';
      spec['ipFamilyPolicy'] ??= 'SingleStack';
      spec['ipFamilies'] ??= ['IPv4'];
    }
    if ((type === 'NodePort' || type === 'LoadBalancer') && spec['externalTrafficPolicy'] === undefined) spec['externalTrafficPolicy'] = 'Cluster';
    if (type === 'LoadBalancer') spec['allocateLoadBalancerNodePorts'] ??= true;
    // normalizeClusterIPs: a client that sets only the singular field gets the plural one.
    if (typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '' && arr(spec['clusterIPs']).length === 0) spec['clusterIPs'] = [spec['clusterIP']];
    if (spec['sessionAffinity'] === 'ClientIP') {
      const cfg = ensure(spec, 'sessionAffinityConfig');
      const ip = ensure(cfg, 'clientIP');
      ip['timeoutSeconds'] ??= 10800;
    }
    for (const p of arr(spec['ports'])) {
      const port = obj(p);
      if (!port) continue;
      port['protocol'] ??= 'TCP';
      if (port['targetPort'] === undefined || port['targetPort'] === 0 || port['targetPort'] === '') port['targetPort'] = port['port'];
    }
  },
  validate(o, old) {
    const errs: FieldError[] = [];
    const spec = obj(o['spec']) ?? {};
    const type = spec['type'];
    if (!SERVICE_TYPES.includes(String(type))) errs.push(fieldErr.notSupported('spec.type', type, SERVICE_TYPES));
    const ports = arr(spec['ports']);
    const headless = spec['clusterIP'] === 'None';
    if (ports.length === 0 && type !== 'ExternalName' && !headless) errs.push(fieldErr.required('spec.ports'));
    const names = new Set<string>();
    const seen = new Set<string>();
    ports.forEach((p, i) => {
      const path = `spec.ports[${i}]`;
      const port = obj(p) ?? {};
      const name = typeof port['name'] === 'string' ? port['name'] : '';
      if (ports.length > 1 && name === '') errs.push(fieldErr.required(`${path}.name`));
      if (name !== '') {
        if (!isDNS1123Label(name)) errs.push(fieldErr.invalid(`${path}.name`, name, NAME_TEXT.label));
        if (names.has(name)) errs.push(fieldErr.duplicate(`${path}.name`, name));
        names.add(name);
      }
      // Upstream checks IsValidPortNum only: a missing port is port 0, "Invalid value: 0" (a container's is "Required").
      portRange(errs, `${path}.port`, port['port'] ?? 0, 'invalid');
      if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${path}.protocol`, port['protocol'], PROTOCOLS));
      const key = `${String(port['port'])}/${String(port['protocol'])}`;
      if (seen.has(key)) errs.push(fieldErr.duplicate(path, { port: port['port'], protocol: port['protocol'] }));
      seen.add(key);
      const tp = port['targetPort'];
      if (typeof tp === 'number') portRange(errs, `${path}.targetPort`, tp, false);
      else if (typeof tp === 'string') {
        const pr = ianaSvcNameProblem(tp);
        if (pr) errs.push(fieldErr.invalid(`${path}.targetPort`, tp, pr));
      }
      if (port['nodePort'] !== undefined && port['nodePort'] !== 0) {
        if (type !== 'NodePort' && type !== 'LoadBalancer') errs.push(fieldErr.forbidden(`${path}.nodePort`, 'may not be used when `type` is \'ClusterIP\''));
        else portRange(errs, `${path}.nodePort`, port['nodePort'], false);
      }
    });
    const ip = spec['clusterIP'];
    if (ip !== undefined && ip !== '' && ip !== 'None' && !(typeof ip === 'string' && isIPv4(ip))) errs.push(fieldErr.invalid('spec.clusterIP', ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    if (old) errs.push(...clusterIPUpdateErrors(spec, obj(old['spec']) ?? {}));
    for (const [i, e] of arr(spec['externalIPs']).entries()) if (typeof e !== 'string' || !isIPv4(e)) errs.push(fieldErr.invalid(`spec.externalIPs[${i}]`, e, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    for (const [f, vals] of [['sessionAffinity', ['ClientIP', 'None']], ['externalTrafficPolicy', ['Cluster', 'Local']], ['internalTrafficPolicy', ['Cluster', 'Local']]] as const) {
      if (spec[f] !== undefined && !(vals as readonly string[]).includes(String(spec[f]))) errs.push(fieldErr.notSupported(`spec.${f}`, spec[f], vals));
    }
    errs.push(...serviceLoadBalancerErrors(o, old));
    if (type === 'ExternalName') {
      const en = spec['externalName'];
      if (typeof en !== 'string' || en === '') errs.push(fieldErr.required('spec.externalName'));
      else if (!isDNS1123Subdomain(en)) errs.push(fieldErr.invalid('spec.externalName', en, NAME_TEXT.subdomain));
    }
    selectorMapErrors(errs, 'spec.selector', spec['selector']);
    return errs;
  },
  initialStatus: () => ({ loadBalancer: {} }),
  prepareForUpdate(o, old) {
    // patchAllocatedValues and normalizeClusterIPs: an update that leaves the allocated IPs out keeps them
    // (`kubectl replace` of a manifest without clusterIP works).
    const spec = ensure(o, 'spec');
    const was = obj(old['spec']) ?? {};
    const needsIP = (s: O) => (s['type'] ?? 'ClusterIP') !== 'ExternalName';
    if (needsIP(was) && needsIP(spec)) {
      if (spec['clusterIP'] === undefined || spec['clusterIP'] === '') {
        if (was['clusterIP'] !== undefined) spec['clusterIP'] = was['clusterIP'];
      }
      if (arr(spec['clusterIPs']).length === 0 && arr(was['clusterIPs']).length > 0) spec['clusterIPs'] = was['clusterIPs'];
    }
    if (spec['clusterIP'] !== was['clusterIP'] && typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '' && deepEqual(arr(spec['clusterIPs']), arr(was['clusterIPs']))) {
      // The singular field changed and the plural one did not: the plural follows (and validation refuses it).
      spec['clusterIPs'] = [spec['clusterIP']];
    }
    // dropTypeDependentFields: a Service turned back into a ClusterIP one loses the NodePorts it had,
    // unless the client changed them (then validation says they may not be used).
    if (spec['type'] === 'ClusterIP' && (was['type'] === 'NodePort' || was['type'] === 'LoadBalancer')) {
      const oldPorts = arr(was['ports']).map(obj).filter((p): p is O => p !== undefined);
      for (const p of arr(spec['ports']).map(obj)) {
        if (!p || p['nodePort'] === undefined) continue;
        const prev = oldPorts.find((q) => q['port'] === p['port'] && (q['protocol'] ?? 'TCP') === (p['protocol'] ?? 'TCP'));
        if (prev && prev['nodePort'] === p['nodePort']) delete p['nodePort'];
      }
    }
    dropLoadBalancerFields(o, old);
  },
};

/** ExternallyAccessible (pkg/api/service): the Services externalTrafficPolicy means something for. */
const externallyAccessible = (spec: O): boolean => spec['type'] === 'LoadBalancer' || spec['type'] === 'NodePort' || (spec['type'] === 'ClusterIP' && arr(spec['externalIPs']).length > 0);
/** NeedsHealthCheck: a LoadBalancer keeping the client's address has a health check NodePort. */
const needsHealthCheck = (spec: O): boolean => spec['type'] === 'LoadBalancer' && spec['externalTrafficPolicy'] === 'Local';
const LB_ONLY = "may only be used when `type` is 'LoadBalancer'";
const CIDR_TEXT = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';
const SOURCE_RANGES_ANNOTATION = 'service.beta.kubernetes.io/load-balancer-source-ranges';

/** ParseCIDRSloppy: an IPv4 or IPv6 address, a slash and a prefix length (host bits allowed). */
function isCidr(s: string): boolean {
  const [ip = '', pfx = '', ...rest] = s.split('/');
  if (rest.length || !/^\d{1,3}$/.test(pfx)) return false;
  return (isIPv4(ip) && Number(pfx) <= 32) || (isIPv6(ip) && Number(pfx) <= 128);
}

/**
 * The load-balancer fields of ValidateService and ValidateServiceUpdate (`old` set), in upstream's
 * words. healthCheckNodePort is not Required here: the allocator fills it in after validation (before
 * it, upstream), and checks a requested one against the NodePort range.
 */
function serviceLoadBalancerErrors(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']) ?? {};
  const was = old ? (obj(old['spec']) ?? {}) : null;
  const lb = spec['type'] === 'LoadBalancer';
  const etp = spec['externalTrafficPolicy'];
  if (etp !== undefined && etp !== '' && !externallyAccessible(spec)) errs.push(fieldErr.invalid('spec.externalTrafficPolicy', etp, 'may only be set for externally-accessible services'));
  const hc = spec['healthCheckNodePort'];
  if (hc !== undefined && hc !== null && hc !== 0) {
    if (!needsHealthCheck(spec)) errs.push(fieldErr.invalid('spec.healthCheckNodePort', hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"));
    else portRange(errs, 'spec.healthCheckNodePort', hc, false);
  }
  if (was && needsHealthCheck(was) && needsHealthCheck(spec) && (hc ?? 0) !== (was['healthCheckNodePort'] ?? 0)) errs.push(fieldErr.forbidden('spec.healthCheckNodePort', 'field is immutable'));
  const ranges = arr(spec['loadBalancerSourceRanges']);
  if (ranges.length > 0) {
    // Upstream's path is spelled so (a historical accident it keeps); values may be space-padded.
    if (!lb) errs.push(fieldErr.forbidden('spec.LoadBalancerSourceRanges', LB_ONLY));
    ranges.forEach((r, i) => {
      const v = typeof r === 'string' ? r.trim() : r;
      if (typeof v !== 'string' || !isCidr(v)) errs.push(fieldErr.invalid(`spec.LoadBalancerSourceRanges[${i}]`, v, CIDR_TEXT));
    });
  } else {
    const ann = obj(obj(o['metadata'])?.['annotations'])?.[SOURCE_RANGES_ANNOTATION];
    if (typeof ann === 'string') {
      const path = `metadata.annotations[${SOURCE_RANGES_ANNOTATION}]`;
      if (!lb) errs.push(fieldErr.forbidden(path, LB_ONLY));
      if (ann.trim() !== '') for (const v of ann.split(',').map((x) => x.trim())) if (!isCidr(v)) errs.push(fieldErr.invalid(path, v, CIDR_TEXT));
    }
  }
  if (spec['allocateLoadBalancerNodePorts'] !== undefined && spec['allocateLoadBalancerNodePorts'] !== null && !lb) errs.push(fieldErr.forbidden('spec.allocateLoadBalancerNodePorts', LB_ONLY));
  // validateLoadBalancerClassField
  const cls = spec['loadBalancerClass'];
  const hasCls = cls !== undefined && cls !== null;
  if (was && was['type'] === 'LoadBalancer' && lb && (cls ?? null) !== (was['loadBalancerClass'] ?? null)) errs.push(fieldErr.invalid('spec.loadBalancerClass', cls, 'may not change once set'));
  if (lb && hasCls) {
    const p = typeof cls === 'string' ? labelKeyProblem(cls) : 'must be a string';
    if (p) errs.push(fieldErr.invalid('spec.loadBalancerClass', cls, p));
  } else if (!lb && hasCls) errs.push(fieldErr.forbidden('spec.loadBalancerClass', LB_ONLY));
  return errs;
}

/**
 * dropTypeDependentFields and patchAllocatedValues for the load-balancer fields, on update: what no
 * longer applies and the client left as it was goes (the health check NodePort back to the range); a
 * health check NodePort left out of an update that still needs one is kept.
 */
function dropLoadBalancerFields(o: O, old: O): void {
  const spec = ensure(o, 'spec');
  const was = obj(old['spec']) ?? {};
  const unchanged = (k: string) => spec[k] !== undefined && deepEqual(spec[k], was[k]);
  if (needsHealthCheck(was) && needsHealthCheck(spec) && !spec['healthCheckNodePort'] && was['healthCheckNodePort'] !== undefined) spec['healthCheckNodePort'] = was['healthCheckNodePort'];
  if (needsHealthCheck(was) && !needsHealthCheck(spec) && unchanged('healthCheckNodePort')) delete spec['healthCheckNodePort'];
  if (was['type'] === 'LoadBalancer' && spec['type'] !== 'LoadBalancer') {
    if (unchanged('allocateLoadBalancerNodePorts')) delete spec['allocateLoadBalancerNodePorts'];
    if (unchanged('loadBalancerClass')) delete spec['loadBalancerClass'];
  }
  if (externallyAccessible(was) && !externallyAccessible(spec) && unchanged('externalTrafficPolicy')) delete spec['externalTrafficPolicy'];
  // A Service that stops being a LoadBalancer loses its load-balancer status (upstream clears it on any
  // update of a non-LoadBalancer; here only on the change of type, so a status written by hand stays).
  if (was['type'] === 'LoadBalancer' && spec['type'] !== 'LoadBalancer' && obj(o['status'])?.['loadBalancer'] !== undefined) (o['status'] as O)['loadBalancer'] = {};
}

/** validateUpgradeDowngradeClusterIPs: the allocated IPs may not change (ExternalName and headless-to-headless aside). */
function clusterIPUpdateErrors(spec: O, was: O): FieldError[] {
  if (spec['type'] === 'ExternalName' || was['type'] === 'ExternalName') return [];
  const now = arr(spec['clusterIPs']);
  const before = arr(was['clusterIPs']);
  const headless = (l: unknown[]) => l.length === 1 && l[0] === 'None';
  if (headless(now) && headless(before)) return [];
  const errs: FieldError[] = [];
  if (now.length === before.length) {
    before.forEach((ip, i) => {
      if (ip !== now[i]) errs.push(fieldErr.invalid(`spec.clusterIPs[${i}]`, now, 'may not change once set'));
    });
  } else if (before.length > now.length) {
    if (now.length === 0) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'primary clusterIP can not be unset'));
    else if (now[0] !== before[0]) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'may not change once set'));
  } else if (before.length > 0 && now[0] !== before[0]) errs.push(fieldErr.invalid('spec.clusterIPs[0]', now, 'may not change once set'));
  return errs;
}

/** Container defaults shared by Pods and pod templates. */
function defaultPodSpec(spec: O): void {
  spec['restartPolicy'] ??= 'Always';
  spec['dnsPolicy'] ??= 'ClusterFirst';
  spec['schedulerName'] ??= 'default-scheduler';
  spec['terminationGracePeriodSeconds'] ??= 30;
  spec['securityContext'] ??= {};
  spec['enableServiceLinks'] ??= true;
  for (const list of ['containers', 'initContainers']) {
    for (const c of arr(spec[list])) {
      const ct = obj(c);
      if (!ct) continue;
      ct['terminationMessagePath'] ??= '/dev/termination-log';
      ct['terminationMessagePolicy'] ??= 'File';
      const image = typeof ct['image'] === 'string' ? ct['image'] : '';
      const tag = image.includes('@') ? 'digest' : image.slice(image.lastIndexOf('/') + 1).split(':')[1] ?? '';
      ct['imagePullPolicy'] ??= tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
      ct['resources'] ??= {};
      for (const p of arr(ct['ports'])) {
        const port = obj(p);
        if (port) port['protocol'] ??= 'TCP';
      }
    }
  }
}

function validatePodSpec(errs: FieldError[], path: string, spec: O | undefined): void {
  if (!spec) {
    errs.push(fieldErr.required(path));
    return;
  }
  const containers = arr(spec['containers']);
  if (containers.length === 0) errs.push(fieldErr.required(`${path}.containers`));
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const cp = `${path}.containers[${i}]`;
    const ct = obj(c) ?? {};
    const name = ct['name'];
    if (typeof name !== 'string' || name === '') errs.push(fieldErr.required(`${cp}.name`));
    else {
      if (!isDNS1123Label(name)) errs.push(fieldErr.invalid(`${cp}.name`, name, NAME_TEXT.label));
      if (names.has(name)) errs.push(fieldErr.duplicate(`${cp}.name`, name));
      names.add(name);
    }
    if (typeof ct['image'] !== 'string' || ct['image'].trim() === '') errs.push(fieldErr.required(`${cp}.image`));
    arr(ct['ports']).forEach((p, j) => {
      const port = obj(p) ?? {};
      portRange(errs, `${cp}.ports[${j}].containerPort`, port['containerPort'], true);
      if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${cp}.ports[${j}].protocol`, port['protocol'], PROTOCOLS));
    });
  });
  const rp = spec['restartPolicy'];
  if (!['Always', 'OnFailure', 'Never'].includes(String(rp))) errs.push(fieldErr.notSupported(`${path}.restartPolicy`, rp, ['Always', 'OnFailure', 'Never']));
  const dp = spec['dnsPolicy'];
  if (!['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'].includes(String(dp))) errs.push(fieldErr.notSupported(`${path}.dnsPolicy`, dp, ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None']));
}

/**
 * A resource.Quantity in nano-units, rounded up as Quantity does below its precision; null when it
 * does not parse. Only what QoS needs: comparing and summing amounts.
 */
export function quantityNanos(q: unknown): bigint | null {
  if (typeof q === 'number') q = String(q);
  if (typeof q !== 'string') return null;
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/.exec(q.trim());
  if (!m) return null;
  const [int = '', frac = ''] = m[2]!.split('.');
  let num = BigInt(`${int}${frac}` || '0');
  let exp10 = 9 - frac.length;
  const suffix = m[3] ?? '';
  const bin: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
  const dec: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
  if (suffix in bin) num <<= BigInt(bin[suffix]!);
  else if (suffix in dec) exp10 += dec[suffix]!;
  else exp10 += Number(suffix.slice(1));
  if (exp10 >= 0) num *= 10n ** BigInt(exp10);
  else {
    const d = 10n ** BigInt(-exp10);
    num = (num + d - 1n) / d;
  }
  return m[1] === '-' ? -num : num;
}

/** qos.ComputePodQOS over the (defaulted) containers and init containers: BestEffort, Burstable or Guaranteed. */
export function podQOS(spec: O): 'BestEffort' | 'Burstable' | 'Guaranteed' {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
    const res = obj(obj(c)?.['resources']) ?? {};
    for (const [name, q] of Object.entries(obj(res['requests']) ?? {})) {
      const n = quantityNanos(q);
      if ((name === 'cpu' || name === 'memory') && n !== null && n > 0n) requests.set(name, (requests.get(name) ?? 0n) + n);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(obj(res['limits']) ?? {})) {
      const n = quantityNanos(q);
      if ((name === 'cpu' || name === 'memory') && n !== null && n > 0n) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0n) + n);
      }
    }
    if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) for (const [name, r] of requests) if (limits.get(name) !== r) guaranteed = false;
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** Seconds a new Pod tolerates its Node being not-ready or unreachable before the node lifecycle controller evicts it. */
export const DEFAULT_TOLERATION_SECONDS = 300;

/**
 * kube-apiserver's DefaultTolerationSeconds admission: a new Pod that does not already tolerate the
 * not-ready or unreachable NoExecute taint (a toleration with that key or none, that effect or none)
 * gets `{key, operator: Exists, effect: NoExecute, tolerationSeconds: 300}` for it.
 */
export function defaultTolerationSeconds(spec: O): void {
  const have = arr(spec['tolerations']).map(obj);
  const add: O[] = [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    const covered = have.some((t) => !!t && (t['key'] === key || !t['key']) && (t['effect'] === 'NoExecute' || !t['effect']));
    if (!covered) add.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: DEFAULT_TOLERATION_SECONDS });
  }
  if (add.length) spec['tolerations'] = [...arr(spec['tolerations']), ...add];
}

const pod: Strategy = {
  nameRule: 'subdomain',
  defaults(o) {
    const spec = ensure(o, 'spec');
    defaultPodSpec(spec);
    // SetDefaults_Pod (not templates): requests default to the limits.
    for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
      const res = obj(obj(c)?.['resources']);
      const limits = obj(res?.['limits']);
      if (!res || !limits) continue;
      const req = ensure(res, 'requests');
      for (const [k, v] of Object.entries(limits)) req[k] ??= v;
    }
  },
  validate(o, old) {
    const errs: FieldError[] = [];
    validatePodSpec(errs, 'spec', obj(o['spec']));
    if (old) {
      // A Pod's spec is immutable but for a few fields (image, activeDeadlineSeconds, tolerations, terminationGracePeriodSeconds).
      const strip = (s: unknown) => {
        const c = structuredClone(obj(s) ?? {});
        for (const ct of arr(c['containers'])) delete (obj(ct) ?? {})['image'];
        delete c['activeDeadlineSeconds'];
        delete c['tolerations'];
        delete c['terminationGracePeriodSeconds'];
        if (!obj(old['spec'])?.['nodeName']) delete c['nodeName'];
        return c;
      };
      if (!deepEqual(strip(o['spec']), strip(old['spec']))) {
        errs.push(fieldErr.forbidden('spec', 'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)'));
      }
    }
    return errs;
  },
  initialStatus: (o) => ({ phase: 'Pending', qosClass: podQOS(obj(o['spec']) ?? {}) }),
  prepareForCreate: (o) => defaultTolerationSeconds(ensure(o, 'spec')),
  bumpsGeneration: specChanged,
};

function validateSelectorTemplate(errs: FieldError[], spec: O): void {
  const sel = obj(spec['selector']);
  const tpl = obj(spec['template']);
  if (!sel) errs.push(fieldErr.required('spec.selector'));
  else if (Object.keys(obj(sel['matchLabels']) ?? {}).length === 0 && arr(sel['matchExpressions']).length === 0) {
    // Upstream says "for deployment" for ReplicaSets too.
    errs.push(fieldErr.invalid('spec.selector', sel, 'empty selector is invalid for deployment'));
  } else {
    const labels = obj(obj(tpl?.['metadata'])?.['labels']) ?? {};
    let reqs;
    try {
      reqs = labelSelectorRequirements(sel as Parameters<typeof labelSelectorRequirements>[0]);
    } catch (e) {
      errs.push(fieldErr.invalid('spec.selector', sel, e instanceof Error ? e.message : String(e)));
    }
    if (reqs && !matchesLabels(reqs, labels as Record<string, string>)) {
      errs.push(fieldErr.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
    }
  }
  validatePodSpec(errs, 'spec.template.spec', obj(tpl?.['spec']));
  const rp = obj(tpl?.['spec'])?.['restartPolicy'];
  if (rp !== undefined && rp !== 'Always') errs.push(fieldErr.notSupported('spec.template.spec.restartPolicy', rp, ['Always']));
  const replicas = spec['replicas'];
  if (typeof replicas === 'number' && replicas < 0) errs.push(fieldErr.invalid('spec.replicas', replicas, 'must be greater than or equal to 0'));
}

const deployment: Strategy = {
  nameRule: 'subdomain',
  defaults(o) {
    const spec = ensure(o, 'spec');
    spec['replicas'] ??= 1;
    const strategy = ensure(spec, 'strategy');
    strategy['type'] ??= 'RollingUpdate';
    if (strategy['type'] === 'RollingUpdate') {
      const ru = ensure(strategy, 'rollingUpdate');
      ru['maxUnavailable'] ??= '25%';
      ru['maxSurge'] ??= '25%';
    }
    spec['revisionHistoryLimit'] ??= 10;
    spec['progressDeadlineSeconds'] ??= 600;
    defaultPodSpec(ensure(ensure(spec, 'template'), 'spec'));
  },
  validate(o, old) {
    const errs: FieldError[] = [];
    const spec = obj(o['spec']) ?? {};
    validateSelectorTemplate(errs, spec);
    const strategy = obj(spec['strategy']) ?? {};
    const type = strategy['type'];
    if (!['Recreate', 'RollingUpdate'].includes(String(type))) errs.push(fieldErr.notSupported('spec.strategy.type', type, ['Recreate', 'RollingUpdate']));
    const ru = obj(strategy['rollingUpdate']);
    if (type === 'Recreate' && ru) errs.push(fieldErr.forbidden('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'"));
    const zero = (v: unknown) => v === 0 || v === '0%' || v === '0';
    if (type === 'RollingUpdate' && ru && zero(ru['maxUnavailable']) && zero(ru['maxSurge'])) {
      errs.push(fieldErr.invalid('spec.strategy.rollingUpdate.maxUnavailable', ru['maxUnavailable'], 'may not be 0 when `maxSurge` is 0'));
    }
    // apps/v1: the selector is immutable.
    if (old && !deepEqual(obj(old['spec'])?.['selector'], spec['selector'])) errs.push(fieldErr.invalid('spec.selector', spec['selector'], 'field is immutable'));
    return errs;
  },
  initialStatus: () => ({}),
  // Annotations too: the Deployment controller copies them to the ReplicaSets.
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['annotations'], obj(old['metadata'])?.['annotations']),
};

const replicaSet: Strategy = {
  nameRule: 'subdomain',
  defaults(o) {
    const spec = ensure(o, 'spec');
    spec['replicas'] ??= 1;
    defaultPodSpec(ensure(ensure(spec, 'template'), 'spec'));
  },
  validate(o, old) {
    const errs: FieldError[] = [];
    const spec = obj(o['spec']) ?? {};
    validateSelectorTemplate(errs, spec);
    if (old && !deepEqual(obj(old['spec'])?.['selector'], spec['selector'])) errs.push(fieldErr.invalid('spec.selector', spec['selector'], 'field is immutable'));
    return errs;
  },
  initialStatus: () => ({ replicas: 0 }),
  bumpsGeneration: specChanged,
};

/** ValidateEndpointIP: an address an endpoint may not have. */
function endpointIPProblems(a: string): string[] {
  const out: string[] = [];
  if (isIPv4(a)) {
    const [x, y, z] = a.split('.').map(Number) as [number, number, number];
    if (a === '0.0.0.0') out.push(`may not be unspecified (${a})`);
    if (x === 127) out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
    if (x === 169 && y === 254) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
    if (x === 224 && y === 0 && z === 0) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  } else if (isIPv6(a)) {
    const l = a.toLowerCase();
    if (/^(0*:)*:?0*$/.test(l) || l === '::') out.push(`may not be unspecified (${a})`);
    if (l === '::1') out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
    if (/^fe[89ab]/.test(l)) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
    if (/^ff02:/.test(l)) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  } else out.push('must be a valid IP address');
  return out;
}

/** IsFullyQualifiedDomainName, for FQDN endpoints. */
function fqdnErrors(path: string, v: unknown): FieldError[] {
  if (typeof v !== 'string' || v === '') return [fieldErr.required(path)];
  const name = v.endsWith('.') ? v.slice(0, -1) : v;
  const p = nameProblems('subdomain', name);
  if (p.length) return [fieldErr.invalid(path, name, p.join(','))];
  if (name.split('.').length < 2) return [fieldErr.invalid(path, name, 'should be a domain with at least two segments separated by dots')];
  return [];
}

const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'];

const endpointSlice: Strategy = {
  nameRule: 'subdomain',
  defaults(o) {
    for (const p of arr(o['ports'])) {
      const port = obj(p);
      if (!port) continue;
      port['name'] ??= '';
      port['protocol'] ??= 'TCP';
    }
  },
  // pkg/apis/discovery/validation: ValidateEndpointSlice(Update).
  validate(o, old) {
    const errs: FieldError[] = [];
    const at = o['addressType'];
    if (at === undefined || at === null || at === '') errs.push(fieldErr.required('addressType'));
    else if (!ADDRESS_TYPES.includes(String(at))) errs.push(fieldErr.notSupported('addressType', at, ADDRESS_TYPES));
    if (old && at !== old['addressType']) errs.push(fieldErr.invalid('addressType', at, 'field is immutable'));
    const endpoints = arr(o['endpoints']);
    if (endpoints.length > 1000) errs.push(fieldErr.tooMany('endpoints', endpoints.length, 1000));
    else endpoints.forEach((e, i) => {
      const ep = obj(e) ?? {};
      const path = `endpoints[${i}]`;
      const addrs = arr(ep['addresses']);
      if (addrs.length === 0) errs.push(fieldErr.required(`${path}.addresses`, 'must contain at least 1 address'));
      else if (addrs.length > 100) errs.push(fieldErr.tooMany(`${path}.addresses`, addrs.length, 100));
      addrs.forEach((a, j) => {
        const ap = `${path}.addresses[${j}]`;
        const s = typeof a === 'string' ? a : '';
        if (at === 'IPv4' || at === 'IPv6') {
          if (at === 'IPv4' ? !isIPv4(s) : !isIPv6(s)) errs.push(fieldErr.invalid(ap, a, `must be a valid ${at} address`));
          for (const p of endpointIPProblems(s)) errs.push(fieldErr.invalid(ap, a, p));
        } else if (at === 'FQDN') errs.push(...fqdnErrors(ap, a));
      });
      if (typeof ep['nodeName'] === 'string') for (const p of nameProblems('subdomain', ep['nodeName'])) errs.push(fieldErr.invalid(`${path}.nodeName`, ep['nodeName'], p));
      if (typeof ep['hostname'] === 'string') for (const p of nameProblems('label', ep['hostname'])) errs.push(fieldErr.invalid(`${path}.hostname`, ep['hostname'], p));
    });
    const ports = arr(o['ports']);
    if (ports.length > 20000) errs.push(fieldErr.tooMany('ports', ports.length, 20000));
    else {
      const names = new Set<string>();
      ports.forEach((p, i) => {
        const port = obj(p) ?? {};
        const path = `ports[${i}]`;
        const name = typeof port['name'] === 'string' ? port['name'] : '';
        if (name !== '') for (const pr of nameProblems('label', name)) errs.push(fieldErr.invalid(`${path}.name`, name, pr));
        if (names.has(name)) errs.push(fieldErr.duplicate(`${path}.name`, name));
        names.add(name);
        if (port['protocol'] === undefined || port['protocol'] === null) errs.push(fieldErr.required(`${path}.protocol`));
        else if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${path}.protocol`, port['protocol'], PROTOCOLS));
        // Not in upstream (it leaves the number alone): a port the data plane could not program is refused here.
        if (port['port'] !== undefined && port['port'] !== null) portRange(errs, `${path}.port`, port['port'], false);
      });
    }
    return errs;
  },
  // Anything but metadata, or the labels (the EndpointSlice controllers compare generations).
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['labels'], obj(old['metadata'])?.['labels']),
};

const plain = (nameRule: NameRule, initialStatus?: (o: O) => O | undefined): Strategy => ({
  nameRule,
  defaults() {},
  validate: () => [],
  ...(initialStatus ? { initialStatus } : {}),
});

/**
 * core/v1 Events: upstream's legacyValidateEvent only (ValidateEventCreate/Update skip the rest for
 * v1): the name need only be a path segment, and type, reason and the like are free text, unless
 * the event is a "new" one (eventTime set), which must say who reported it and what happened.
 */
const event: Strategy = {
  nameRule: 'path',
  defaults() {},
  validate(o) {
    const errs: FieldError[] = [];
    const ns = String(obj(o['metadata'])?.['namespace'] ?? '');
    const io = obj(o['involvedObject']) ?? {};
    const ioNs = typeof io['namespace'] === 'string' ? io['namespace'] : '';
    const mismatch = () => errs.push(fieldErr.invalid('involvedObject.namespace', ioNs, 'does not match event.namespace'));
    const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
    if (!o['eventTime']) {
      if (ioNs === '' ? ns !== '' && ns !== 'default' : ns !== ioNs) mismatch();
    } else {
      if (ioNs === '' && ns !== 'default' && ns !== 'kube-system') mismatch();
      const rc = str('reportingComponent');
      if (rc === '') errs.push(fieldErr.required('reportingComponent'));
      const rp = labelKeyProblem(rc);
      if (rp) errs.push(fieldErr.invalid('reportingComponent', rc, rp));
      const limit = (k: string, n: number) => {
        if (str(k) === '' && k !== 'message') errs.push(fieldErr.required(k));
        if (str(k).length > n) errs.push(fieldErr.invalid(k, '', `can have at most ${n} characters`));
      };
      limit('reportingInstance', 128);
      limit('action', 128);
      limit('reason', 128);
      limit('message', 1024);
    }
    return errs;
  },
  allowCreateOnUpdate: true,
};

const namespace: Strategy = {
  nameRule: 'label',
  defaults(o) {
    // kube-apiserver labels every namespace with its own name.
    const meta = ensure(o, 'metadata');
    if (typeof meta['name'] === 'string') ensure(meta, 'labels')['kubernetes.io/metadata.name'] = meta['name'];
  },
  validate(o) {
    const errs: FieldError[] = [];
    arr(obj(o['spec'])?.['finalizers']).forEach((f, i) => {
      const p = typeof f === 'string' ? labelKeyProblem(f) : 'must be a string';
      if (p) errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, p));
      else if (!String(f).includes('/') && f !== 'kubernetes') errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, 'name is neither a standard finalizer name nor is it fully qualified'));
    });
    return errs;
  },
  initialStatus: () => ({ phase: 'Active' }),
  prepareForCreate(o) {
    // A new namespace carries the `kubernetes` finalizer (the namespace controller's).
    const spec = ensure(o, 'spec');
    const f = arr(spec['finalizers']);
    if (!f.includes('kubernetes')) spec['finalizers'] = [...f, 'kubernetes'];
  },
  prepareForUpdate(o, old) {
    // spec.finalizers change only through /finalize.
    const was = obj(old['spec'])?.['finalizers'];
    const spec = ensure(o, 'spec');
    if (was === undefined) delete spec['finalizers'];
    else spec['finalizers'] = structuredClone(was);
  },
};

export const STRATEGIES: Readonly<Record<string, Strategy>> = {
  namespaces: namespace,
  // A kubelet registers its Node with its status (addresses, capacity, nodeInfo): it is kept.
  nodes: {
    ...plain('subdomain', (o) => obj(o['status'])),
    defaults(o) {
      // The plural field follows the singular one, as upstream's defaulting of a v1 Node.
      const spec = obj(o['spec']);
      if (spec && typeof spec['podCIDR'] === 'string' && spec['podCIDR'] !== '' && arr(spec['podCIDRs']).length === 0) spec['podCIDRs'] = [spec['podCIDR']];
    },
    validate(o, old) {
      const errs: FieldError[] = [];
      const spec = obj(o['spec']) ?? {};
      arr(spec['podCIDRs']).forEach((c, i) => {
        let ok = typeof c === 'string';
        if (ok) {
          try {
            parseCidr(c as string);
          } catch {
            ok = false;
          }
        }
        if (!ok) errs.push(fieldErr.invalid(`spec.podCIDRs[${i}]`, c, 'must be a valid CIDR'));
      });
      // ValidateNodeUpdate: a pod CIDR, once set, stays (node IPAM and the agents rely on it).
      const was = arr(obj(old?.['spec'])?.['podCIDRs']);
      if (old && was.length > 0 && !deepEqual(was, arr(spec['podCIDRs']))) errs.push(fieldErr.forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'));
      return errs;
    },
  },
  pods: pod,
  services: service,
  events: event,
  'endpointslices.discovery.k8s.io': endpointSlice,
  'deployments.apps': deployment,
  'replicasets.apps': replicaSet,
  'leases.coordination.k8s.io': { ...plain('subdomain'), allowCreateOnUpdate: true },
};

export type { KObject };
