/**
 * controlplane/kinds/quota: LimitRanges and ResourceQuotas (core/v1) as kube-apiserver's registry treats them:
 * SetDefaults_LimitRangeItem, ValidateLimitRange, ValidateResourceQuota / ValidateResourceQuotaUpdate /
 * ValidateResourceQuotaStatusUpdate, in upstream's field-error words. What they do at admission is
 * admission/limit-ranger.ts' and admission/resource-quota.ts'; the quota's usage is quota/usage.ts'. Pure.
 *
 * Upstream's rules (x: here, -: left out, why):
 *   LimitRange     x defaults of a Container item: `default` from `max`, `defaultRequest` from `default`, then from `min`
 *                  x type: Pod, Container, PersistentVolumeClaim, or a qualified name; each type at most once
 *                  x resource names (a container's for Pod and Container items), quantities non-negative (whole for
 *                    extended resources); a Pod item has no `default` or `defaultRequest`; a PVC item needs a min or
 *                    max `storage`
 *                  x min <= defaultRequest <= default <= max, maxLimitRequestRatio >= 1 and <= max/min; default =
 *                    defaultRequest for resources that do not overcommit (hugepages, extended)
 *   ResourceQuota  x hard: a standard quota resource or a qualified name, quantities as above
 *                  x scopes: the six upstream has, valid for every standard resource in hard (BestEffort: only
 *                    `pods`), no BestEffort with NotBestEffort nor Terminating with NotTerminating; scopes immutable
 *                  x scopeSelector: scope names, operators (Exists for all but PriorityClass), values as the operator
 *                    needs, the same conflicts
 *                  x status: hard and used names and quantities
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { milliUnits, SCOPES, scopeValidFor } from '../quota/usage.js';
import { arr, ensure, obj, type O, qualifiedNameErrors, quantityNanos, quantityString, semanticEqual, str } from './common.js';
import { containerResourceNameErrors, isHugePages, overcommits, quantityErrors, resourceNameErrors, STANDARD_CONTAINER_RESOURCES } from './resource-names.js';
import type { Strategy } from './strategy.js';

/** standardQuotaResources (IsStandardQuotaResourceName, with the hugepages names). */
const STANDARD_QUOTA = new Set([
  ...STANDARD_CONTAINER_RESOURCES, 'requests.cpu', 'requests.memory', 'requests.storage', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage',
  'pods', 'resourcequotas', 'services', 'replicationcontrollers', 'secrets', 'persistentvolumeclaims', 'configmaps', 'services.nodeports', 'services.loadbalancers',
]);
const isStandardQuota = (n: string) => STANDARD_QUOTA.has(n) || isHugePages(n) || n.startsWith('requests.hugepages-');

export const LIMIT_TYPES = ['Pod', 'Container', 'PersistentVolumeClaim'] as const;

/** ValidateResourceQuotaResourceName. */
function quotaResourceNameErrors(path: string, name: string): FieldError[] {
  const errs = resourceNameErrors(path, name);
  if (errs.length) return errs;
  if (!name.includes('/') && !isStandardQuota(name)) return [fieldErr.invalid(path, name, 'must be a standard resource for quota')];
  return [];
}

