/**
 * controlplane/auth/escalation: RBAC's escalation check on role and binding writes, as kube-apiserver's policy-based
 * storages for roles and bindings (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased).
 * Pure: it reads the policy through the authorizer and the PolicySource.
 *
 * - A Role or ClusterRole may be written by a user who holds every permission it grants (in the role's namespace;
 *   cluster-wide for a ClusterRole), or who may `escalate` roles/clusterroles there. A ClusterRole with an
 *   aggregationRule needs `escalate` (upstream: "must have cluster-admin privileges to use an aggregationRule").
 * - A RoleBinding or ClusterRoleBinding may be written by a user who holds every permission of the role it refers to
 *   (in the binding's namespace), or who may `bind` that role (`bind` on roles/clusterroles, by name).
 * - system:masters skip the check (EscalationAllowed). An update that leaves the rules (or roleRef) as they were is
 *   not checked again, as upstream lets a user who lost a permission still edit a role's labels.
 * - A refusal is upstream's 403: `user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC
 *   permissions not currently held:` and each missing rule on a line of its own.
 */
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { Resource } from '../api/resources.js';
import { apiErrors } from '../api/errors.js';
import { compactRule, rulesFor, uncovered, type Authorizer, type PolicyRule, type PolicySource, type UserInfo } from './rbac.js';
import { parseBinding, parseRules } from './policy-source.js';
import { obj } from '../../lib/json/loose.js';

const GROUP = 'rbac.authorization.k8s.io';

type O = Readonly<Record<string, unknown>>;

export interface EscalationDeps {
  readonly authorizer: Authorizer;
  readonly policy: PolicySource;
}

const forbidden = (r: Resource, name: string, why: string) => apiErrors.forbiddenWhy(r, name, why);

function notHeld(user: UserInfo, missing: readonly PolicyRule[], errors: readonly string[]): string {
  const groups = `[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]`;
  let msg = `user ${JSON.stringify(user.name)} (groups=${groups}) is attempting to grant RBAC permissions not currently held:\n${missing.map(compactRule).join('\n')}`;
  if (errors.length) msg += `; resolution errors: [${errors.join(', ')}]`;
  return msg;
}

/**
 * The admission check for a write of `r` by `user` in `namespace`, or undefined when `r` is not an RBAC kind or the
 * user is exempt. The function throws the 403 for an object that would escalate.
 */
export function escalationCheck(deps: EscalationDeps, user: UserInfo, r: Resource, namespace: string): ((o: O, old: O | null) => void) | undefined {
  if (r.group !== GROUP || user.groups.includes('system:masters')) return undefined;
  const may = (verb: string, resource: string, name: string) =>
    deps.authorizer.authorize({ user, verb, resourceRequest: true, apiGroup: GROUP, resource, namespace, name }).decision === 'allow';
  const nameOf = (o: O) => String(obj(o['metadata'])?.['name'] ?? '');
  switch (r.resource) {
    case 'roles':
    case 'clusterroles':
      return (o, old) => {
        const name = nameOf(o);
        const aggregated = r.resource === 'clusterroles' && o['aggregationRule'] !== undefined && o['aggregationRule'] !== null;
        if (old && deepEqual(o['rules'] ?? null, old['rules'] ?? null) && deepEqual(o['aggregationRule'] ?? null, old['aggregationRule'] ?? null)) return;
        if (may('escalate', r.resource, name)) return;
        if (aggregated) throw forbidden(r, name, 'must have cluster-admin privileges to use an aggregationRule');
        const own = rulesFor(deps.policy, user, namespace);
        const missing = uncovered(own.rules, parseRules(o['rules']));
        if (missing.length) throw forbidden(r, name, notHeld(user, missing, own.errors));
      };
    case 'rolebindings':
    case 'clusterrolebindings':
      return (o, old) => {
        const b = parseBinding(o as Record<string, unknown>);
        const name = b.name;
        if (old && deepEqual(o['roleRef'] ?? null, old['roleRef'] ?? null)) return;
        const roleResource = b.roleRef.kind === 'Role' ? 'roles' : 'clusterroles';
        if (may('bind', roleResource, b.roleRef.name)) return;
        const rules = b.roleRef.kind === 'Role' ? deps.policy.role(namespace, b.roleRef.name) : deps.policy.clusterRole(b.roleRef.name);
        if (!rules) throw forbidden(r, name, `${b.roleRef.kind === 'Role' ? 'roles' : 'clusterroles'}.${GROUP} "${b.roleRef.name}" not found`);
        const own = rulesFor(deps.policy, user, namespace);
        const missing = uncovered(own.rules, rules);
        if (missing.length) throw forbidden(r, name, notHeld(user, missing, own.errors));
      };
  }
  return undefined;
}
