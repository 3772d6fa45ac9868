/**
 * controlplane/auth/rbac: Role-based access control, as kube-apiserver's RBAC authorizer
 * (plugin/pkg/auth/authorizer/rbac) and its rule resolver (pkg/registry/rbac/validation). Pure: the roles and
 * bindings come from a `PolicySource` (the watch cache in the server), requests in, decisions out.
 *
 * - A request is allowed when one rule of a role bound to the user allows it: ClusterRoleBindings everywhere, then
 *   the RoleBindings of the request's namespace (a RoleBinding may name a ClusterRole: its rules, in that namespace).
 * - A rule allows a resource request when its verbs, API groups, resources (`*`, `pods`, `pods/log`, `*∕status`) and
 *   resourceNames (empty: all) match; a non-resource request (`/healthz`) when its verbs and nonResourceURLs
 *   (exact, or a prefix ending in `*`) do.
 * - A subject is a User (by name), a Group (by the user's groups) or a ServiceAccount
 *   (`system:serviceaccount:<ns>:<name>`; a subject without a namespace takes the binding's).
 * - `covers` is the escalation check's coverage (ConfirmNoEscalation): every rule of a role being written or bound,
 *   broken into single verb × group × resource × name rules, must be allowed by the writer's own rules.
 * - A binding to a missing role grants nothing and says so in the reason; it never fails the request.
 */

export interface PolicyRule {
  readonly verbs: readonly string[];
  readonly apiGroups?: readonly string[] | undefined;
  readonly resources?: readonly string[] | undefined;
  readonly resourceNames?: readonly string[] | undefined;
  readonly nonResourceURLs?: readonly string[] | undefined;
}

export interface Subject {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly apiGroup?: string | undefined;
}

export interface RoleRef {
  readonly apiGroup: string;
  readonly kind: string;
  readonly name: string;
}

export interface Binding {
  readonly name: string;
  /** '' for a ClusterRoleBinding. */
  readonly namespace: string;
  readonly roleRef: RoleRef;
  readonly subjects: readonly Subject[];
}

export interface UserInfo {
  readonly name: string;
  readonly uid?: string | undefined;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>> | undefined;
}

/** What a request asks (k8s.io/apiserver authorizer.Attributes). */
export interface RequestAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  readonly resourceRequest: boolean;
  /** Resource requests: */
  readonly apiGroup?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Non-resource requests: the URL path. */
  readonly path?: string;
  /**
   * A create's name, from its body: only the Node authorizer reads it (a node registering its own Node). RBAC never
   * does: upstream's create requests have no name, so resourceNames cannot limit a create.
   */
  readonly createName?: string;
}

/** Where the roles and bindings come from. */
export interface PolicySource {
  clusterRoleBindings(): Iterable<Binding>;
  roleBindings(namespace: string): Iterable<Binding>;
  /** The rules of a ClusterRole, or undefined when there is none of that name. */
  clusterRole(name: string): readonly PolicyRule[] | undefined;
  role(namespace: string, name: string): readonly PolicyRule[] | undefined;
}

export type Decision = 'allow' | 'deny' | 'noopinion';

export interface AuthorizerResult {
  readonly decision: Decision;
  readonly reason: string;
}

export interface Authorizer {
  authorize(a: RequestAttributes): AuthorizerResult;
  /** The rules a user has in a namespace (SelfSubjectRulesReview), and whether the list may be incomplete. */
  rulesFor?(user: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean; errors: string[] };
}

const has = (list: readonly string[] | undefined, v: string): boolean => !!list && (list.includes('*') || list.includes(v));

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return has(rule.verbs, verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return has(rule.apiGroups, group);
}

/** `combined` is `pods` or `pods/log`; `*∕log` matches any resource's log subresource. */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

export function ruleAllows(a: RequestAttributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, a.verb)) return false;
  if (!a.resourceRequest) return nonResourceURLMatches(rule, a.path ?? '');
  const sub = a.subresource ?? '';
  const combined = sub ? `${a.resource ?? ''}/${sub}` : a.resource ?? '';
  return apiGroupMatches(rule, a.apiGroup ?? '') && resourceMatches(rule, combined, sub) && resourceNameMatches(rule, a.name ?? '');
}

