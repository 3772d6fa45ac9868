/**
 * controlplane/api/openapi: `/openapi/v3`, one OpenAPI 3.0 document per
 * group-version, derived from the schemas (schema.ts), not written by hand.
 *
 * kubectl needs it: `kubectl apply` reads it before anything else (and
 * fails without it), checks that the PATCH of the kind takes a
 * `fieldValidation` parameter (else it falls back to protobuf
 * `/openapi/v2`), and `kubectl explain` prints its descriptions. Schema
 * names follow upstream (`io.k8s.api.core.v1.Service`), roots carry
 * `x-kubernetes-group-version-kind`, merged lists their patch strategy and
 * merge key.
 *
 * `/openapi/v2` is an empty Swagger 2.0 document (no paths, no definitions), protobuf (gnostic's OpenAPIv2
 * Document, what client-go asks for) or JSON: nodenet publishes its schemas as v3 only. kubectl still reads v2 to
 * validate on the client what the server cannot (a `kind: List` input, as in `kubectl get secrets -A -o json |
 * kubectl replace -f -`); finding no schema for a kind it skips that check, and the server validates each object
 * as always (fieldValidation).
 */
import { createHash } from 'node:crypto';
import { K8S_MAJOR, K8S_MINOR } from './discovery.js';
import { RESOURCES, type Resource } from './resources.js';
import type { FieldType, Schemas } from './schema.js';
import { PATCH_STRATEGIES } from './strategic-merge.js';

const META = new Set([
  'V1ObjectMeta', 'V1ListMeta', 'V1OwnerReference', 'V1ManagedFieldsEntry', 'V1LabelSelector', 'V1LabelSelectorRequirement', 'V1Condition',
  'V1Status', 'V1StatusDetails', 'V1StatusCause', 'V1DeleteOptions', 'V1Preconditions',
]);
const APPS = /^V1(Deployment|ReplicaSet|RollingUpdateDeployment)/;
const DISCOVERY = /^(V1(EndpointSlice|EndpointConditions|EndpointHints|ForZone|ForNode|Endpoint)$|DiscoveryV1)/;
const COORDINATION = /^V1Lease/;

/** Upstream's definition name for a client-node model. */
export function definitionName(model: string): string {
  if (model === 'IntOrString') return 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
  if (model === 'V1Scale' || model === 'V1ScaleSpec' || model === 'V1ScaleStatus') return `io.k8s.api.autoscaling.v1.${model.slice(2)}`;
  if (META.has(model)) return `io.k8s.apimachinery.pkg.apis.meta.v1.${model.slice(2)}`;
  if (model.startsWith('CoreV1')) return `io.k8s.api.core.v1.${model.slice(6)}`;
  if (model.startsWith('DiscoveryV1')) return `io.k8s.api.discovery.v1.${model.slice(11)}`;
  if (APPS.test(model)) return `io.k8s.api.apps.v1.${model.slice(2)}`;
  if (DISCOVERY.test(model)) return `io.k8s.api.discovery.v1.${model.slice(2)}`;
  if (COORDINATION.test(model)) return `io.k8s.api.coordination.v1.${model.slice(2)}`;
  return `io.k8s.api.core.v1.${model.replace(/^V1/, '')}`;
}

type J = Record<string, unknown>;
const ref = (model: string) => `#/components/schemas/${definitionName(model)}`;

