/**
 * controlplane/registry/pod: the Pod's own verbs beside the generic ones
 * (kube-apiserver's pkg/registry/core/pod/storage BindingREST): the
 * `binding` subresource the scheduler posts. (The Pod's graceful deletion
 * is its strategy's: kinds/pod.ts.)
 */
import { arr, obj, type O } from '../../lib/json/loose.js';
import { apiErrors, fieldErr, successStatus, type FieldError, type Status } from '../api/errors.js';
import { rfc3339, type RestClient, type WriteOptions } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';

const PODS = RESOURCES.find((x) => x.resource === 'pods')!;
/** What a Binding's errors name: `pods/binding` in a Conflict, `Binding` in a 422 (as upstream). */
const BINDING = { resource: 'pods/binding', group: '', kind: 'Binding' } as const;

/**
 * The `binding` subresource of a Pod (POST .../pods/<name>/binding), what kube-scheduler calls:
 * a v1 Binding whose target is a Node sets spec.nodeName once and the PodScheduled=True condition,
 * and merges the Binding's annotations into the Pod's; nothing else changes. The Binding's uid and
 * resourceVersion, when set, are preconditions. A Pod already bound, being deleted or still gated
 * is a 409 Conflict on `pods/binding`, as kube-apiserver's BindingREST answers; a missing Pod a 404.
 * The Node itself is not looked up (upstream does not either).
 * @returns a Status Success with code 201
 */
export async function bindPod(rest: RestClient, namespace: string, name: string, body: unknown, opts: WriteOptions = {}): Promise<{ code: number; body: Status }> {
  const b = obj(body);
  if (!b) throw apiErrors.badRequest('the body of the request must be a JSON object (a Binding)');
  if (b['apiVersion'] !== undefined && b['apiVersion'] !== 'v1') throw apiErrors.badRequest(`the API version in the data (${String(b['apiVersion'])}) does not match the expected API version (v1)`);
  if (b['kind'] !== undefined && b['kind'] !== 'Binding') throw apiErrors.badRequest(`the kind in the data (${String(b['kind'])}) does not match the expected kind (Binding)`);
  const meta = obj(b['metadata']) ?? {};
  if (meta['namespace'] !== undefined && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
    throw apiErrors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  if (meta['name'] !== name) throw apiErrors.badRequest('name in URL does not match name in Binding object');
  const target = obj(b['target']) ?? {};
  const errs: FieldError[] = [];
  // ValidatePodBinding.
  if (target['kind'] !== undefined && target['kind'] !== '' && target['kind'] !== 'Node') errs.push(fieldErr.notSupported('target.kind', target['kind'], ['Node', '<empty>']));
  if (typeof target['name'] !== 'string' || target['name'] === '') errs.push(fieldErr.required('target.name'));
  if (errs.length) throw apiErrors.invalid(BINDING, name, errs);
  const node = String(target['name']);
  const annotations = obj(meta['annotations']) ?? {};
  for (const [k, v] of Object.entries(annotations)) if (typeof v !== 'string') throw apiErrors.badRequest(`metadata.annotations.${k}: must be a string`);
  const uid = typeof meta['uid'] === 'string' && meta['uid'] !== '' ? meta['uid'] : undefined;
  const rv = typeof meta['resourceVersion'] === 'string' && meta['resourceVersion'] !== '' ? meta['resourceVersion'] : undefined;
  await rest.readModifyWrite(
    PODS,
    namespace,
    name,
    (cur) => {
      const m = obj(cur.object.metadata) ?? {};
      if (uid !== undefined && uid !== m['uid']) throw apiErrors.conflict(PODS, name, `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${String(m['uid'])}`);
      if (rv !== undefined && rv !== m['resourceVersion']) throw apiErrors.conflict(PODS, name, `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in object meta: ${String(m['resourceVersion'])}`);
      const spec = obj(cur.object['spec']) ?? {};
      if (m['deletionTimestamp']) throw apiErrors.conflict(BINDING, name, `pod ${name} is being deleted, cannot be assigned to a host`);
      if (typeof spec['nodeName'] === 'string' && spec['nodeName'] !== '') throw apiErrors.conflict(BINDING, name, `pod ${name} is already assigned to node ${JSON.stringify(spec['nodeName'])}`);
      if (arr(spec['schedulingGates']).length) throw apiErrors.conflict(BINDING, name, `pod ${name} has non-empty .spec.schedulingGates`);
      const next = structuredClone(cur.object) as O;
      const ns = (next['spec'] = obj(next['spec']) ?? {}) as O;
      ns['nodeName'] = node;
      const nm = obj(next['metadata'])!;
      if (Object.keys(annotations).length) nm['annotations'] = { ...(obj(nm['annotations']) ?? {}), ...annotations };
      // UpdatePodCondition: PodScheduled=True, its transition time kept when it was True already.
      const status = (next['status'] = obj(next['status']) ?? {}) as O;
      const conds = arr(status['conditions']).map(obj).filter((c): c is O => !!c);
      const was = conds.find((c) => c['type'] === 'PodScheduled');
      const cond: O = { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: was?.['status'] === 'True' ? was['lastTransitionTime'] : rfc3339(rest.clock.now()) };
      status['conditions'] = was ? conds.map((c) => (c === was ? cond : c)) : [...conds, cond];
      return next;
    },
    undefined,
    { ...opts, sub: 'binding' },
    [],
  );
  return { code: 201, body: { ...successStatus(), code: 201 } };
}
