/**
 * controlplane/auth/authz: who may do what (pure).
 *
 * Two kinds of users, from their bearer token:
 * - the admin (`nodenet:admin`, group system:masters): everything;
 * - a node (`system:node:<name>`, group system:nodes), the way
 *   Kubernetes' Node authorizer and NodeRestriction limit a kubelet: it
 *   reads everything but Pods' logs, and writes only its own Node (and its status), its
 *   own Lease in kube-node-lease, Events, and the status of Pods bound to
 *   it (and deletes those Pods, to finish their graceful deletion). It
 *   never binds a Pod (`pods/binding` is the scheduler's, the admin's here).
 */
import { timingSafeEqual } from 'node:crypto';

export interface User {
  readonly name: string;
  readonly groups: readonly string[];
  /** Set for node users. */
  readonly node?: string;
}

export interface Tokens {
  readonly admin: string;
  readonly nodes: Readonly<Record<string, string>>;
}

export const ADMIN_USER: User = { name: 'nodenet:admin', groups: ['system:masters', 'system:authenticated'] };

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The user a bearer token stands for, or null. */
export function authenticate(tokens: Tokens, header: string | undefined): User | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return null;
  const token = m[1]!;
  if (same(token, tokens.admin)) return ADMIN_USER;
  for (const [node, t] of Object.entries(tokens.nodes)) {
    if (same(token, t)) return { name: `system:node:${node}`, groups: ['system:nodes', 'system:authenticated'], node };
  }
  return null;
}

export interface Attributes {
  readonly verb: string;
  /** `services`, `deployments.apps`. */
  readonly gr: string;
  readonly namespace: string;
  readonly name: string;
  readonly subresource: string;
  /** For pod writes by a node: the node the stored pod is bound to (undefined when there is none). */
  readonly boundNode?: string | undefined;
}

const READ = new Set(['get', 'list', 'watch']);

export function authorize(user: User, a: Attributes): boolean {
  if (user.groups.includes('system:masters')) return true;
  if (!user.node) return false;
  // Logs can hold anything an app prints: a node reads no Pod's (its kubelet serves its own to the control plane).
  if (a.gr === 'pods' && a.subresource === 'log') return false;
  if (READ.has(a.verb)) return true;
  const node = user.node;
  switch (a.gr) {
    case 'nodes':
      // Its own Node: register it (create), update it and its status. Not delete.
      return a.verb !== 'delete' && a.verb !== 'deletecollection' && (a.name === node || (a.verb === 'create' && a.name === node));
    case 'leases.coordination.k8s.io':
      return a.namespace === 'kube-node-lease' && a.name === node && a.verb !== 'deletecollection';
    case 'events':
      return a.verb === 'create' || a.verb === 'update' || a.verb === 'patch';
    case 'pods':
      if (a.subresource === 'status') return (a.verb === 'update' || a.verb === 'patch') && a.boundNode === node;
      if (a.subresource === 'binding') return false;
      return a.subresource === '' && a.verb === 'delete' && a.boundNode === node;
    default:
      return false;
  }
}
