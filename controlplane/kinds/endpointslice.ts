/**
 * controlplane/kinds/endpointslice: discovery.k8s.io/v1 EndpointSlice as
 * kube-apiserver's registry treats it: SetDefaults_EndpointPort and
 * pkg/apis/discovery/validation's ValidateEndpointSlice(Update). Pure.
 *
 * Upstream's rules (x: here, -: left out):
 *   x addressType required, one of FQDN/IPv4/IPv6, immutable
 *   x at most 1000 endpoints; each 1..100 addresses, valid for the address type and not special
 *     (unspecified, loopback, link-local); FQDN addresses fully qualified
 *   x nodeName a subdomain, hostname a label, deprecatedTopology at most 16 valid labels,
 *     hints.forZones at most 8, unique, label values
 *   x at most 20000 ports; names labels and unique ("" counts), protocol required and supported,
 *     appProtocol a qualified name
 *   x stricter than upstream: a port number outside 1..65535 (the data plane could not program it)
 *   - the internal `zone` conversion check (zone is a plain field in v1)
 */
import { isIPv4 } from '../../lib/net/ip.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { arr, isSet, isV6, labelsErrors, labelValueErrors, nameErrors, nameProblems, type O, obj, portNumErrors, qualifiedNameErrors, specialIPProblems, str } from './common.js';
import { sameMap, specChanged, type Strategy } from './strategy.js';

const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'];
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];

export function defaultEndpointSlice(o: O): void {
  for (const p of arr(o['ports'])) {
    const port = obj(p);
    if (!port) continue;
    port['name'] ??= '';
    port['protocol'] ??= 'TCP';
  }
}

/** IsFullyQualifiedDomainName, for FQDN endpoints. */
function fqdnErrors(path: string, v: unknown): FieldError[] {
  if (typeof v !== 'string' || v === '') return [fieldErr.required(path)];
  const name = v.endsWith('.') ? v.slice(0, -1) : v;
  const p = nameProblems('subdomain', name);
  if (p.length) return [fieldErr.invalid(path, name, p.join(','))];
  if (name.split('.').length < 2) return [fieldErr.invalid(path, name, 'should be a domain with at least two segments separated by dots')];
  for (const label of name.split('.')) {
    const lp = nameProblems('label', label);
    if (lp.length) return [fieldErr.invalid(path, label, lp.join(','))];
  }
  return [];
}

/** ValidateEndpointSlice, and ValidateEndpointSliceUpdate when `old` is set. */
export function validateEndpointSlice(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const at = o['addressType'];
  if (at === undefined || at === null || at === '') errs.push(fieldErr.required('addressType'));
  else if (!ADDRESS_TYPES.includes(String(at))) errs.push(fieldErr.notSupported('addressType', at, ADDRESS_TYPES));
  const endpoints = arr(o['endpoints']);
  if (endpoints.length > 1000) errs.push(fieldErr.tooMany('endpoints', endpoints.length, 1000));
  else endpoints.forEach((e, i) => errs.push(...endpointErrors(`endpoints[${i}]`, obj(e) ?? {}, at)));
  const ports = arr(o['ports']);
  if (ports.length > 20000) errs.push(fieldErr.tooMany('ports', ports.length, 20000));
  else {
    const names = new Set<string>();
    ports.forEach((p, i) => {
      const port = obj(p) ?? {};
      const path = `ports[${i}]`;
      const name = str(port['name']);
      if (name !== '') errs.push(...nameErrors(`${path}.name`, 'label', name));
      if (names.has(name)) errs.push(fieldErr.duplicate(`${path}.name`, name));
      else names.add(name);
      if (!isSet(port['protocol'])) errs.push(fieldErr.required(`${path}.protocol`));
      else if (!PROTOCOLS.includes(String(port['protocol']))) errs.push(fieldErr.notSupported(`${path}.protocol`, port['protocol'], PROTOCOLS));
      if (isSet(port['appProtocol'])) errs.push(...qualifiedNameErrors(`${path}.appProtocol`, port['appProtocol']));
      // Not in upstream (it leaves the number alone): a port the data plane could not program is refused here.
      if (isSet(port['port'])) errs.push(...portNumErrors(`${path}.port`, port['port']));
    });
  }
  if (old && at !== old['addressType']) errs.push(fieldErr.invalid('addressType', at, 'field is immutable'));
  return errs;
}

function endpointErrors(path: string, ep: O, at: unknown): FieldError[] {
  const errs: FieldError[] = [];
  const addrs = arr(ep['addresses']);
  if (addrs.length === 0) errs.push(fieldErr.required(`${path}.addresses`, 'must contain at least 1 address'));
  else if (addrs.length > 100) errs.push(fieldErr.tooMany(`${path}.addresses`, addrs.length, 100));
  addrs.forEach((a, j) => {
    const ap = `${path}.addresses[${j}]`;
    const s = str(a);
    if (at === 'IPv4' || at === 'IPv6') {
      if (at === 'IPv4' ? !isIPv4(s) : !isV6(s)) errs.push(fieldErr.invalid(ap, a, `must be a valid ${at} address`));
      for (const p of specialIPProblems(s)) errs.push(fieldErr.invalid(ap, a, p));
    } else if (at === 'FQDN') errs.push(...fqdnErrors(ap, a));
  });
  if (typeof ep['nodeName'] === 'string') errs.push(...nameErrors(`${path}.nodeName`, 'subdomain', ep['nodeName']));
  const topo = obj(ep['deprecatedTopology']);
  if (topo) {
    if (Object.keys(topo).length > 16) errs.push(fieldErr.tooMany(`${path}.deprecatedTopology`, Object.keys(topo).length, 16));
    errs.push(...labelsErrors(`${path}.deprecatedTopology`, topo));
  }
  if (typeof ep['hostname'] === 'string') errs.push(...nameErrors(`${path}.hostname`, 'label', ep['hostname']));
  const hints = obj(ep['hints']);
  if (hints) {
    const zones = arr(hints['forZones']);
    const fz = `${path}.hints.forZones`;
    if (zones.length > 8) errs.push(fieldErr.tooMany(fz, zones.length, 8));
    else {
      const seen = new Set<string>();
      zones.forEach((z, i) => {
        const name = str(obj(z)?.['name']);
        if (seen.has(name)) errs.push(fieldErr.duplicate(`${fz}[${i}].name`, name));
        else seen.add(name);
        errs.push(...labelValueErrors(`${fz}[${i}].name`, name));
      });
    }
  }
  return errs;
}

/** The EndpointSlice's strategy. */
export const endpointSliceStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultEndpointSlice,
  validate: validateEndpointSlice,
  // Anything but metadata, or the labels (the EndpointSlice controllers compare generations).
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['labels'], obj(old['metadata'])?.['labels']),
};
