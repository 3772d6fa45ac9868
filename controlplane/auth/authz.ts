/**
 * controlplane/auth/authz: who a request is from, and the authorizers in front of RBAC (pure).
 *
 * Users, from their bearer token (client certificates are read in api/server.ts):
 * - the admin (`nodenet:admin`, group system:masters): everything, as kube-apiserver's privileged group authorizer
 *   allows system:masters before any other;
 * - a node (`system:node:<name>`, group system:nodes), the way Kubernetes' Node authorizer limits a kubelet: it
 *   reads everything but Pods' logs, Secrets and ConfigMaps (those only when a Pod bound to it refers to them, as
 *   the Node authorizer's graph allows), and writes only its own Node (and its status), its own Lease in
 *   kube-node-lease, Events, and the status of Pods bound to it (and deletes those Pods, to finish their graceful
 *   deletion). It never binds a Pod (`pods/binding` is the scheduler's). What the Node authorizer does not allow
 *   goes on to RBAC (no opinion), as upstream's chain `Node,RBAC`.
 * - a request with no credentials is `system:anonymous` in `system:unauthenticated` (kube-apiserver's
 *   --anonymous-auth default): RBAC then allows it what the bootstrap policy grants that group, /version and the
 *   health endpoints.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Authorizer, AuthorizerResult, RequestAttributes, UserInfo } from './rbac.js';

export interface User extends UserInfo {
  /** Set for node users. */
  readonly node?: string;
}

export const ANONYMOUS_USER: User = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

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
  /** For a node's reads of Secrets and ConfigMaps, and its TokenRequests: whether a Pod bound to it refers to the object. */
  readonly referenced?: boolean | undefined;
}

const READ = new Set(['get', 'list', 'watch']);

/** Read only when a Pod bound to the node refers to the object (the Node authorizer's graph). */
const REFERENCED = new Set(['secrets', 'configmaps']);

/** The Node authorizer's rules for a node user: whether they allow the request (false for anyone else). */
export function nodeAllows(user: User, a: Attributes): boolean {
  if (!user.node) return false;
  // Logs can hold anything an app prints: a node reads no Pod's (its kubelet serves its own to the control plane).
  if (a.gr === 'pods' && a.subresource === 'log') return false;
  if (REFERENCED.has(a.gr)) return READ.has(a.verb) && a.referenced === true;
  // A token for the ServiceAccount of a Pod bound to it (its kubelet's projected token); TokenRequest checks the
  // binding to that Pod (NodeRestriction's part).
  if (a.gr === 'serviceaccounts' && a.subresource === 'token') return a.verb === 'create' && a.referenced === true;
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

/** system:masters may do anything (kube-apiserver's privileged group authorizer, first in its chain). */
export const privilegedGroupAuthorizer: Authorizer = {
  authorize: (a) => (a.user.groups.includes('system:masters') ? { decision: 'allow', reason: '' } : { decision: 'noopinion', reason: '' }),
};

/** What a node request needs beyond its attributes, looked up lazily (only for node users). */
export interface NodeGraph {
  /** The node a stored Pod is bound to. */
  boundNode(namespace: string, name: string): string | undefined;
  /** Whether a Pod bound to `node` refers to the Secret or ConfigMap, or runs as the ServiceAccount. */
  referenced(node: string, gr: 'secrets' | 'configmaps' | 'serviceaccounts', namespace: string, name: string): boolean;
}

/** The Node authorizer: allows what nodeAllows allows a node; no opinion otherwise (RBAC decides). */
export class NodeAuthorizer implements Authorizer {
  constructor(private readonly graph: NodeGraph) {}

  authorize(a: RequestAttributes): AuthorizerResult {
    const user = a.user as User;
    if (!user.node || !a.resourceRequest) return { decision: 'noopinion', reason: '' };
    const gr = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource ?? '';
    const ns = a.namespace ?? '';
    const name = a.name || a.createName || '';
    const attrs: Attributes = {
      verb: a.verb, gr, namespace: ns, name, subresource: a.subresource ?? '',
      boundNode: gr === 'pods' && name ? this.graph.boundNode(ns, name) : undefined,
      referenced: (gr === 'secrets' || gr === 'configmaps' || (gr === 'serviceaccounts' && a.subresource === 'token')) && name ? this.graph.referenced(user.node, gr, ns, name) : false,
    };
    return nodeAllows(user, attrs) ? { decision: 'allow', reason: '' } : { decision: 'noopinion', reason: '' };
  }
}