export const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

/** `system:serviceaccount:ns:name` → [ns, name]; null for other users. */
export function serviceAccountOf(user: string): [string, string] | null {
  if (!user.startsWith(SERVICE_ACCOUNT_PREFIX)) return null;
  const parts = user.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
  return parts.length === 2 && parts[0] && parts[1] ? [parts[0], parts[1]] : null;
}

export function subjectApplies(user: UserInfo, s: Subject, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User': return user.name === s.name;
    case 'Group': return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace || bindingNamespace;
      return !!ns && user.name === `${SERVICE_ACCOUNT_PREFIX}${ns}:${s.name}`;
    }
    default: return false;
  }
}

function describeBinding(b: Binding, subject: Subject): string {
  const what = b.namespace ? `RoleBinding "${b.namespace}/${b.name}"` : `ClusterRoleBinding "${b.name}"`;
  const sub = subject.kind === 'ServiceAccount' ? `ServiceAccount "${subject.namespace || b.namespace}/${subject.name}"` : `${subject.kind} "${subject.name}"`;
  return `${what} of ${b.roleRef.kind} "${b.roleRef.name}" to ${sub}`;
}

/**
 * Calls `visit` with each rule that applies to the user in the namespace ('' for cluster scope: ClusterRoleBindings
 * only), and with the problems met (a binding to a missing role). `visit` returns false to stop.
 */
export function visitRulesFor(src: PolicySource, user: UserInfo, namespace: string, visit: (source: string, rule: PolicyRule | null, problem: string | null) => boolean): void {
  const walk = (b: Binding): boolean => {
    const subject = b.subjects.find((s) => subjectApplies(user, s, b.namespace));
    if (!subject) return true;
    const rules = b.roleRef.kind === 'ClusterRole' ? src.clusterRole(b.roleRef.name) : b.namespace ? src.role(b.namespace, b.roleRef.name) : undefined;
    if (!rules) {
      const where = b.roleRef.kind === 'Role' ? `role.rbac.authorization.k8s.io "${b.roleRef.name}"` : `clusterrole.rbac.authorization.k8s.io "${b.roleRef.name}"`;
      return visit(describeBinding(b, subject), null, `${where} not found`);
    }
    for (const r of rules) if (!visit(describeBinding(b, subject), r, null)) return false;
    return true;
  };
  for (const b of src.clusterRoleBindings()) if (!walk(b)) return;
  if (namespace) for (const b of src.roleBindings(namespace)) if (!walk(b)) return;
}

export function rulesFor(src: PolicySource, user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
  const rules: PolicyRule[] = [];
  const errors: string[] = [];
  visitRulesFor(src, user, namespace, (_s, r, p) => {
    if (r) rules.push(r);
    if (p) errors.push(p);
    return true;
  });
  return { rules, errors };
}

/** The RBAC authorizer: allow when a bound rule allows, otherwise no opinion (RBAC never denies). */
export class RbacAuthorizer implements Authorizer {
  constructor(private readonly src: PolicySource) {}

  authorize(a: RequestAttributes): AuthorizerResult {
    let allowedBy = '';
    const problems: string[] = [];
    visitRulesFor(this.src, a.user, a.resourceRequest ? a.namespace ?? '' : '', (source, rule, problem) => {
      if (rule && ruleAllows(a, rule)) {
        allowedBy = source;
        return false;
      }
      if (problem) problems.push(problem);
      return true;
    });
    if (allowedBy) return { decision: 'allow', reason: `RBAC: allowed by ${allowedBy}` };
    return { decision: 'noopinion', reason: problems.length ? `RBAC: ${problems.join(', ')}` : '' };
  }

  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean; errors: string[] } {
    const r = rulesFor(this.src, user, namespace);
    return { rules: r.rules, incomplete: false, errors: r.errors };
  }
}

