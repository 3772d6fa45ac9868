/**
 * netfilter/ipset.fake: a validating in-memory ipset, for unit tests. Like
 * `ipset restore -exist`: creating an existing set of the same type is fine,
 * of another type an error; an add or del of an entry that does not fit the
 * set's type is an error; adding to, flushing or destroying a set that does
 * not exist is an error; destroying a set an iptables rule references
 * (`inUse`) is "Set cannot be destroyed: it is in use by a kernel component".
 * A batch that fails is not applied at all (restore parses and commits line
 * by line in the tool, but nodenet never depends on a half batch: it lists
 * again after any failure).
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Ipset } from './ipset.js';
import { canonicalEntry, renderIpsetRestore, type IpsetOp, type IpsetState, type IpsetType } from './ipset-parse.js';

export class FakeIpset implements Ipset {
  private sets = new Map<string, { name: string; type: IpsetType; entries: Set<string> }>();
  /** Names an iptables rule references: destroy refuses them. */
  inUse: (name: string) => boolean = () => false;
  applyCalls = 0;
  /** The batches as `ipset restore` text. */
  readonly batches: string[] = [];

  async list(keep: (name: string) => boolean): Promise<Map<string, IpsetState>> {
    const out = new Map<string, IpsetState>();
    for (const [n, s] of this.sets) if (keep(n)) out.set(n, { name: n, type: s.type, entries: new Set(s.entries) });
    return out;
  }

  async apply(ops: readonly IpsetOp[]): Promise<void> {
    if (ops.length === 0) return;
    this.applyCalls++;
    const text = renderIpsetRestore(ops); // validates the names
    const next = new Map([...this.sets].map(([k, v]) => [k, { ...v, entries: new Set(v.entries) }]));
    ops.forEach((o, i) => {
      const fail = (msg: string): never => {
        throw new NodenetError(ErrorCode.RuleApply, `ipset restore failed: Error in line ${i + 1}: ${msg}`);
      };
      const s = next.get(o.name);
      switch (o.op) {
        case 'create':
          if (s && s.type !== o.type) fail(`Set cannot be created: set with the same name already exists (type ${s.type})`);
          if (!s) next.set(o.name, { name: o.name, type: o.type, entries: new Set() });
          return;
        case 'add':
        case 'del': {
          if (!s) return fail(`The set with the given name does not exist: ${o.name}`);
          let e: string;
          try {
            e = canonicalEntry(s.type, o.entry);
          } catch {
            return fail(`Syntax error: ${o.entry} is not a ${s.type} element`);
          }
          if (o.op === 'add') s.entries.add(e);
          else s.entries.delete(e);
          return;
        }
        case 'flush':
          if (!s) return fail(`The set with the given name does not exist: ${o.name}`);
          s.entries.clear();
          return;
        case 'destroy':
          if (!s) return fail(`The set with the given name does not exist: ${o.name}`);
          if (this.inUse(o.name)) fail('Set cannot be destroyed: it is in use by a kernel component');
          next.delete(o.name);
          return;
      }
    });
    this.sets = next;
    this.batches.push(text);
  }

  /** Test helper: the members of one set, sorted; null when the set does not exist. */
  members(name: string): string[] | null {
    const s = this.sets.get(name);
    return s ? [...s.entries].sort() : null;
  }

  names(): string[] {
    return [...this.sets.keys()].sort();
  }
}
