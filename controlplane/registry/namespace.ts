/**
 * controlplane/registry/namespace: the Namespace's own verb beside the
 * generic ones (kube-apiserver's pkg/registry/core/namespace/storage
 * FinalizeREST): `PUT .../namespaces/<name>/finalize`.
 */
import { obj, type O } from '../../lib/json/loose.js';
import { parseRV, type RestClient, type WriteOptions, type WriteResult } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';

const NAMESPACES = RESOURCES.find((x) => x.resource === 'namespaces')!;

/**
 * The `finalize` subresource of a Namespace: sets spec.finalizers (the namespace controller removes
 * `kubernetes` once the namespace is empty). A terminating namespace left with no finalizers of
 * either kind goes, as the controller's DELETE that follows makes it go upstream.
 * @param resourceVersion the version the caller read (a Conflict when it changed), if given
 */
export async function finalizeNamespace(rest: RestClient, name: string, finalizers: readonly string[], resourceVersion?: string, opts: WriteOptions = {}): Promise<WriteResult> {
  const r = NAMESPACES;
  const expect = resourceVersion === undefined || resourceVersion === '' ? undefined : parseRV(resourceVersion);
  return rest.readModifyWrite(
    r,
    '',
    name,
    (cur) => {
      const next = structuredClone(cur.object) as O;
      const spec = (obj(next['spec']) ?? (next['spec'] = {})) as O;
      spec['finalizers'] = [...finalizers];
      return next;
    },
    expect,
    { ...opts, sub: 'finalize' },
    [],
  );
}
