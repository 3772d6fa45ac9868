/**
 * controlplane/admission/priority: the Priority admission plugin (plugin/pkg/admission/priority):
 *
 * - a new Pod's `priorityClassName` is resolved to `spec.priority` and `spec.preemptionPolicy` from its
 *   PriorityClass (`pods "p" is forbidden: no PriorityClass with name gold was found`); a Pod that names none gets
 *   the global default class's (its name too), or priority 0 and PreemptLowerPriority when there is none; a Pod
 *   that states a priority or policy other than its class's is refused in upstream's words;
 * - at most one PriorityClass is the global default (`PriorityClass gold is already marked as default. Only one
 *   default can exist`), on create and update.
 * PriorityClasses come from the watch cache.
 */
import { obj, str } from '../../lib/json/loose.js';
import { apiErrors } from '../api/errors.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { AdmissionPlugin } from './admission.js';

type O = Record<string, unknown>;

export function priority(cache: WatchCache): AdmissionPlugin {
  const classes = () => cache.list('priorityclasses.scheduling.k8s.io').items.map((s) => s.object as O);
  return {
    name: 'Priority',
    admit(a, o) {
      if (a.operation !== 'CREATE' || a.subresource || a.resource.group || a.resource.resource !== 'pods') return;
      const spec = (obj(o['spec']) ?? (o['spec'] = {})) as O;
      let name = str(spec['priorityClassName']) ?? '';
      let value = 0;
      let policy: unknown = 'PreemptLowerPriority';
      if (!name) {
        // getDefaultPriority: the global default with the highest value.
        const def = classes().filter((c) => c['globalDefault'] === true).sort((x, y) => Number(y['value']) - Number(x['value']))[0];
        if (def) {
          name = str(obj(def['metadata'])?.['name']) ?? '';
          value = Number(def['value']);
          policy = def['preemptionPolicy'] ?? 'PreemptLowerPriority';
          spec['priorityClassName'] = name;
        }
      } else {
        const pc = cache.get(`priorityclasses.scheduling.k8s.io//${name}`)?.object as O | undefined;
        if (!pc) throw apiErrors.forbiddenWhy(a.resource, a.name, `no PriorityClass with name ${name} was found`);
        value = Number(pc['value']);
        policy = pc['preemptionPolicy'] ?? 'PreemptLowerPriority';
      }
      if (typeof spec['priority'] === 'number' && spec['priority'] !== value) {
        throw apiErrors.forbiddenWhy(a.resource, a.name, `the integer value of priority (${spec['priority']}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`);
      }
      spec['priority'] = value;
      if (spec['preemptionPolicy'] !== undefined && spec['preemptionPolicy'] !== null && spec['preemptionPolicy'] !== policy) {
        throw apiErrors.forbiddenWhy(a.resource, a.name, `the string value of PreemptionPolicy (${String(spec['preemptionPolicy'])}) must not be provided in pod spec; priority admission controller computed ${String(policy)} from the given PriorityClass name`);
      }
      spec['preemptionPolicy'] = policy;
    },
    validate(a, o) {
      if (!o || a.operation === 'DELETE' || a.resource.resource !== 'priorityclasses' || a.resource.group !== 'scheduling.k8s.io') return;
      if (o['globalDefault'] !== true) return;
      const other = classes().find((c) => c['globalDefault'] === true && obj(c['metadata'])?.['name'] !== a.name);
      if (other) throw apiErrors.forbiddenWhy(a.resource, a.name, `PriorityClass ${String(obj(other['metadata'])?.['name'])} is already marked as default. Only one default can exist`);
    },
  };
}
