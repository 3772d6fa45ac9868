/**
 * controlplane/kinds/resource-names: the rules on resource names and amounts that several kinds share, as
 * pkg/apis/core/validation and helper have them: a container's requests and limits (podspec.ts), a LimitRange's and
 * a ResourceQuota's (quota.ts). Pure.
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { qualifiedNameErrors, quantityNanos, quantityString, QUANTITY_REGEX_TEXT } from './common.js';

export const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];
/** standardResources (IsStandardResourceName). */
export const STANDARD_RESOURCES: ReadonlySet<string> = new Set([
  ...STANDARD_CONTAINER_RESOURCES, 'pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims', 'storage',
  'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'requests.storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'services.nodeports', 'services.loadbalancers',
]);
export const isHugePages = (n: string): boolean => n.startsWith('hugepages-');
/** IsNativeResource: no domain, or the kubernetes.io domain. */
export const isNative = (n: string): boolean => !n.includes('/') || n.includes('kubernetes.io/');
/** IsOvercommitAllowed: native resources other than hugepages. */
export const overcommits = (n: string): boolean => isNative(n) && !isHugePages(n);

/** validateResourceName: a qualified name; without a domain, a standard resource (hugepages included). */
export function resourceNameErrors(path: string, name: string): FieldError[] {
  const q = qualifiedNameErrors(path, name);
  if (q.length) return q;
  if (!name.includes('/') && !STANDARD_RESOURCES.has(name) && !isHugePages(name) && !/^(requests|limits)\.hugepages-/.test(name)) {
    return [fieldErr.invalid(path, name, 'must be a standard resource type or fully qualified')];
  }
  return [];
}

/** validateContainerResourceName. */
export function containerResourceNameErrors(path: string, name: string): FieldError[] {
  const errs = resourceNameErrors(path, name);
  if (errs.length) return errs;
  if (!name.includes('/')) {
    if (!STANDARD_CONTAINER_RESOURCES.includes(name) && !isHugePages(name)) return [fieldErr.invalid(path, name, 'must be a standard resource for containers')];
  } else if (!isNative(name) && (name.startsWith('requests.') || qualifiedNameErrors(path, `requests.${name}`).length > 0)) {
    return [fieldErr.invalid(path, name, "doesn't follow extended resource name standard")];
  }
  return [];
}

/** ValidateResourceQuantityValue (and a quantity that does not parse, which upstream refuses while decoding). */
export function quantityErrors(path: string, name: string, q: unknown): FieldError[] {
  const n = quantityNanos(q);
  if (n === null) return [fieldErr.invalid(path, q ?? null, QUANTITY_REGEX_TEXT)];
  const errs: FieldError[] = [];
  if (n < 0n) errs.push(fieldErr.invalid(path, quantityString(q), 'must be greater than or equal to 0'));
  // IsIntegerResourceName: extended resources (and pods) come in whole units.
  if (!isNative(name) && n % 1_000_000_000n !== 0n) errs.push(fieldErr.invalid(path, quantityString(q), 'must be an integer'));
  return errs;
}
