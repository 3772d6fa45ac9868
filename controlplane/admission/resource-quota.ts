/**
 * controlplane/admission/resource-quota: the ResourceQuota admission plugin (k8s.io/apiserver/pkg/admission/plugin/
 * resourcequota), last in the chain, on every namespaced create and update of a main resource:
 *
 * 1. The namespace's quotas (watch cache) whose scopes select the object and whose `status.hard` names something
 *    the object's evaluator counts (quota/usage.ts). A quota tracking cpu or memory needs every container to state
 *    it (`failed quota: q: must specify limits.cpu for: web`); a quota whose usage its controller has not counted
 *    yet refuses (`status unknown for quota: q, resources: pods`).
 * 2. What the write adds: the object's usage, less the old object's on an update.
 * 3. Each quota's `used` plus that, against its `hard`: over is upstream's 403, `pods "p4" is forbidden: exceeded
 *    quota: q, requested: pods=1, used: pods=3, limited: pods=3`.
 * 4. The charge: each quota's `status.used` raised by a compare-and-swap on its resourceVersion, before the object
 *    is stored, so that writes racing for the last unit (from this API server or another on the same store) take it
 *    once: a lost race reads the quota again and decides again. A check that fails against the cached quota is made
 *    again against the stored one before it refuses.
 * A write that fails after its charge leaves the quota counting it until the ResourceQuota controller counts again
 * (upstream's behaviour); deletions are given back by that controller too. A dry run is checked, never charged.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { obj, str } from '../../lib/json/loose.js';
import { apiErrors } from '../api/errors.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { guaranteedUpdate, StaleRead, type Storage } from '../store/storage.js';
import type { Stored } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { add, evaluatorFor, exceeded, mask, prettyPrint, resourceList, subtractNonNegative, toObject, type ResourceList } from '../quota/usage.js';
import type { AdmissionPlugin, AdmissionRequest } from './admission.js';

type O = Record<string, unknown>;

export interface ResourceQuotaDeps {
  readonly cache: WatchCache;
  readonly storage: Storage;
  readonly clock: Clock;
}

/** The charge one quota takes from a write. */
interface Charge {
  readonly quota: Stored;
  readonly requested: ResourceList;
}

export function resourceQuota(d: ResourceQuotaDeps): AdmissionPlugin {
  return {
    name: 'ResourceQuota',
    async validate(a, o, old) {
      if (!o || a.operation === 'DELETE' || !a.namespace || a.subresource || !a.resource.namespaced) return;
      const quotas = d.cache.list('resourcequotas', a.namespace).items;
      if (!quotas.length) return;
      const ev = evaluatorFor(a.resource);
      if (!ev.handles(a.operation)) return;
      const now = d.clock.now();
      let delta = ev.usage(o, now);
      if (a.operation === 'UPDATE' && old) delta = subtractNonNegative(delta, ev.usage(old, now));
      const charges: Charge[] = [];
      for (const q of quotas) {
        const quota = q.object as O;
        if (!ev.matchesScopes(quota, o)) continue;
        const status = obj(quota['status']) ?? {};
        const hard = resourceList(status['hard']);
        const restricted = ev.matching(hard.keys());
        if (!restricted.length) continue;
        const name = str(obj(quota['metadata'])?.['name']) ?? '';
        const why = ev.constraints?.(restricted, o);
        if (why) throw apiErrors.forbiddenWhy(a.resource, a.name, `failed quota: ${name}: ${why}`);
        const used = obj(status['used']) ?? {};
        const unknown = restricted.filter((r) => !(r in used));
        if (unknown.length) throw apiErrors.forbiddenWhy(a.resource, a.name, `status unknown for quota: ${name}, resources: ${unknown.sort().join(',')}`);
        const requested = mask(delta, hard.keys());
        if ([...requested.values()].some((v) => v.nanos > 0n)) charges.push({ quota: q, requested });
      }
      for (const c of charges) await charge(d, a, c);
    },
  };
}

/** Checks one quota against its current version and, unless a dry run, raises its status.used. */
async function charge(d: ResourceQuotaDeps, a: AdmissionRequest, c: Charge): Promise<void> {
  const decide = (cur: Stored, fresh: boolean) => {
    const q = cur.object as O;
    const status = obj(q['status']) ?? {};
    const hard = resourceList(status['hard']);
    const used = resourceList(status['used']);
    const requested = mask(c.requested, hard.keys());
    const next = add(used, requested);
    const over = exceeded(mask(next, requested.keys()), hard);
    if (over.length) {
      const err = apiErrors.forbiddenWhy(a.resource, a.name, `exceeded quota: ${str(obj(q['metadata'])?.['name']) ?? ''}, requested: ${prettyPrint(mask(requested, over))}, used: ${prettyPrint(mask(used, over))}, limited: ${prettyPrint(mask(hard, over))}`);
      // Refused against the cache: ask the store before refusing.
      if (!fresh) throw new StaleRead(err);
      throw err;
    }
    return { q, next };
  };
  if (a.dryRun) {
    decide(c.quota, false);
    return;
  }
  try {
    await guaranteedUpdate(d.storage, c.quota.key, (cur, fresh) => {
      const { q, next } = decide(cur, fresh);
      return { write: { ...q, status: { ...(obj(q['status']) ?? {}), used: { ...(obj(obj(q['status'])?.['used']) ?? {}), ...toObject(mask(next, c.requested.keys())) } } } as typeof cur.object };
    }, { cached: c.quota });
  } catch (e) {
    if (e instanceof StaleRead) throw e.cause;
    // The quota was deleted meanwhile: it limits nothing any more.
    if (e instanceof NodenetError && e.code === ErrorCode.NotFound) return;
    throw e;
  }
}
