/**
 * controlplane/controllers/clusterrole-aggregation: kube-controller-manager's ClusterRole aggregation controller
 * (pkg/controller/clusterroleaggregation). A ClusterRole with an `aggregationRule` gets, as its rules, the rules of
 * every other ClusterRole whose labels match one of its `clusterRoleSelectors`, taken in the order of their names,
 * each rule once. This is how `admin`, `edit` and `view` grow when a ClusterRole labelled
 * `rbac.authorization.k8s.io/aggregate-to-view: "true"` appears (a CRD's roles, a user's own).
 *
 * Watch → compare → act: any ClusterRole change queues every aggregated ClusterRole (there are few); each is
 * rewritten only when its computed rules differ from what it holds. A selector that does not parse aggregates
 * nothing from it, and is logged; the role keeps what it has.
 */
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { isNodenetError, ErrorCode } from '../../lib/errors/errors.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { labelSelectorRequirements, matchesLabels, type LabelRequirement } from '../api/selectors.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, Stored } from '../store/types.js';
import { RBAC_GR } from '../auth/policy-source.js';
import { WorkQueue } from './work-queue.js';
import { arr, obj, str } from '../../lib/json/loose.js';

const CLUSTER_ROLES = RESOURCES.find((r) => r.resource === 'clusterroles')!;
const FIELD_MANAGER = 'clusterrole-aggregation-controller';

export interface AggregationOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly retryMs?: number;
}

type Selector = { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };

/** The rules an aggregated ClusterRole should hold, from the ClusterRoles there are (pure). */
export function aggregatedRules(role: Readonly<KObject>, all: readonly Readonly<KObject>[], onBadSelector: (why: string) => void = () => {}): unknown[] {
  const name = str(role.metadata?.['name']);
  const selectors: LabelRequirement[][] = [];
  for (const s of arr(obj(role['aggregationRule'])?.['clusterRoleSelectors'])) {
    try {
      selectors.push(labelSelectorRequirements((obj(s) ?? {}) as Selector));
    } catch (e) {
      onBadSelector(e instanceof Error ? e.message : String(e));
    }
  }
  const out: unknown[] = [];
  const sorted = [...all].sort((a, b) => (str(a.metadata?.['name']) < str(b.metadata?.['name']) ? -1 : 1));
  for (const other of sorted) {
    if (str(other.metadata?.['name']) === name) continue;
    const labels = (obj(other.metadata?.['labels']) ?? {}) as Record<string, string>;
    if (!selectors.some((reqs) => matchesLabels(reqs, labels))) continue;
    for (const rule of arr(other['rules'])) if (!out.some((r) => deepEqual(r, rule))) out.push(rule);
  }
  return out;
}

export class ClusterRoleAggregationController {
  private watch: { stop(): void } | null = null;
  private readonly work: WorkQueue;

  constructor(private readonly o: AggregationOptions) {
    this.work = new WorkQueue({ name: 'clusterrole aggregation', clock: o.clock, log: o.log, process: (key) => this.process(key), retryMs: o.retryMs ?? 1000 });
  }

  start(): void {
    const l = this.o.cache.list(RBAC_GR.clusterRoles);
    this.queueAggregated(l.items);
    this.watch = this.o.cache.watch({ gr: RBAC_GR.clusterRoles, afterRev: l.rev, onEvent: () => this.queueAggregated(this.o.cache.list(RBAC_GR.clusterRoles).items) });
  }

  stop(): void {
    this.watch?.stop();
    this.watch = null;
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private queueAggregated(items: readonly Stored[]): void {
    for (const s of items) if (obj(s.object['aggregationRule'])) this.work.add(str(s.object.metadata?.['name']));
  }

  private async process(name: string): Promise<void> {
    const cur = this.o.cache.get(`${RBAC_GR.clusterRoles}//${name}`);
    if (!cur || !obj(cur.object['aggregationRule'])) return;
    const all = this.o.cache.list(RBAC_GR.clusterRoles).items.map((s) => s.object);
    const rules = aggregatedRules(cur.object, all, (why) => this.o.log.warn({ [F.name]: name, [F.err]: why }, 'a clusterRoleSelector does not parse: it aggregates nothing'));
    if (deepEqual(rules, arr(cur.object['rules']))) return;
    try {
      await this.o.rest.patch(CLUSTER_ROLES, '', name, 'merge', { metadata: { resourceVersion: cur.object.metadata?.['resourceVersion'] }, rules }, { fieldManager: FIELD_MANAGER });
      this.o.log.info({ [F.name]: name, rules: rules.length }, 'aggregated ClusterRole updated');
    } catch (e) {
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      throw e; // a conflict: the work queue retries on the newer version
    }
  }
}
