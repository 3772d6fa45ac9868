/**
 * controlplane/auth/policy-source: RBAC's roles and bindings read from the watch cache (kube-apiserver's RBAC
 * authorizer reads them from its informers' listers). Each stored object is parsed once: the parse is memoized on
 * the cached object itself, so an authorization walks the bindings of its namespace and the cluster's without
 * re-reading their JSON. A field of an unexpected type reads as absent (it grants nothing), never as a wildcard.
 */
import type { WatchCache } from '../store/watch-cache.js';
import type { Stored } from '../store/types.js';
import type { Binding, PolicyRule, PolicySource, Subject } from './rbac.js';
import { arr, obj, str } from '../../lib/json/loose.js';

const G = 'rbac.authorization.k8s.io';
export const RBAC_GR = {
  roles: `roles.${G}`,
  clusterRoles: `clusterroles.${G}`,
  roleBindings: `rolebindings.${G}`,
  clusterRoleBindings: `clusterrolebindings.${G}`,
} as const;

const strings = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');

/** A PolicyRule from JSON (unknown types read as absent). */
export function parseRule(v: unknown): PolicyRule {
  const o = obj(v) ?? {};
  const rule: { -readonly [K in keyof PolicyRule]: PolicyRule[K] } = { verbs: strings(o['verbs']) };
  if (Array.isArray(o['apiGroups'])) rule.apiGroups = strings(o['apiGroups']);
  if (Array.isArray(o['resources'])) rule.resources = strings(o['resources']);
  if (Array.isArray(o['resourceNames'])) rule.resourceNames = strings(o['resourceNames']);
  if (Array.isArray(o['nonResourceURLs'])) rule.nonResourceURLs = strings(o['nonResourceURLs']);
  return rule;
}

export const parseRules = (v: unknown): PolicyRule[] => arr(v).map(parseRule);

export function parseSubject(v: unknown): Subject {
  const o = obj(v) ?? {};
  return { kind: str(o['kind']) ?? '', name: str(o['name']) ?? '', namespace: str(o['namespace']), apiGroup: str(o['apiGroup']) };
}

export function parseBinding(o: Record<string, unknown>): Binding {
  const meta = obj(o['metadata']) ?? {};
  const ref = obj(o['roleRef']) ?? {};
  return {
    name: str(meta['name']) ?? '',
    namespace: str(meta['namespace']) ?? '',
    roleRef: { apiGroup: str(ref['apiGroup']) ?? '', kind: str(ref['kind']) ?? '', name: str(ref['name']) ?? '' },
    subjects: arr(o['subjects']).map(parseSubject),
  };
}

export class CachePolicySource implements PolicySource {
  private readonly rules = new WeakMap<Stored, PolicyRule[]>();
  private readonly bindings = new WeakMap<Stored, Binding>();

  constructor(private readonly cache: WatchCache) {}

  clusterRoleBindings(): Iterable<Binding> {
    return this.cache.list(RBAC_GR.clusterRoleBindings).items.map((s) => this.binding(s));
  }

  roleBindings(namespace: string): Iterable<Binding> {
    return this.cache.list(RBAC_GR.roleBindings, namespace).items.map((s) => this.binding(s));
  }

  clusterRole(name: string): readonly PolicyRule[] | undefined {
    const s = this.cache.get(`${RBAC_GR.clusterRoles}//${name}`);
    return s ? this.rulesOf(s) : undefined;
  }

  role(namespace: string, name: string): readonly PolicyRule[] | undefined {
    const s = this.cache.get(`${RBAC_GR.roles}/${namespace}/${name}`);
    return s ? this.rulesOf(s) : undefined;
  }

  private binding(s: Stored): Binding {
    let b = this.bindings.get(s);
    if (!b) this.bindings.set(s, (b = parseBinding(s.object as Record<string, unknown>)));
    return b;
  }

  private rulesOf(s: Stored): PolicyRule[] {
    let r = this.rules.get(s);
    if (!r) this.rules.set(s, (r = parseRules((s.object as Record<string, unknown>)['rules'])));
    return r;
  }
}