function schemaOf(t: FieldType, description = ''): J {
  const d = description ? { description } : {};
  switch (t.t) {
    case 'string': return { ...d, type: 'string' };
    case 'date-time': return { ...d, type: 'string', format: 'date-time' };
    case 'boolean': return { ...d, type: 'boolean' };
    case 'integer': return { ...d, type: 'integer', format: t.format };
    case 'number': return { ...d, type: 'number', format: 'double' };
    case 'any': return { ...d, type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    case 'int-or-string': return { ...d, allOf: [{ $ref: ref('IntOrString') }] };
    case 'ref': return description ? { description, allOf: [{ $ref: ref(t.ref) }] } : { $ref: ref(t.ref) };
    case 'array': return { ...d, type: 'array', items: schemaOf(t.items) };
    case 'map': return { ...d, type: 'object', additionalProperties: schemaOf(t.values) };
  }
}

function components(schemas: Schemas, roots: readonly Resource[]): J {
  const out: J = {
    'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { type: 'string', format: 'int-or-string', 'x-kubernetes-int-or-string': true, description: 'IntOrString is a type that can hold an int32 or a string.' },
    'io.k8s.apimachinery.pkg.apis.meta.v1.Patch': { type: 'object', description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.' },
  };
  for (const [name, s] of schemas) {
    const properties: J = {};
    for (const f of s.fields.values()) {
      const p = schemaOf(f.type, f.description);
      const strat = PATCH_STRATEGIES[name]?.[f.name];
      if (strat && f.type.t === 'array') {
        const parts = [strat.merge ? 'merge' : '', strat.retainKeys ? 'retainKeys' : ''].filter(Boolean);
        p['x-kubernetes-patch-strategy'] = parts.join(',');
        if (strat.key) {
          p['x-kubernetes-patch-merge-key'] = strat.key;
          p['x-kubernetes-list-type'] = 'map';
          p['x-kubernetes-list-map-keys'] = [strat.key];
        } else if (strat.merge) p['x-kubernetes-list-type'] = 'set';
      } else if (strat?.retainKeys) p['x-kubernetes-patch-strategy'] = 'retainKeys';
      properties[f.name] = p;
    }
    const def: J = { description: s.description, type: 'object', properties };
    const root = roots.find((r) => r.model === name);
    if (root) def['x-kubernetes-group-version-kind'] = [{ group: root.group, kind: root.kind, version: root.version }];
    if (name === 'V1Scale') def['x-kubernetes-group-version-kind'] = [{ group: 'autoscaling', kind: 'Scale', version: 'v1' }];
    out[definitionName(name)] = def;
  }
  for (const r of roots) {
    out[`${definitionName(r.model)}List`] = {
      description: `${r.kind}List is a list of ${r.kind} objects.`,
      type: 'object',
      required: ['items'],
      properties: {
        apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
        items: { type: 'array', description: `List of ${r.kind} objects.`, items: { $ref: ref(r.model) } },
        kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
        metadata: { $ref: ref('V1ListMeta') },
      },
      'x-kubernetes-group-version-kind': [{ group: r.group, kind: `${r.kind}List`, version: r.version }],
    };
  }
  return out;
}

const param = (name: string, description: string, where: 'query' | 'path' = 'query', type = 'string'): J => ({ name, in: where, description, ...(where === 'path' ? { required: true } : {}), schema: { type, uniqueItems: true } });
const WRITE_PARAMS = [
  param('dryRun', 'When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed'),
  param('fieldManager', 'fieldManager is a name associated with the actor or entity that is making these changes.'),
  param('fieldValidation', 'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict'),
];
const LIST_PARAMS = ['allowWatchBookmarks', 'continue', 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds', 'watch'].map((n) =>
  param(n, n, 'query', ['limit', 'timeoutSeconds'].includes(n) ? 'integer' : ['allowWatchBookmarks', 'watch', 'sendInitialEvents'].includes(n) ? 'boolean' : 'string'),
);
const PATCH_BODY = {
  content: Object.fromEntries(
    ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'].map((t) => [t, { schema: { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch' } }]),
  ),
  required: true,
};

function ok(model: string, code = '200'): J {
  return { [code]: { description: 'OK', content: { 'application/json': { schema: { $ref: model.startsWith('#') ? model : ref(model) } } } }, '401': { description: 'Unauthorized' } };
}

