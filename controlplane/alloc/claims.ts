/**
 * controlplane/alloc/claims: values a controller hands out (a Node's pod
 * CIDR, a LoadBalancer Service's address), each held by a stored object
 * keyed by the value. Its create-if-absent is the lock: two controllers
 * (two replicas during a leader change, or a restart that overlaps the
 * old process) can never both hold one value. The object names its owner.
 *
 *   <group-resource>//<value>   kind Allocation (nodenet.io/v1),
 *                               spec.owner {resource, namespace, name}
 *
 * A value's `/` (a CIDR's) is written `_` in the key, whose parts are split
 * on `/`. Reads are the watch cache's; writes go to the storage. The owner
 * writes the object before it writes the value into its API object, and
 * deletes it once the value is no longer used (the controllers' repair at
 * start deletes what no object uses).
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { Storage } from '../store/storage.js';
import type { KObject, Stored } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';

export interface Owner {
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
}

export const ownerKey = (o: Owner): string => `${o.resource}/${o.namespace}/${o.name}`;

export class Claims {
  constructor(
    private readonly storage: Storage,
    private readonly cache: WatchCache,
    /** The group-resource of the objects: `podcidrs.nodenet.io`, `loadbalancerips.nodenet.io`. */
    readonly gr: string,
  ) {}

  /** The owner holding value (`<resource>/<namespace>/<name>`), by the cache. */
  holder(value: string): string | undefined {
    const s = this.cache.get(this.key(value));
    return s ? ownerOf(s) : undefined;
  }

  /** Every held value and its owner, by the cache. */
  all(): Map<string, string> {
    const out = new Map<string, string>();
    for (const s of this.cache.list(this.gr).items) {
      const o = ownerOf(s);
      if (o) out.set(String(s.object.metadata?.['name'] ?? '').replaceAll('_', '/'), o);
    }
    return out;
  }

  /**
   * Takes value for owner. True when owner holds it now (also when it did already); false when another does (the
   * storage says so, even when this process's cache has not heard of it yet).
   */
  async claim(value: string, owner: Owner): Promise<boolean> {
    const key = this.key(value);
    const mine = ownerKey(owner);
    const held = this.cache.get(key);
    if (held) return ownerOf(held) === mine;
    try {
      await this.storage.create(key, { apiVersion: 'nodenet.io/v1', kind: 'Allocation', metadata: { name: value.replaceAll('/', '_') }, spec: { owner: { ...owner } } });
      return true;
    } catch (e) {
      if (!(e instanceof NodenetError) || e.code !== ErrorCode.AlreadyExists) throw e;
      const now = await this.storage.get(key);
      return now !== undefined && ownerOf(now) === mine;
    }
  }

  /** Gives value back if owner holds it (a compare-and-swap on the version read: never another's). */
  async release(value: string, owner: Owner): Promise<void> {
    const key = this.key(value);
    const held = this.cache.get(key) ?? (await this.storage.get(key));
    if (!held || ownerOf(held) !== ownerKey(owner)) return;
    await this.storage.delete(key, held.rev).catch((e: unknown) => {
      // Gone already, or changed hands meanwhile: not ours to delete.
      if (!(e instanceof NodenetError) || (e.code !== ErrorCode.NotFound && e.code !== ErrorCode.Conflict)) throw e;
    });
  }

  private key(value: string): string {
    return `${this.gr}//${value.replaceAll('/', '_')}`;
  }
}

function ownerOf(s: Stored | { object: Readonly<KObject> }): string | undefined {
  const o = (s.object['spec'] as { owner?: Partial<Owner> } | undefined)?.owner;
  if (!o || typeof o.resource !== 'string' || typeof o.name !== 'string') return undefined;
  return `${o.resource}/${o.namespace ?? ''}/${o.name}`;
}
