/**
 * controlplane/kinds/event: core/v1 Events' strategy.
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem } from '../api/selectors.js';
import { obj } from './common.js';
import type { Strategy } from './strategy.js';

/**
 * core/v1 Events: upstream's legacyValidateEvent only (ValidateEventCreate/Update skip the rest for
 * v1): the name need only be a path segment, and type, reason and the like are free text, unless
 * the event is a "new" one (eventTime set), which must say who reported it and what happened.
 */
export const eventStrategy: Strategy = {
  nameRule: 'path',
  defaults() {},
  validate(o) {
    const errs: FieldError[] = [];
    const ns = String(obj(o['metadata'])?.['namespace'] ?? '');
    const io = obj(o['involvedObject']) ?? {};
    const ioNs = typeof io['namespace'] === 'string' ? io['namespace'] : '';
    const mismatch = () => errs.push(fieldErr.invalid('involvedObject.namespace', ioNs, 'does not match event.namespace'));
    const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
    if (!o['eventTime']) {
      if (ioNs === '' ? ns !== '' && ns !== 'default' : ns !== ioNs) mismatch();
    } else {
      if (ioNs === '' && ns !== 'default' && ns !== 'kube-system') mismatch();
      const rc = str('reportingComponent');
      if (rc === '') errs.push(fieldErr.required('reportingComponent'));
      const rp = labelKeyProblem(rc);
      if (rp) errs.push(fieldErr.invalid('reportingComponent', rc, rp));
      const limit = (k: string, n: number) => {
        if (str(k) === '' && k !== 'message') errs.push(fieldErr.required(k));
        if (str(k).length > n) errs.push(fieldErr.invalid(k, '', `can have at most ${n} characters`));
      };
      limit('reportingInstance', 128);
      limit('action', 128);
      limit('reason', 128);
      limit('message', 1024);
    }
    return errs;
  },
  allowCreateOnUpdate: true,
};
