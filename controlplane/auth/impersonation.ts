/**
 * controlplane/auth/impersonation: the Impersonate-* headers, as kube-apiserver's impersonation filter
 * (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go) reads them. Pure: headers and the requester in, the user the
 * request then runs as out.
 *
 * - `Impersonate-User` (one), `Impersonate-Group` (any number), `Impersonate-Uid` and `Impersonate-Extra-<key>`
 *   (the key percent-decoded, any number of values). Each is authorized for the requester with the `impersonate`
 *   verb: users (or serviceaccounts, for `system:serviceaccount:<ns>:<name>`), groups, uids and userextras/<key> of
 *   authentication.k8s.io, by name. The first one not allowed is the request's 403, in upstream's words.
 * - The impersonated user gets system:authenticated (system:unauthenticated for system:anonymous); a ServiceAccount
 *   with no group asked gets its groups (system:serviceaccounts, system:serviceaccounts:<ns>).
 * - Groups, a uid or extras without a user are refused (400).
 */
import { apiErrors } from '../api/errors.js';
import type { User } from './authz.js';
import { serviceAccountOf, type Authorizer, type RequestAttributes } from './rbac.js';

/** Header name → its values (Node's `req.headersDistinct`: lowercase names). */
export type Headers = Readonly<Record<string, readonly string[] | undefined>>;

const EXTRA = 'impersonate-extra-';

export function wantsImpersonation(h: Headers): boolean {
  return Object.keys(h).some((k) => k.startsWith('impersonate-'));
}

/** The user the request runs as; throws the 403 or 400. */
export function impersonate(h: Headers, requester: User, authorizer: Authorizer): User {
  const users = h['impersonate-user'] ?? [];
  const groups = h['impersonate-group'] ?? [];
  const uids = h['impersonate-uid'] ?? [];
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    if (!k.startsWith(EXTRA) || !v) continue;
    let key: string;
    try {
      key = decodeURIComponent(k.slice(EXTRA.length));
    } catch {
      throw apiErrors.badRequest(`header ${k}: not a percent-encoded key`);
    }
    (extra[key] ??= []).push(...v);
  }
  if (users.length > 1) throw apiErrors.badRequest('only one Impersonate-User header may be given');
  if (uids.length > 1) throw apiErrors.badRequest('only one Impersonate-Uid header may be given');
  const name = users[0] ?? '';
  if (!name) {
    const asked = [...groups.map((g) => `group ${g}`), ...uids.map((u) => `uid ${u}`), ...Object.keys(extra).map((k) => `extra ${k}`)];
    throw apiErrors.badRequest(`requested [${asked.join(', ')}] without impersonating a user`);
  }
  const check = (a: Omit<RequestAttributes, 'user' | 'verb' | 'resourceRequest'>, shown: { resource: string; group: string; name: string; namespace?: string; subresource?: string }) => {
    const d = authorizer.authorize({ user: requester, verb: 'impersonate', resourceRequest: true, ...a });
    if (d.decision !== 'allow') {
      throw apiErrors.forbidden(requester.name, 'impersonate', { resource: shown.resource, group: shown.group, kind: shown.resource }, shown.namespace ?? '', shown.name, shown.subresource, d.reason);
    }
  };
  const sa = serviceAccountOf(name);
  if (sa) check({ apiGroup: '', resource: 'serviceaccounts', namespace: sa[0], name: sa[1] }, { resource: 'serviceaccounts', group: '', namespace: sa[0], name: sa[1] });
  else check({ apiGroup: '', resource: 'users', name }, { resource: 'users', group: '', name });
  for (const g of groups) check({ apiGroup: '', resource: 'groups', name: g }, { resource: 'groups', group: '', name: g });
  for (const u of uids) check({ apiGroup: 'authentication.k8s.io', resource: 'uids', name: u }, { resource: 'uids', group: 'authentication.k8s.io', name: u });
  for (const [k, vs] of Object.entries(extra)) {
    for (const v of vs) check({ apiGroup: 'authentication.k8s.io', resource: 'userextras', subresource: k, name: v }, { resource: 'userextras', group: 'authentication.k8s.io', name: v, subresource: k });
  }
  const out = [...groups];
  if (sa && !groups.length) out.push('system:serviceaccounts', `system:serviceaccounts:${sa[0]}`);
  const implicit = name === 'system:anonymous' ? 'system:unauthenticated' : 'system:authenticated';
  if (!out.includes(implicit)) out.push(implicit);
  const node = /^system:node:(.+)$/.exec(name)?.[1];
  return {
    name, groups: out,
    ...(uids[0] ? { uid: uids[0] } : {}),
    ...(Object.keys(extra).length ? { extra } : {}),
    ...(node && out.includes('system:nodes') ? { node } : {}),
  };
}
