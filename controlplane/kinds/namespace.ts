/**
 * controlplane/kinds/namespace: the Namespace's strategy: its name label, the `kubernetes` finalizer a new one
 * carries, spec.finalizers that only /finalize changes (registry/namespace.ts).
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem } from '../api/selectors.js';
import { arr, ensure, obj } from './common.js';
import type { Strategy } from './strategy.js';

export const namespaceStrategy: Strategy = {
  nameRule: 'label',
  defaults(o) {
    // kube-apiserver labels every namespace with its own name.
    const meta = ensure(o, 'metadata');
    if (typeof meta['name'] === 'string') ensure(meta, 'labels')['kubernetes.io/metadata.name'] = meta['name'];
  },
  validate(o) {
    const errs: FieldError[] = [];
    arr(obj(o['spec'])?.['finalizers']).forEach((f, i) => {
      const p = typeof f === 'string' ? labelKeyProblem(f) : 'must be a string';
      if (p) errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, p));
      else if (!String(f).includes('/') && f !== 'kubernetes') errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, 'name is neither a standard finalizer name nor is it fully qualified'));
    });
    return errs;
  },
  initialStatus: () => ({ phase: 'Active' }),
  prepareForCreate(o) {
    // A new namespace carries the `kubernetes` finalizer (the namespace controller's).
    const spec = ensure(o, 'spec');
    const f = arr(spec['finalizers']);
    if (!f.includes('kubernetes')) spec['finalizers'] = [...f, 'kubernetes'];
  },
  prepareForUpdate(o, old) {
    // spec.finalizers change only through /finalize.
    const was = obj(old['spec'])?.['finalizers'];
    const spec = ensure(o, 'spec');
    if (was === undefined) delete spec['finalizers'];
    else spec['finalizers'] = structuredClone(was);
  },
};
