/**
 * controlplane/registry/scale: the `scale` subresource of the kinds that
 * have one (Deployments, ReplicaSets: kube-apiserver's ScaleREST in
 * pkg/registry/apps/{deployment,replicaset}/storage), as an autoscaling/v1 Scale.
 */
import { obj, type O } from '../../lib/json/loose.js';
import { apiErrors, fieldErr } from '../api/errors.js';
import type { RestClient, WriteOptions, WriteResult } from '../api/rest.js';
import type { Resource } from '../api/resources.js';
import { labelSelectorString } from '../api/table.js';
import type { KObject, Stored } from '../store/types.js';

/** The `scale` subresource as an autoscaling/v1 Scale. */
export function scaleOf(r: Resource, s: Stored): KObject {
  const sc = r.scale!;
  const o = s.object as O;
  const at = (p: readonly string[]) => p.reduce<unknown>((v, k) => obj(v)?.[k], o);
  // labels.Selector.String() of the selector, as scaleFromDeployment / scaleFromReplicaSet.
  const selText = labelSelectorString(at(sc.selector)) ?? '';
  const meta = obj(o['metadata'])!;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: meta['name'], namespace: meta['namespace'], uid: meta['uid'], resourceVersion: meta['resourceVersion'], creationTimestamp: meta['creationTimestamp'] },
    spec: { replicas: Number(at(sc.specReplicas) ?? 0) },
    status: { replicas: Number(at(sc.statusReplicas) ?? 0), selector: selText },
  };
}

/** PUT or PATCH of `scale`: only spec.replicas changes. */
export async function updateScale(rest: RestClient, r: Resource, namespace: string, name: string, replicasOf: (scale: KObject) => unknown, opts: WriteOptions): Promise<WriteResult> {
  const res = await rest.readModifyWrite(
    r,
    namespace,
    name,
    (cur) => {
      const scale = scaleOf(r, cur);
      const wanted = obj(replicasOf(scale));
      const rv = obj(wanted?.['metadata'])?.['resourceVersion'];
      if (rv !== undefined && rv !== '' && rv !== cur.object.metadata?.['resourceVersion']) throw apiErrors.conflict(r, name);
      const replicas = obj(wanted?.['spec'])?.['replicas'];
      if (typeof replicas !== 'number' || !Number.isInteger(replicas)) throw apiErrors.badRequest('spec.replicas: must be an integer');
      if (replicas < 0) throw apiErrors.invalid({ resource: 'scale', group: 'autoscaling', kind: 'Scale' }, name, [fieldErr.invalid('spec.replicas', replicas, 'must be greater than or equal to 0')]);
      const next = structuredClone(cur.object) as O;
      let target = next;
      const path = r.scale!.specReplicas;
      for (const k of path.slice(0, -1)) target = (obj(target[k]) ?? (target[k] = {})) as O;
      target[path[path.length - 1]!] = replicas;
      return next;
    },
    undefined,
    { ...opts, sub: 'scale' },
    [],
  );
  const meta = res.object.metadata ?? {};
  const rev = Number(meta['resourceVersion']);
  return { ...res, object: scaleOf(r, { key: rest.key(r, namespace, name), rev, createRev: rev, object: res.object, json: '' }) };
}