function paths(group: string, version: string, rs: readonly Resource[]): J {
  const out: J = {};
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  for (const r of rs) {
    const gvk = { group: r.group, kind: r.kind, version: r.version };
    const listRef = `#/components/schemas/${definitionName(r.model)}List`;
    const coll = r.namespaced ? `${base}/namespaces/{namespace}/${r.resource}` : `${base}/${r.resource}`;
    const nsParam = r.namespaced ? [param('namespace', 'object name and auth scope, such as for teams and projects', 'path')] : [];
    const tag = [`${r.group ? r.group.split('.')[0] : 'core'}_${version}`];
    out[coll] = {
      parameters: nsParam,
      get: { tags: tag, operationId: `list${r.kind}`, parameters: LIST_PARAMS, responses: ok(listRef), 'x-kubernetes-action': 'list', 'x-kubernetes-group-version-kind': gvk },
      post: { tags: tag, operationId: `create${r.kind}`, parameters: WRITE_PARAMS, requestBody: { content: { '*/*': { schema: { $ref: ref(r.model) } } }, required: true }, responses: ok(r.model, '201'), 'x-kubernetes-action': 'post', 'x-kubernetes-group-version-kind': gvk },
      delete: { tags: tag, operationId: `deletecollection${r.kind}`, parameters: [...LIST_PARAMS, ...WRITE_PARAMS.slice(0, 1)], responses: ok('V1Status'), 'x-kubernetes-action': 'deletecollection', 'x-kubernetes-group-version-kind': gvk },
    };
    const named = (suffix: string, kindModel: string, kindGvk: J) => ({
      parameters: [param('name', `name of the ${r.kind}`, 'path'), ...nsParam],
      get: { tags: tag, operationId: `read${r.kind}${suffix}`, responses: ok(kindModel), 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': kindGvk },
      put: { tags: tag, operationId: `replace${r.kind}${suffix}`, parameters: WRITE_PARAMS, requestBody: { content: { '*/*': { schema: { $ref: ref(kindModel) } } }, required: true }, responses: ok(kindModel), 'x-kubernetes-action': 'put', 'x-kubernetes-group-version-kind': kindGvk },
      patch: { tags: tag, operationId: `patch${r.kind}${suffix}`, parameters: [...WRITE_PARAMS, param('force', 'Force is going to "force" Apply requests.', 'query', 'boolean')], requestBody: PATCH_BODY, responses: ok(kindModel), 'x-kubernetes-action': 'patch', 'x-kubernetes-group-version-kind': kindGvk },
    });
    out[`${coll}/{name}`] = {
      ...named('', r.model, gvk),
      delete: { tags: tag, operationId: `delete${r.kind}`, parameters: [...WRITE_PARAMS.slice(0, 1), param('gracePeriodSeconds', 'The duration in seconds before the object should be deleted.', 'query', 'integer'), param('propagationPolicy', 'Whether and how garbage collection will be performed.')], responses: ok('V1Status'), 'x-kubernetes-action': 'delete', 'x-kubernetes-group-version-kind': gvk },
    };
    if (r.subresources.includes('status')) out[`${coll}/{name}/status`] = named('Status', r.model, gvk);
    if (r.subresources.includes('scale')) out[`${coll}/{name}/scale`] = named('Scale', 'V1Scale', { group: 'autoscaling', kind: 'Scale', version: 'v1' });
  }
  return out;
}

export class OpenApi {
  private readonly docs = new Map<string, J>();
  private readonly h: string;

  constructor(schemas: Schemas) {
    const gvs = new Map<string, Resource[]>();
    for (const r of RESOURCES) {
      const k = r.group ? `apis/${r.group}/${r.version}` : `api/${r.version}`;
      (gvs.get(k) ?? gvs.set(k, []).get(k)!).push(r);
    }
    const comps = components(schemas, RESOURCES);
    for (const [k, rs] of gvs) {
      this.docs.set(k, {
        openapi: '3.0.0',
        info: { title: 'Kubernetes', version: `v${K8S_MAJOR}.${K8S_MINOR}.0` },
        paths: paths(rs[0]!.group, rs[0]!.version, rs),
        components: { schemas: comps, securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } } },
      });
    }
    this.h = createHash('sha512').update(JSON.stringify([...this.docs])).digest('hex').slice(0, 64).toUpperCase();
  }

  hash(): string {
    return this.h;
  }

  index(): J {
    return { paths: Object.fromEntries([...this.docs.keys()].map((k) => [k, { serverRelativeURL: `/openapi/v3/${k}?hash=${this.h}` }])) };
  }

  document(path: string): J | undefined {
    return this.docs.get(path);
  }
}

/** The protobuf media type client-go asks `/openapi/v2` for, and the one kube-openapi answers with (no '@', which Go's mime parser refuses). */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
export const OPENAPI_V2_PROTOBUF_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

const INFO = { title: 'Kubernetes', version: `v${K8S_MAJOR}.${K8S_MINOR}.0` };

/** The empty v2 document as JSON. */
export const openApiV2Json = (): J => ({ swagger: '2.0', info: { ...INFO }, paths: {}, definitions: {} });

/** The empty v2 document as gnostic's openapi_v2.Document: swagger (1) and info (2: title 1, version 2). */
export function openApiV2Protobuf(): Buffer {
  const field = (n: number, b: Buffer) => Buffer.concat([Buffer.from([(n << 3) | 2, b.length]), b]);
  const info = Buffer.concat([field(1, Buffer.from(INFO.title)), field(2, Buffer.from(INFO.version))]);
  return Buffer.concat([field(1, Buffer.from('2.0')), field(2, info)]);
}
