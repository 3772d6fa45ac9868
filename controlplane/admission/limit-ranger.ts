/**
 * controlplane/admission/limit-ranger: the LimitRanger admission plugin (plugin/pkg/admission/limitranger), for Pods
 * (nodenet serves no PersistentVolumeClaims):
 *
 * - mutating, on a Pod's create: each container (and init container) gets what the namespace's LimitRanges'
 *   Container items default, for every resource it states no limit or no request of (`default`, `defaultRequest`;
 *   the LimitRange's own defaults filled them from max and min), and the Pod the annotation
 *   `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for container web; ...`;
 * - validating, on a Pod's create: every Container item's min, max and maxLimitRequestRatio on each container, every
 *   Pod item's on the Pod's requests and limits (resourcehelper's sums, quota/usage.ts). A Pod that breaks one is a
 *   403 in upstream's words (`pods "web" is forbidden: maximum cpu usage per Container is 500m, but limit is 1`;
 *   several: `[..., ...]`).
 * A Pod's update is left alone: its resources cannot change. LimitRanges come from the watch cache.
 */
import { arr, obj, str } from '../../lib/json/loose.js';
import { apiErrors } from '../api/errors.js';
import type { WatchCache } from '../store/watch-cache.js';
import { amountString, milliUnits, podAmounts, resourceList, type Amount, type ResourceList } from '../quota/usage.js';
import type { AdmissionPlugin, AdmissionRequest } from './admission.js';

type O = Record<string, unknown>;

export const LIMIT_RANGER_ANNOTATION = 'kubernetes.io/limit-ranger';

const isPodCreate = (a: AdmissionRequest) => a.operation === 'CREATE' && a.resource.resource === 'pods' && !a.resource.group && !a.subresource;

function limitRanges(cache: WatchCache, namespace: string): O[] {
  return cache.list('limitranges', namespace).items.map((s) => s.object as O);
}

const items = (lr: O) => arr(obj(lr['spec'])?.['limits']).map((i) => obj(i) ?? {});

