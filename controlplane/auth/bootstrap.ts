/**
 * controlplane/auth/bootstrap: the bootstrap policy written at every start (kube-apiserver's rbac/bootstrap-roles
 * post-start hook and its reconciliation, pkg/registry/rbac/reconciliation): each ClusterRole and ClusterRoleBinding
 * of bootstrap-policy.ts is created when missing; one that exists and is not marked
 * `rbac.authorization.kubernetes.io/autoupdate: "false"` gets back the rules, selectors, labels, annotations and
 * subjects it lacks (added, never removed: a user's additions stay). A binding whose roleRef a user changed is left
 * alone and logged (roleRef is immutable; upstream recreates it, which would undo the user's choice silently).
 *
 * Several API servers starting at once on one etcd: a create another made first, or an update that lost a race, is
 * read again and reconciled on what won.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { Rest } from '../api/rest.js';
import { RESOURCES, type Resource } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import { arr, obj, str } from '../../lib/json/loose.js';
import { CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS } from './bootstrap-policy.js';
import { RBAC_GR } from './policy-source.js';

type O = Record<string, unknown>;
const ROLES = RESOURCES.find((r) => r.resource === 'clusterroles')!;
const BINDINGS = RESOURCES.find((r) => r.resource === 'clusterrolebindings')!;
const FIELD_MANAGER = 'nodenet-rbac-bootstrap';
export const AUTOUPDATE = 'rbac.authorization.kubernetes.io/autoupdate';
const BOOTSTRAPPING = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };
const API_VERSION = 'rbac.authorization.k8s.io/v1';

/** The ClusterRoles and ClusterRoleBindings of the bootstrap policy as objects. */
export function bootstrapObjects(): { roles: O[]; bindings: O[] } {
  const meta = (name: string, labels?: Readonly<Record<string, string>>) => ({ name, labels: { ...BOOTSTRAPPING, ...(labels ?? {}) }, annotations: { [AUTOUPDATE]: 'true' } });
  const roles = CLUSTER_ROLES.map((r) => {
    const o: O = { apiVersion: API_VERSION, kind: 'ClusterRole', metadata: meta(r.name, r.labels) };
    if (r.aggregateFrom) o['aggregationRule'] = { clusterRoleSelectors: r.aggregateFrom.map((m) => ({ matchLabels: { ...m } })) };
    else o['rules'] = r.rules.map((x) => JSON.parse(JSON.stringify(x)) as unknown);
    return o;
  });
  const bindings = CLUSTER_ROLE_BINDINGS.map((b) => ({
    apiVersion: API_VERSION, kind: 'ClusterRoleBinding', metadata: meta(b.name), roleRef: { ...b.roleRef }, subjects: b.subjects.map((s) => ({ ...s })),
  }));
  return { roles, bindings };
}

const union = (have: unknown, want: unknown): unknown[] => {
  const out = [...arr(have)];
  for (const w of arr(want)) if (!out.some((h) => deepEqual(h, w))) out.push(w);
  return out;
};

/** What an existing object needs added (null: nothing). */
export function reconciled(cur: O, want: O): O | null {
  const meta = obj(cur['metadata']) ?? {};
  if (str(obj(meta['annotations'])?.[AUTOUPDATE]) === 'false') return null;
  const wantMeta = obj(want['metadata']) ?? {};
  const next: O = { ...cur, metadata: { ...meta, labels: { ...(obj(meta['labels']) ?? {}), ...(obj(wantMeta['labels']) ?? {}) }, annotations: { ...(obj(wantMeta['annotations']) ?? {}), ...(obj(meta['annotations']) ?? {}) } } };
  if (want['kind'] === 'ClusterRole') {
    if (want['aggregationRule']) {
      const sel = union(obj(cur['aggregationRule'])?.['clusterRoleSelectors'], obj(want['aggregationRule'])?.['clusterRoleSelectors']);
      next['aggregationRule'] = { clusterRoleSelectors: sel };
    } else next['rules'] = union(cur['rules'], want['rules']);
  } else {
    if (!deepEqual(cur['roleRef'], want['roleRef'])) return null;
    next['subjects'] = union(cur['subjects'], want['subjects']);
  }
  return deepEqual(next, cur) ? null : next;
}

async function ensure(rest: Rest, cache: WatchCache, r: Resource, gr: string, want: O, log: Logger): Promise<void> {
  const name = String(obj(want['metadata'])?.['name']);
  for (let attempt = 0; attempt < 5; attempt++) {
    const cur = cache.get(`${gr}//${name}`);
    try {
      if (!cur) {
        await rest.create(r, '', want, { fieldManager: FIELD_MANAGER });
        return;
      }
      if (want['kind'] === 'ClusterRoleBinding' && !deepEqual(cur.object['roleRef'], want['roleRef'])) {
        log.warn({ [F.name]: name, roleRef: cur.object['roleRef'] }, 'a bootstrap ClusterRoleBinding refers to another role than the bootstrap policy\'s; left as it is');
        return;
      }
      const next = reconciled(cur.object as O, want);
      if (!next) return;
      await rest.update(r, '', name, next, { fieldManager: FIELD_MANAGER });
      log.info({ [F.name]: name, kind: want['kind'] }, 'bootstrap policy object reconciled');
      return;
    } catch (e) {
      if (isNodenetError(e) && (e.code === ErrorCode.AlreadyExists || e.code === ErrorCode.Conflict)) {
        await cache.fresh();
        continue;
      }
      throw e;
    }
  }
}

/** Creates or reconciles every bootstrap ClusterRole, then every ClusterRoleBinding. */
export async function reconcileBootstrapPolicy(rest: Rest, cache: WatchCache, log: Logger): Promise<void> {
  const { roles, bindings } = bootstrapObjects();
  for (const o of roles) await ensure(rest, cache, ROLES, RBAC_GR.clusterRoles, o, log);
  for (const o of bindings) await ensure(rest, cache, BINDINGS, RBAC_GR.clusterRoleBindings, o, log);
}
