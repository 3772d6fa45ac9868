/**
 * controlplane/kinds/endpoints: core/v1 Endpoints, the older form of EndpointSlices, as kube-apiserver's registry
 * treats them (pkg/registry/core/endpoint): SetDefaults_Endpoints, pkg/apis/core/validation's ValidateEndpoints
 * (on create and update alike), and AllowCreateOnUpdate. Pure.
 *
 * Upstream's rules:
 *   each subset has `addresses` or `notReadyAddresses` (a headless Service's may have no ports)
 *   an address: `ip` a valid IP (IsValidIP) and not special (unspecified, loopback, link-local, link-local
 *     multicast: ValidateNonSpecialIP); `hostname` a DNS-1123 label; `nodeName` a DNS subdomain (ValidateNodeName);
 *     `targetRef` is not checked
 *   a port: `name` required when the subset has more than one port, a DNS-1123 label when set; `port` 1..65535;
 *     `protocol` required (defaulted to TCP) and TCP, UDP or SCTP; `appProtocol` a qualified name
 * No generation (as upstream: the strategy never sets one), and no repacking of the subsets on write (upstream's
 * Canonicalize no longer does it; its Endpoints controller writes them packed, as controllers/endpoints.ts does).
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { arr, ipErrors, isSet, nameErrors, obj, type O, portNumErrors, qualifiedNameErrors, specialIPProblems, str } from './common.js';
import type { Strategy } from './strategy.js';

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];

/** SetDefaults_Endpoints: a port without a protocol is TCP. */
export function defaultEndpoints(o: O): void {
  for (const ss of arr(o['subsets'])) {
    for (const p of arr(obj(ss)?.['ports'])) {
      const port = obj(p);
      if (port && !port['protocol']) port['protocol'] = 'TCP';
    }
  }
}

function addressErrors(path: string, a: O): FieldError[] {
  const errs = ipErrors(`${path}.ip`, a['ip']);
  if (typeof a['hostname'] === 'string' && a['hostname'] !== '') errs.push(...nameErrors(`${path}.hostname`, 'label', a['hostname']));
  if (isSet(a['nodeName'])) errs.push(...nameErrors(`${path}.nodeName`, 'subdomain', str(a['nodeName'])));
  errs.push(...specialIPProblems(str(a['ip'])).map((p) => fieldErr.invalid(`${path}.ip`, str(a['ip']), p)));
  return errs;
}

function portErrors(path: string, p: O, requireName: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(p['name']);
  if (requireName && name === '') errs.push(fieldErr.required(`${path}.name`));
  else if (name !== '') errs.push(...nameErrors(`${path}.name`, 'label', name));
  errs.push(...portNumErrors(`${path}.port`, p['port']));
  if (!p['protocol']) errs.push(fieldErr.required(`${path}.protocol`));
  else if (!PROTOCOLS.includes(String(p['protocol']))) errs.push(fieldErr.notSupported(`${path}.protocol`, p['protocol'], PROTOCOLS));
  if (isSet(p['appProtocol'])) errs.push(...qualifiedNameErrors(`${path}.appProtocol`, p['appProtocol']));
  return errs;
}

/** ValidateEndpoints (the metadata aside: the REST layer checks it for every kind). */
export function validateEndpoints(o: O): FieldError[] {
  const errs: FieldError[] = [];
  arr(o['subsets']).forEach((s, i) => {
    const ss = obj(s) ?? {};
    const path = `subsets[${i}]`;
    const ready = arr(ss['addresses']);
    const notReady = arr(ss['notReadyAddresses']);
    if (ready.length === 0 && notReady.length === 0) errs.push(fieldErr.required(path, 'must specify `addresses` or `notReadyAddresses`'));
    ready.forEach((a, j) => errs.push(...addressErrors(`${path}.addresses[${j}]`, obj(a) ?? {})));
    notReady.forEach((a, j) => errs.push(...addressErrors(`${path}.notReadyAddresses[${j}]`, obj(a) ?? {})));
    const ports = arr(ss['ports']);
    ports.forEach((p, j) => errs.push(...portErrors(`${path}.ports[${j}]`, obj(p) ?? {}, ports.length > 1)));
  });
  return errs;
}

export const endpointsStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultEndpoints,
  validate: (o) => validateEndpoints(o),
  allowCreateOnUpdate: true,
};