/** defaultContainerResourceRequirements + mergePodResourceRequirements. */
export function applyDefaults(pod: O, ranges: readonly O[]): void {
  const requests: O = {};
  const limits: O = {};
  for (const lr of ranges) {
    for (const item of items(lr)) {
      if (item['type'] !== 'Container') continue;
      Object.assign(requests, obj(item['defaultRequest']) ?? {});
      Object.assign(limits, obj(item['default']) ?? {});
    }
  }
  if (!Object.keys(requests).length && !Object.keys(limits).length) return;
  const notes: string[] = [];
  const spec = obj(pod['spec']) ?? {};
  for (const [list, prefix] of [['containers', 'container'], ['initContainers', 'init container']] as const) {
    for (const c of arr(spec[list])) {
      const ct = obj(c);
      if (!ct) continue;
      const res = (obj(ct['resources']) ?? (ct['resources'] = {})) as O;
      const have = { limits: (obj(res['limits']) ?? {}) as O, requests: (obj(res['requests']) ?? {}) as O };
      const set = { limits: [] as string[], requests: [] as string[] };
      for (const [k, v] of Object.entries(limits)) if (!(k in have.limits)) { have.limits[k] = v; set.limits.push(k); }
      for (const [k, v] of Object.entries(requests)) if (!(k in have.requests)) { have.requests[k] = v; set.requests.push(k); }
      if (Object.keys(have.limits).length) res['limits'] = have.limits;
      if (Object.keys(have.requests).length) res['requests'] = have.requests;
      const name = str(ct['name']) ?? '';
      if (set.requests.length) notes.push(`${set.requests.sort().join(', ')} request for ${prefix} ${name}`);
      if (set.limits.length) notes.push(`${set.limits.sort().join(', ')} limit for ${prefix} ${name}`);
    }
  }
  if (notes.length) {
    const meta = (obj(pod['metadata']) ?? (pod['metadata'] = {})) as O;
    meta['annotations'] = { ...(obj(meta['annotations']) ?? {}), [LIMIT_RANGER_ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
  }
}

const m = (a: Amount) => milliUnits(a.nanos);

function minConstraint(type: string, r: string, enforced: Amount, req: ResourceList, lim: ResourceList): string | null {
  const q = req.get(r);
  const l = lim.get(r);
  if (!q) return `minimum ${r} usage per ${type} is ${amountString(enforced)}.  No request is specified`;
  if (m(q) < m(enforced)) return `minimum ${r} usage per ${type} is ${amountString(enforced)}, but request is ${amountString(q)}`;
  if (l && m(l) < m(enforced)) return `minimum ${r} usage per ${type} is ${amountString(enforced)}, but limit is ${amountString(l)}`;
  return null;
}

function maxConstraint(type: string, r: string, enforced: Amount, req: ResourceList, lim: ResourceList): string | null {
  const q = req.get(r);
  const l = lim.get(r);
  if (!l) return `maximum ${r} usage per ${type} is ${amountString(enforced)}.  No limit is specified`;
  if (m(l) > m(enforced)) return `maximum ${r} usage per ${type} is ${amountString(enforced)}, but limit is ${amountString(l)}`;
  if (q && m(q) > m(enforced)) return `maximum ${r} usage per ${type} is ${amountString(enforced)}, but request is ${amountString(q)}`;
  return null;
}

function ratioConstraint(type: string, r: string, enforced: Amount, req: ResourceList, lim: ResourceList): string | null {
  const q = req.get(r);
  const l = lim.get(r);
  const e = amountString(enforced);
  if (!q || m(q) === 0n) return `${r} max limit to request ratio per ${type} is ${e}, but no request is specified or request is 0`;
  if (!l || m(l) === 0n) return `${r} max limit to request ratio per ${type} is ${e}, but no limit is specified or limit is 0`;
  const observed = Number(m(l)) / Number(m(q));
  if (observed * 1000 > Number(m(enforced))) return `${r} max limit to request ratio per ${type} is ${e}, but provided ratio is ${observed.toFixed(6)}`;
  return null;
}

/** PodValidateLimitFunc: the constraints the Pod breaks, in upstream's words. */
export function limitViolations(pod: Readonly<O>, ranges: readonly O[]): string[] {
  const errs: string[] = [];
  const spec = obj(pod['spec']) ?? {};
  const check = (type: string, item: O, req: ResourceList, lim: ResourceList) => {
    for (const [field, fn] of [['min', minConstraint], ['max', maxConstraint], ['maxLimitRequestRatio', ratioConstraint]] as const) {
      for (const [r, enforced] of [...resourceList(item[field])].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const e = fn(type, r, enforced, req, lim);
        if (e) errs.push(e);
      }
    }
  };
  for (const lr of ranges) {
    for (const item of items(lr)) {
      if (item['type'] === 'Container') {
        for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
          const res = obj(obj(c)?.['resources']) ?? {};
          check('Container', item, resourceList(res['requests']), resourceList(res['limits']));
        }
      } else if (item['type'] === 'Pod') check('Pod', item, podAmounts(spec, 'requests'), podAmounts(spec, 'limits'));
    }
  }
  return errs;
}

export function limitRanger(cache: WatchCache): AdmissionPlugin {
  return {
    name: 'LimitRanger',
    admit(a, o) {
      if (!isPodCreate(a)) return;
      applyDefaults(o, limitRanges(cache, a.namespace));
    },
    validate(a, o) {
      if (!isPodCreate(a) || !o) return;
      const errs = limitViolations(o, limitRanges(cache, a.namespace));
      // utilerrors.NewAggregate: one error as itself, several in brackets.
      if (errs.length) throw apiErrors.forbiddenWhy(a.resource, a.name, errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);
    },
  };
}
