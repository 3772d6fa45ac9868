/**
 * controlplane/kinds/rbac: Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1).
 * Stub strategies: the names only (ValidateRBACName: a path segment), until their validation lands (issue 27).
 */
import { plain } from './strategy.js';

export const roleStrategy = plain('path');
export const clusterRoleStrategy = plain('path');
export const roleBindingStrategy = plain('path');
export const clusterRoleBindingStrategy = plain('path');