const list = (m: unknown): [string, unknown][] => Object.entries(obj(m) ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** SetDefaults_LimitRangeItem for a Container item. */
export function defaultLimitRange(o: O): void {
  for (const it of arr(obj(o['spec'])?.['limits'])) {
    const item = obj(it);
    if (!item || item['type'] !== 'Container') continue;
    const def = ensure(item, 'default');
    const defReq = ensure(item, 'defaultRequest');
    for (const [k, v] of Object.entries(obj(item['max']) ?? {})) def[k] ??= v;
    for (const [k, v] of Object.entries(def)) defReq[k] ??= v;
    for (const [k, v] of Object.entries(obj(item['min']) ?? {})) defReq[k] ??= v;
    // (Go's empty maps are omitted when written.)
    if (!Object.keys(def).length) delete item['default'];
    if (!Object.keys(defReq).length) delete item['defaultRequest'];
  }
}


/** ValidateLimitRange. */
export function validateLimitRange(o: O): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  arr(obj(o['spec'])?.['limits']).forEach((it, i) => {
    const p = `spec.limits[${i}]`;
    const item = obj(it) ?? {};
    const type = str(item['type']) ?? '';
    const tq = qualifiedNameErrors(`${p}.type`, type);
    if (tq.length) errs.push(...tq);
    else if (!type.includes('/') && !(LIMIT_TYPES as readonly string[]).includes(type)) errs.push(fieldErr.invalid(`${p}.type`, type, 'must be a standard limit type or fully qualified'));
    if (seen.has(type)) errs.push(fieldErr.duplicate(`${p}.type`, type));
    seen.add(type);
    const nameErrs = (path: string, k: string) => (type === 'PersistentVolumeClaim' ? resourceNameErrors(path, k) : containerResourceNameErrors(path, k));
    const amounts: Record<string, Map<string, unknown>> = {};
    for (const field of ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio']) {
      amounts[field] = new Map();
      for (const [k, q] of list(item[field])) {
        const path = `${p}.${field}[${k}]`;
        errs.push(...nameErrs(path, k));
        if ((field === 'default' || field === 'defaultRequest') && type === 'Pod') continue;
        errs.push(...quantityErrors(path, k, q));
        amounts[field]!.set(k, q);
      }
    }
    if (type === 'Pod') {
      if (Object.keys(obj(item['default']) ?? {}).length) errs.push(fieldErr.forbidden(`${p}.default`, "may not be specified when `type` is 'Pod'"));
      if (Object.keys(obj(item['defaultRequest']) ?? {}).length) errs.push(fieldErr.forbidden(`${p}.defaultRequest`, "may not be specified when `type` is 'Pod'"));
    }
    if (type === 'PersistentVolumeClaim' && !amounts['min']!.has('storage') && !amounts['max']!.has('storage')) {
      errs.push(fieldErr.required(`${p}.limits`, 'either minimum or maximum storage value is required, but neither was provided'));
    }
    const keys = new Set(Object.values(amounts).flatMap((m) => [...m.keys()]));
    for (const k of [...keys].sort()) {
      const get = (f: string) => {
        const q = amounts[f]!.get(k);
        const n = q === undefined ? null : quantityNanos(q);
        return n === null ? null : { n, s: quantityString(q) };
      };
      const [min, max, def, defReq, ratio] = [get('min'), get('max'), get('default'), get('defaultRequest'), get('maxLimitRequestRatio')];
      if (min && max && min.n > max.n) errs.push(fieldErr.invalid(`${p}.min[${k}]`, min.s, `min value ${min.s} is greater than max value ${max.s}`));
      if (defReq && min && min.n > defReq.n) errs.push(fieldErr.invalid(`${p}.defaultRequest[${k}]`, defReq.s, `min value ${min.s} is greater than default request value ${defReq.s}`));
      if (defReq && max && defReq.n > max.n) errs.push(fieldErr.invalid(`${p}.defaultRequest[${k}]`, defReq.s, `default request value ${defReq.s} is greater than max value ${max.s}`));
      if (defReq && def && defReq.n > def.n) errs.push(fieldErr.invalid(`${p}.defaultRequest[${k}]`, defReq.s, `default request value ${defReq.s} is greater than default limit value ${def.s}`));
      if (def && min && min.n > def.n) errs.push(fieldErr.invalid(`${p}.default[${k}]`, def.s, `min value ${min.s} is greater than default value ${def.s}`));
      if (def && max && def.n > max.n) errs.push(fieldErr.invalid(`${p}.default[${k}]`, def.s, `default value ${def.s} is greater than max value ${max.s}`));
      if (ratio && ratio.n < 1_000_000_000n) errs.push(fieldErr.invalid(`${p}.maxLimitRequestRatio[${k}]`, ratio.s, `ratio ${ratio.s} is less than 1`));
      if (ratio && min && max && min.n > 0n) {
        const limit = Number(milliUnits(max.n)) / Number(milliUnits(min.n));
        if (Number(milliUnits(ratio.n)) / 1000 > limit) errs.push(fieldErr.invalid(`${p}.maxLimitRequestRatio[${k}]`, ratio.s, `ratio ${ratio.s} is greater than max/min = ${limit.toFixed(6)}`));
      }
      if (!overcommits(k) && def && defReq && def.n !== defReq.n) {
        errs.push(fieldErr.invalid(`${p}.defaultRequest[${k}]`, defReq.s, `default value ${def.s} must equal to defaultRequest value ${defReq.s} in ${k}`));
      }
    }
  });
  return errs;
}

