/**
 * controlplane/kinds/node: core/v1 Nodes as kube-apiserver treats them: the
 * v1 conversion of podCIDR/podCIDRs, ValidateNode and ValidateNodeUpdate.
 * Pure. The agents' overlays read podCIDRs and addresses from here.
 *
 * Upstream's rules (x: here, -: left out):
 *   x podCIDRs valid CIDRs, at most one per family, no duplicates (upstream checks them on create only;
 *     here on every write, as the overlays consume them); once set they may not change
 *   x podCIDR follows podCIDRs[0] (the v1 conversion keeps only the plural field)
 *   x taints: key a qualified name, value a label value, effect required and supported, unique by
 *     key and effect (reported under metadata.taints, as upstream's path has it)
 *   x providerID and externalID may not change once set
 *   x status: no duplicate addresses; capacity and allocatable quantities valid and non-negative
 *   - configSource (deprecated), node annotations holding taints or preferAvoidPods
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelValueProblem } from '../api/selectors.js';
import { arr, CIDR_TEXT, isCidr, isV6, type O, obj, QUANTITY_REGEX_TEXT, qualifiedNameErrors, quantityNanos, quantityString, semanticEqual, str } from './common.js';
import { plain, type Strategy } from './strategy.js';

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const CIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid';

export function defaultNode(o: O): void {
  const spec = obj(o['spec']);
  if (!spec) return;
  const cidrs = arr(spec['podCIDRs']);
  // The v1 conversion: the plural field is the stored one; the singular is its first value.
  if (cidrs.length > 0) spec['podCIDR'] = cidrs[0];
  else if (typeof spec['podCIDR'] === 'string' && spec['podCIDR'] !== '') spec['podCIDRs'] = [spec['podCIDR']];
}

/** ValidateNode, and ValidateNodeUpdate when `old` is set. */
export function validateNode(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']) ?? {};
  errs.push(...taintErrors(arr(spec['taints'])));
  for (const k of ['capacity', 'allocatable']) {
    for (const [name, q] of Object.entries(obj(obj(o['status'])?.[k]) ?? {})) {
      const path = `status.${k}.${name}`;
      const n = quantityNanos(q);
      if (n === null) errs.push(fieldErr.invalid(path, q ?? null, QUANTITY_REGEX_TEXT));
      else if (n < 0n) errs.push(fieldErr.invalid(path, quantityString(q), 'must be greater than or equal to 0'));
    }
  }
  const cidrs = arr(spec['podCIDRs']);
  cidrs.forEach((c, i) => {
    if (!isCidr(c)) errs.push(fieldErr.invalid(`spec.podCIDRs[${i}]`, c, CIDR_TEXT));
  });
  if (cidrs.length > 1 && cidrs.every(isCidr)) {
    const v6 = cidrs.map((c) => isV6(String(c).split('/')[0]!));
    if (cidrs.length > 2 || v6[0] === v6[1]) errs.push(fieldErr.invalid('spec.podCIDRs', cidrs, 'may specify no more than one CIDR for each IP family'));
    const seen = new Set<unknown>();
    cidrs.forEach((c, i) => {
      if (seen.has(c)) errs.push(fieldErr.duplicate(`spec.podCIDRs[${i}]`, c));
      seen.add(c);
    });
  }
  if (!old) return errs;
  const addresses = arr(obj(o['status'])?.['addresses']);
  addresses.forEach((a, i) => {
    if (addresses.slice(0, i).some((b) => semanticEqual(a, b))) errs.push(fieldErr.duplicate(`status.addresses[${i}]`, a));
  });
  const was = obj(old['spec']) ?? {};
  // Node IPAM may assign a pod CIDR to a Node without one; once set it stays (the agents rely on it).
  const before = arr(was['podCIDRs']);
  if (before.length > 0) {
    if (before.length !== cidrs.length) errs.push(fieldErr.forbidden('spec.podCIDRs', CIDR_CHANGE));
    else before.forEach((c, i) => {
      if (c !== cidrs[i]) errs.push(fieldErr.forbidden('spec.podCIDRs', CIDR_CHANGE));
    });
  }
  if (str(was['providerID']) !== '' && was['providerID'] !== spec['providerID']) errs.push(fieldErr.forbidden('spec.providerID', 'node updates may not change providerID except from "" to valid'));
  if (str(was['externalID']) !== str(spec['externalID'])) errs.push(fieldErr.forbidden('spec.externalID', 'may not be updated'));
  return errs;
}

/** validateNodeTaints (upstream reports them under metadata.taints). */
function taintErrors(taints: unknown[]): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  taints.forEach((t, i) => {
    const taint = obj(t) ?? {};
    const path = `metadata.taints[${i}]`;
    errs.push(...qualifiedNameErrors(`${path}.key`, taint['key']));
    const vp = labelValueProblem(str(taint['value']));
    if (vp) errs.push(fieldErr.invalid(`${path}.value`, str(taint['value']), vp.split('; ').join(';')));
    const effect = str(taint['effect']);
    if (effect === '') errs.push(fieldErr.required(`${path}.effect`));
    else if (!TAINT_EFFECTS.includes(effect)) errs.push(fieldErr.notSupported(`${path}.effect`, effect, TAINT_EFFECTS));
    const key = `${effect}\u0000${str(taint['key'])}`;
    if (seen.has(key)) {
      errs.push({ ...fieldErr.duplicate(path, taint), message: `${fieldErr.duplicate(path, taint).message}: taints must be unique by key and effect pair` });
      return;
    }
    seen.add(key);
  });
  return errs;
}

/** The Node's strategy: a kubelet registers its Node with its status (addresses, capacity, nodeInfo), which is kept. */
export const nodeStrategy: Strategy = { ...plain('subdomain', (o) => obj(o['status'])), defaults: defaultNode, validate: validateNode };
