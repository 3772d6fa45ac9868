/**
 * controlplane/api/discovery: `/version` and API discovery, legacy
 * (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`) and aggregated
 * (`apidiscovery.k8s.io/v2`, one request for every group), as kubectl and
 * client-go read them (pure).
 */
import { createHash } from 'node:crypto';
import { apiVersionOf, groups, RESOURCES, type Resource } from './resources.js';

/** The Kubernetes release whose API this server speaks: kubectl's dispatcher runs the kubectl of this minor. */
export const K8S_MAJOR = '1';
export const K8S_MINOR = '32';

export function versionInfo(nodenetVersion: string): Record<string, string> {
  return {
    major: K8S_MAJOR,
    minor: K8S_MINOR,
    gitVersion: `v${K8S_MAJOR}.${K8S_MINOR}.0-nodenet.${nodenetVersion}`,
    gitCommit: '',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'nodenet',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

const SUB_VERBS = ['get', 'patch', 'update'];

function storageVersionHash(r: Resource): string {
  return createHash('sha256').update(`${r.group}/${r.version}/${r.kind}`).digest('base64').slice(0, 11);
}

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

export function apiGroupList(): Record<string, unknown> {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups().map((g) => ({
      name: g.name,
      versions: g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${g.name}/${g.versions[0]}`, version: g.versions[0] },
    })),
  };
}

export function apiGroup(name: string): Record<string, unknown> | undefined {
  const g = groups().find((x) => x.name === name);
  if (!g) return undefined;
  return {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: g.name,
    versions: g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v })),
    preferredVersion: { groupVersion: `${g.name}/${g.versions[0]}`, version: g.versions[0] },
  };
}

/** `/api/v1`, `/apis/<group>/<version>`: APIResourceList, or undefined for a group-version not served. */
export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (!rs.length) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const r of rs) {
    const e: Record<string, unknown> = { name: r.resource, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: [...r.verbs] };
    if (r.shortNames.length) e['shortNames'] = [...r.shortNames];
    if (r.categories.length) e['categories'] = [...r.categories];
    e['storageVersionHash'] = storageVersionHash(r);
    resources.push(e);
    for (const sub of r.subresources) {
      if (sub === 'status') resources.push({ name: `${r.resource}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: SUB_VERBS });
      else if (sub === 'binding') resources.push({ name: `${r.resource}/binding`, singularName: '', namespaced: r.namespaced, kind: 'Binding', verbs: ['create'] });
      else if (sub === 'log') resources.push({ name: `${r.resource}/log`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get'] });
      else if (sub === 'token') resources.push({ name: `${r.resource}/token`, singularName: '', namespaced: r.namespaced, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });
      else resources.push({ name: `${r.resource}/scale`, singularName: '', namespaced: r.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: SUB_VERBS });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf({ group, version }), resources };
}

/** Aggregated discovery for `/api` (core) or `/apis` (the named groups). */
export function aggregated(core: boolean, apiVersion: 'apidiscovery.k8s.io/v2' | 'apidiscovery.k8s.io/v2beta1'): Record<string, unknown> {
  const gs = core ? [{ name: '', versions: ['v1'] }] : groups();
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion,
    metadata: {},
    items: gs.map((g) => ({
      metadata: g.name ? { name: g.name } : {},
      versions: g.versions.map((v) => ({
        version: v,
        freshness: 'Current',
        resources: RESOURCES.filter((r) => r.group === g.name && r.version === v).map((r) => {
          const e: Record<string, unknown> = {
            resource: r.resource,
            responseKind: { group: r.group, version: r.version, kind: r.kind },
            scope: r.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: r.singular,
            verbs: [...r.verbs],
          };
          if (r.shortNames.length) e['shortNames'] = [...r.shortNames];
          if (r.categories.length) e['categories'] = [...r.categories];
          if (r.subresources.length) {
            e['subresources'] = r.subresources.map((s) =>
              s === 'status'
                ? { subresource: 'status', responseKind: { group: r.group, version: r.version, kind: r.kind }, verbs: SUB_VERBS }
                : s === 'binding'
                  ? { subresource: 'binding', responseKind: { group: '', version: 'v1', kind: 'Binding' }, verbs: ['create'] }
                  : s === 'log'
                  ? { subresource: 'log', responseKind: { group: '', version: 'v1', kind: r.kind }, verbs: ['get'] }
                  : s === 'token'
                  ? { subresource: 'token', responseKind: { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' }, verbs: ['create'] }
                  : { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: SUB_VERBS },
            );
          }
          return e;
        }),
      })),
    })),
  };
}