const CONFLICTS: readonly [string, string][] = [['BestEffort', 'NotBestEffort'], ['Terminating', 'NotTerminating']];
const EXISTS_ONLY = new Set(['BestEffort', 'NotBestEffort', 'Terminating', 'NotTerminating', 'CrossNamespacePodAffinity']);
const standardScope = (s: string) => (SCOPES as readonly string[]).includes(s);

/** ValidateResourceQuotaSpec and the status' names and amounts. */
export function validateResourceQuota(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']) ?? {};
  const hard = list(spec['hard']);
  for (const [k, q] of hard) errs.push(...quotaResourceNameErrors(`spec.hard[${k}]`, k), ...quantityErrors(`spec.hard[${k}]`, k, q));
  const standardHard = hard.map(([k]) => k).filter(isStandardQuota);
  // validateResourceQuotaScopes
  const scopes = arr(spec['scopes']).map((s) => str(s) ?? '');
  if (scopes.length) {
    for (const s of scopes) {
      if (!standardScope(s)) errs.push(fieldErr.invalid('spec.scopes', scopes, 'unsupported scope'));
      for (const k of standardHard) if (standardScope(s) && !scopeValidFor(s, k)) errs.push(fieldErr.invalid('spec.scopes', scopes, 'unsupported scope applied to resource'));
    }
    for (const [a, b] of CONFLICTS) if (scopes.includes(a) && scopes.includes(b)) errs.push(fieldErr.invalid('spec.scopes', scopes, 'conflicting scopes'));
  }
  // validateScopedResourceSelectorRequirement
  const sel = obj(spec['scopeSelector']);
  const named: string[] = [];
  arr(sel?.['matchExpressions']).forEach((e, i) => {
    const p = `spec.scopeSelector.matchExpressions[${i}]`;
    const req = obj(e) ?? {};
    const scope = str(req['scopeName']) ?? '';
    const op = str(req['operator']) ?? '';
    const values = arr(req['values']);
    if (!standardScope(scope)) errs.push(fieldErr.invalid(`${p}.scopeName`, scope, 'unsupported scope'));
    for (const k of standardHard) if (standardScope(scope) && !scopeValidFor(scope, k)) errs.push(fieldErr.invalid('spec.scopeSelector', sel, 'unsupported scope applied to resource'));
    if (EXISTS_ONLY.has(scope) && op !== 'Exists') {
      errs.push(fieldErr.invalid(`${p}.operator`, op, "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"));
    }
    if (op === 'In' || op === 'NotIn') {
      if (!values.length) errs.push(fieldErr.required(`${p}.values`, "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"));
    } else if (op === 'Exists' || op === 'DoesNotExist') {
      if (values.length) errs.push(fieldErr.invalid(`${p}.values`, values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"));
    } else errs.push(fieldErr.invalid(`${p}.operator`, op, 'not a valid selector operator'));
    named.push(scope);
  });
  for (const [a, b] of CONFLICTS) if (named.includes(a) && named.includes(b)) errs.push(fieldErr.invalid('spec.scopeSelector', sel, 'conflicting scopes'));
  // ValidateResourceQuotaStatus
  const status = obj(o['status']) ?? {};
  for (const field of ['hard', 'used']) {
    for (const [k, q] of list(status[field])) errs.push(...quotaResourceNameErrors(`status.${field}[${k}]`, k), ...quantityErrors(`status.${field}[${k}]`, k, q));
  }
  if (old && !semanticEqual(spec['scopes'], obj(old['spec'])?.['scopes'])) errs.push(fieldErr.invalid('spec.scopes', scopes, 'field is immutable'));
  return errs;
}

export const limitRangeStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultLimitRange,
  validate: (o) => validateLimitRange(o),
};

export const resourceQuotaStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults() {},
  validate: validateResourceQuota,
  // PrepareForCreate drops a submitted status: the quota controller fills it.
  initialStatus: () => undefined,
};
