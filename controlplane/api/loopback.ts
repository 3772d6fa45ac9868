/**
 * controlplane/api/loopback: the REST verbs as one user, for the components that run inside the control plane (the
 * scheduler, each controller of the controller manager). Upstream's components are clients of kube-apiserver over
 * its loopback address, each with its own credentials; here the calls stay in the process, but each goes through the
 * same steps as a client's request after authentication: the authorizer chain (RBAC, with the component's
 * bootstrap role), the admission chain (as that user), the kind's validation, the write; then one request line in the
 * log with the user, and the request in apiserver_request_total and its duration histogram.
 *
 * Reads a component makes from the watch cache (its informers) are not requests, as upstream's are not.
 */
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { User } from '../auth/authz.js';
import type { Authorizer } from '../auth/rbac.js';
import type { Stored } from '../store/types.js';
import { apiErrors, statusOf } from './errors.js';
import type { ApiMetrics } from './metrics.js';
import { grOf, type Resource } from './resources.js';
import type { DeleteOptions, ListQuery, PatchType, Rest, RestClient, Sub, WriteOptions, WriteResult } from './rest.js';

type O = Record<string, unknown>;

export interface LoopbackOptions {
  readonly rest: Rest;
  readonly user: User;
  readonly authorizer: Authorizer;
  readonly log: Logger;
  readonly metrics?: ApiMetrics | undefined;
}

/** What upstream's metrics call a write's HTTP verb. */
const METHOD: Record<string, string> = { create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE', get: 'GET', list: 'LIST' };

export class LoopbackRest implements RestClient {
  constructor(private readonly o: LoopbackOptions) {}

  get clock() {
    return this.o.rest.clock;
  }

  key(r: Resource, namespace: string, name: string): string {
    return this.o.rest.key(r, namespace, name);
  }

  /** Authorizes, runs, logs and counts one call. */
  private async call<T>(verb: string, r: Resource, namespace: string, name: string, sub: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let code = 200;
    try {
      const d = this.o.authorizer.authorize({ user: this.o.user, verb, resourceRequest: true, apiGroup: r.group, resource: r.resource, subresource: sub, namespace: r.namespaced ? namespace : '', name });
      if (d.decision !== 'allow') throw apiErrors.forbidden(this.o.user.name, verb, r, r.namespaced ? namespace : '', name || undefined, sub || undefined, d.reason);
      const out = await run();
      code = verb === 'create' ? 201 : 200;
      return out;
    } catch (e) {
      code = statusOf(e).code;
      throw e;
    } finally {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      const scope = r.namespaced ? (name ? 'resource' : 'namespace') : name ? 'resource' : 'cluster';
      this.o.metrics?.observe({ verb: METHOD[verb] ?? verb.toUpperCase(), group: r.group, version: r.version, resource: r.resource, subresource: sub, scope, code, durationMs });
      this.o.log.info({ [F.verb]: verb, [F.resource]: grOf(r), [F.namespace]: namespace, [F.name]: name, [F.user]: this.o.user.name, [F.code]: code, [F.durationMs]: durationMs }, 'request');
    }
  }

  private as<T extends object>(opts: T): T & { user: User } {
    return { ...opts, user: this.o.user };
  }

  /** A create names no object to the authorizer, as upstream's (resourceNames cannot limit a create). */
  create(r: Resource, namespace: string, body: unknown, opts: WriteOptions = {}, operation: 'Update' | 'Apply' = 'Update'): Promise<WriteResult> {
    return this.call('create', r, namespace, '', '', () => this.o.rest.create(r, namespace, body, this.as(opts), operation));
  }

  update(r: Resource, namespace: string, name: string, body: unknown, opts: WriteOptions & { sub?: 'status' | undefined } = {}): Promise<WriteResult> {
    return this.call('update', r, namespace, name, opts.sub ?? '', () => this.o.rest.update(r, namespace, name, body, this.as(opts)));
  }

  patch(r: Resource, namespace: string, name: string, type: PatchType, patch: unknown, opts: WriteOptions & { sub?: 'status' | 'scale' | undefined; force?: boolean } = {}): Promise<WriteResult> {
    return this.call('patch', r, namespace, name, opts.sub ?? '', () => this.o.rest.patch(r, namespace, name, type, patch, this.as(opts)));
  }

  delete(r: Resource, namespace: string, name: string, opts: DeleteOptions = {}) {
    return this.call('delete', r, namespace, name, '', () => this.o.rest.delete(r, namespace, name, this.as(opts)));
  }

  get(r: Resource, namespace: string, name: string): Promise<Stored> {
    return this.call('get', r, namespace, name, '', () => this.o.rest.get(r, namespace, name));
  }

  list(r: Resource, namespace: string | undefined, q: ListQuery) {
    return this.call('list', r, namespace ?? '', '', '', () => this.o.rest.list(r, namespace, q));
  }

  /** The kinds' own verbs (registry/): a binding is a create of pods/binding, finalize and scale updates. */
  readModifyWrite(r: Resource, namespace: string, name: string, next: (cur: Stored) => O, expect: number | undefined, opts: WriteOptions & { sub?: Sub | undefined; operation?: 'Update' | 'Apply' }, warnings: string[]): Promise<WriteResult> {
    const verb = opts.sub === 'binding' ? 'create' : 'update';
    return this.call(verb, r, namespace, name, opts.sub ?? '', () => this.o.rest.readModifyWrite(r, namespace, name, next, expect, this.as(opts), warnings));
  }
}
