/**
 * controlplane/testing/as-controller: a controller's REST client in unit tests as the control plane gives it one: a
 * LoopbackRest as the controller's ServiceAccount (or the scheduler), authorized by RBAC over the bootstrap policy
 * alone. A controller test on it fails when the controller writes something its bootstrap role does not allow, as
 * it would on a running control plane.
 */
import { LoopbackRest } from '../api/loopback.js';
import type { Rest } from '../api/rest.js';
import type { User } from '../auth/authz.js';
import { bootstrapObjects } from '../auth/bootstrap.js';
import { CONTROLLER_ROLES, controllerUser, SCHEDULER_USER } from '../auth/bootstrap-policy.js';
import { parseBinding, parseRules } from '../auth/policy-source.js';
import { RbacAuthorizer, type Binding, type PolicyRule, type PolicySource } from '../auth/rbac.js';
import { silentLogger } from '../../lib/log/log.js';

/** The bootstrap ClusterRoles and ClusterRoleBindings as a fixed policy (aggregated roles left empty). */
export function bootstrapPolicy(): PolicySource {
  const { roles, bindings } = bootstrapObjects();
  const rules = new Map<string, PolicyRule[]>(roles.map((r) => [String((r['metadata'] as { name: string }).name), parseRules(r['rules'])]));
  const crbs: Binding[] = bindings.map((b) => parseBinding(b));
  return { clusterRoleBindings: () => crbs, roleBindings: () => [], clusterRole: (n) => rules.get(n), role: () => undefined };
}

const authorizer = new RbacAuthorizer(bootstrapPolicy());

export function asUser(rest: Rest, user: User): LoopbackRest {
  return new LoopbackRest({ rest, user, authorizer, log: silentLogger() });
}

export const asController = (rest: Rest, name: keyof typeof CONTROLLER_ROLES | 'scheduler'): LoopbackRest =>
  asUser(rest, name === 'scheduler' ? SCHEDULER_USER : controllerUser(name));