/** Authorizers in order (kube-apiserver's union): the first allow or deny decides; all no opinion is a denial. */
export class AuthorizerChain implements Authorizer {
  constructor(private readonly chain: readonly Authorizer[]) {}

  authorize(a: RequestAttributes): AuthorizerResult {
    const reasons: string[] = [];
    for (const z of this.chain) {
      const r = z.authorize(a);
      if (r.decision !== 'noopinion') return r;
      if (r.reason) reasons.push(r.reason);
    }
    return { decision: 'noopinion', reason: reasons.join('\n') };
  }

  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    let incomplete = false;
    for (const z of this.chain) {
      if (!z.rulesFor) {
        incomplete = true;
        continue;
      }
      const r = z.rulesFor(user, namespace);
      rules.push(...r.rules);
      errors.push(...r.errors);
      incomplete ||= r.incomplete;
    }
    return { rules, incomplete, errors };
  }
}

// --- The escalation check's coverage (pkg/registry/rbac/validation/policy_comparator.go) ---

/** A rule broken into single verb × group × resource × name rules (non-resource rules: verb × URL). */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs) {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        if ((rule.resourceNames ?? []).length) for (const name of rule.resourceNames!) out.push({ verbs: [verb], apiGroups: [group], resources: [resource], resourceNames: [name] });
        else out.push({ verbs: [verb], apiGroups: [group], resources: [resource] });
      }
    }
    for (const url of rule.nonResourceURLs ?? []) out.push({ verbs: [verb], nonResourceURLs: [url] });
  }
  return out;
}

const coversAll = (owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean =>
  (owner ?? []).includes('*') || (wanted ?? []).every((w) => (owner ?? []).includes(w));

function resourceCovers(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  const o = owner ?? [];
  if (o.includes('*')) return true;
  return (wanted ?? []).every((w) => {
    if (o.includes(w)) return true;
    const slash = w.indexOf('/');
    return slash >= 0 && o.includes(`*${w.slice(slash)}`);
  });
}

function urlCovers(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  return (wanted ?? []).every((w) => (owner ?? []).some((u) => u === '*' || u === w || (u.endsWith('*') && w.startsWith(u.slice(0, -1)))));
}

/** Whether one owner rule covers one (broken-down) rule. */
export function ruleCovers(owner: PolicyRule, wanted: PolicyRule): boolean {
  if (!coversAll(owner.verbs, wanted.verbs)) return false;
  if ((wanted.nonResourceURLs ?? []).length) return urlCovers(owner.nonResourceURLs, wanted.nonResourceURLs);
  const ownerNames = owner.resourceNames ?? [];
  return coversAll(owner.apiGroups, wanted.apiGroups) && resourceCovers(owner.resources, wanted.resources)
    && (ownerNames.length === 0 || ((wanted.resourceNames ?? []).length > 0 && wanted.resourceNames!.every((n) => ownerNames.includes(n))));
}

/** The parts of `wanted` no rule of `owner` covers (empty: covered). */
export function uncovered(owner: readonly PolicyRule[], wanted: readonly PolicyRule[]): PolicyRule[] {
  const missing: PolicyRule[] = [];
  for (const w of wanted) for (const part of breakdownRule(w)) if (!owner.some((o) => ruleCovers(o, part))) missing.push(part);
  return missing;
}

/** A rule as upstream's escalation error prints it: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`. */
export function compactRule(r: PolicyRule): string {
  const q = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`;
  const parts: string[] = [];
  if ((r.apiGroups ?? []).length) parts.push(`APIGroups:${q(r.apiGroups!)}`);
  if ((r.resources ?? []).length) parts.push(`Resources:${q(r.resources!)}`);
  if ((r.resourceNames ?? []).length) parts.push(`ResourceNames:${q(r.resourceNames!)}`);
  if ((r.nonResourceURLs ?? []).length) parts.push(`NonResourceURLs:${q(r.nonResourceURLs!)}`);
  parts.push(`Verbs:${q(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}
