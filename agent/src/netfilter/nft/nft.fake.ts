/**
 * netfilter/nft.fake: a validating, in-memory `Nft`.
 *
 * It parses scripts with nodenet's narrow nft grammar (nft-script.ts), applies
 * them to a copy of its state and commits only if every command succeeded, as
 * the kernel does with one `nft -f` batch. It rejects what the kernel rejected
 * when we tried (see the checks below): a jump/goto to a chain that does not
 * exist or is a base chain, an element added to a missing set or map, an
 * element whose key does not fit the type or whose verdict names a missing
 * chain, a changed value for an existing key, deleting a missing element,
 * deleting a chain or set still referenced, re-adding a base chain with other
 * hook facts, and dnat/masquerade/reject reachable from a hook where they are
 * not allowed. Errors look like nft's (`/dev/stdin:LINE:1: Error: ...`) and
 * become the same NodenetError the real executor raises.
 */
import { nftApplyError, type Nft, type NftNames, type NftTableInfo } from './nft.js';
import { parseNftScript, parseVerdict, checkKeyPart, NftScriptError, type NftOp, type ParsedRule, parseRule } from './nft-script.js';
import { cloneTable, emptyTable, tableKey, type NftFamily, type NftTableState, type NftChainState } from './nft-state.js';
import { renderListing } from './nft-listing.js';
import { elementKey, NftSetsError, type NftElementOp, type NftSets } from './nft-sets.js';

interface FakeTable {
  state: NftTableState;
  /** Parsed form of every rule, parallel to state.chains[x].rules. */
  parsed: Map<string, ParsedRule[]>;
  /** Line (in the current script) that added each rule, 0 when older. */
  lines: Map<string, number[]>;
}

class OpError extends Error {
  constructor(readonly line: number, msg: string) {
    super(msg);
  }
}

const ENOENT = 'Could not process rule: No such file or directory';
const EBUSY = 'Could not process rule: Device or resource busy';
const EEXIST = 'Could not process rule: File exists';
const EOPNOTSUPP = 'Could not process rule: Operation not supported';

export class NftFake implements Nft, NftSets {
  private tables = new Map<string, FakeTable>();
  /** Every script applied successfully, in order. */
  readonly applied: string[] = [];
  /** Every script that failed, in order. */
  readonly failed: string[] = [];
  /** Number of calls per method, for tests that check what a caller asked. */
  readonly calls: Record<'apply' | 'listTable' | 'listNames' | 'listTableText' | 'deleteTable' | 'tableExists' | 'objectExists', number> = {
    apply: 0,
    listTable: 0,
    listNames: 0,
    listTableText: 0,
    deleteTable: 0,
    tableExists: 0,
    objectExists: 0,
  };

  /** The current state of a table (a copy), or null. */
  table(family: NftFamily, name: string): NftTableState | null {
    const t = this.tables.get(tableKey(family, name));
    return t ? cloneTable(t.state) : null;
  }

  async apply(script: string): Promise<void> {
    this.calls.apply++;
    try {
      this.applySync(script);
      this.applied.push(script);
    } catch (e) {
      this.failed.push(script);
      if (e instanceof NftScriptError || e instanceof OpError) {
        throw nftApplyError(script, `/dev/stdin:${e.line}:1: Error: ${e.message}\n`, 1);
      }
      throw e;
    }
  }

  /** Element ops applied over "netlink" (NftSets), in order. */
  readonly elementOps: NftElementOp[][] = [];

  /**
   * NftSets: the same state the scripts change, as the kernel keeps one
   * ruleset whichever way it is written. One transaction; the kernel's
   * answers: ENOENT for a missing table, set or (on delete) element, EINVAL
   * for a key that does not fit the set or an interval flag the set lacks.
   */
  async applyElements(ops: readonly NftElementOp[]): Promise<void> {
    if (ops.length === 0) return;
    const script: string[] = [];
    for (const op of ops) {
      const t = this.tables.get(tableKey(op.family, op.table));
      const set = t?.state.sets.get(op.set);
      if (!t || !set) throw new NftSetsError('ENOENT', `nft ${op.op} element ${op.family} ${op.table} ${op.set}: ENOENT`);
      if (op.interval !== set.flags.includes('interval')) throw new NftSetsError('EINVAL', `nft ${op.op} element ${op.family} ${op.table} ${op.set}: EINVAL (interval ${op.interval}, set flags ${set.flags.join(',')})`);
      for (const e of op.elements) elementKey(e, op.interval); // what the codec refuses never reaches the kernel
      script.push(`${op.op} element ${op.family} ${op.table} ${op.set} { ${op.elements.join(', ')} }`);
    }
    try {
      this.applySync(script.join('\n'));
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new NftSetsError(/No such file/.test(msg) ? 'ENOENT' : /File exists/.test(msg) ? 'EEXIST' : 'EINVAL', `nft element ops: ${msg}`, { cause: e });
    }
    this.elementOps.push([...ops]);
  }

  close(): void {}

  /** Removes a table behind the caller's back, as `nft delete table` from a shell would. */
  externalDeleteTable(family: NftFamily, name: string): void {
    this.tables.delete(tableKey(family, name));
  }

  async listTable(family: NftFamily, name: string): Promise<NftTableInfo | null> {
    this.calls.listTable++;
    const t = this.tables.get(tableKey(family, name));
    if (!t) return null;
    const s = cloneTable(t.state);
    return {
      family,
      name,
      chains: new Map([...s.chains].map(([k, c]) => [k, { name: c.name, base: c.base, ruleCount: c.rules.length }])),
      sets: s.sets,
    };
  }

  async listNames(family: NftFamily, name: string): Promise<NftNames | null> {
    this.calls.listNames++;
    const t = this.tables.get(tableKey(family, name));
    if (!t) return null;
    return {
      chains: [...t.state.chains.keys()],
      sets: [...t.state.sets.values()].filter((s) => s.kind === 'set').map((s) => ({ name: s.name, flags: [...s.flags], timeout: s.timeout })),
    };
  }

  /** As the executor's: one listing (counted once) of several tables. */
  async listNamesMany(family: NftFamily, names: readonly string[]): Promise<Map<string, NftNames | null>> {
    const out = new Map<string, NftNames | null>();
    for (const n of names) out.set(n, await this.listNames(family, n));
    this.calls.listNames -= names.length - 1;
    return out;
  }

  async listTableText(family: NftFamily, name: string): Promise<string | null> {
    this.calls.listTableText++;
    const t = this.tables.get(tableKey(family, name));
    return t ? renderListing(t.state) : null;
  }

  async deleteTable(family: NftFamily, name: string): Promise<void> {
    this.calls.deleteTable++;
    this.tables.delete(tableKey(family, name));
  }

  async objectExists(family: NftFamily, table: string, kind: 'chain' | 'map' | 'set', name: string): Promise<boolean> {
    this.calls.objectExists++;
    const st = this.tables.get(tableKey(family, table))?.state;
    if (!st) return false;
    if (kind === 'chain') return st.chains.has(name);
    const set = st.sets.get(name);
    return set?.kind === kind;
  }

  async tableExists(family: NftFamily, name: string): Promise<boolean> {
    this.calls.tableExists++;
    return this.tables.has(tableKey(family, name));
  }

  private applySync(script: string): void {
    const ops = parseNftScript(script);
    // Work on copies; commit at the end (one batch, all or nothing).
    const work = new Map<string, FakeTable | null>();
    const get = (family: NftFamily, name: string): FakeTable | null => {
      const k = tableKey(family, name);
      if (work.has(k)) return work.get(k)!;
      const cur = this.tables.get(k);
      const copy = cur ? copyFake(cur) : null;
      work.set(k, copy);
      return copy;
    };
    for (const op of ops) {
      const k = tableKey(op.family, op.table);
      if (op.obj === 'table') {
        if (op.verb === 'add') {
          const t = get(op.family, op.table) ?? { state: emptyTable(op.family, op.table), parsed: new Map(), lines: new Map() };
          if (op.comment !== null) t.state.comment = op.comment;
          work.set(k, t);
        } else if (op.verb === 'delete') {
          if (!get(op.family, op.table)) throw new OpError(op.line, ENOENT);
          work.set(k, null);
        } else {
          const t = get(op.family, op.table);
          if (!t) throw new OpError(op.line, ENOENT);
          for (const c of t.state.chains.values()) {
            c.rules = [];
            t.parsed.set(c.name, []);
            t.lines.set(c.name, []);
          }
        }
        continue;
      }
      const t = get(op.family, op.table);
      if (!t) throw new OpError(op.line, `${ENOENT} (no table ${op.family} ${op.table})`);
      applyOp(t, op);
    }
    // Kernel checks hook constraints as chains become reachable; we check at commit and blame the last line when the offending rule is older.
    const lastLine = ops.length ? ops[ops.length - 1]!.line : 1;
    for (const t of work.values()) if (t) validateHooks(t, lastLine);
    for (const [k, t] of work) {
      if (t) {
        for (const l of t.lines.values()) l.fill(0);
        this.tables.set(k, t);
      } else this.tables.delete(k);
    }
  }
}

function copyFake(t: FakeTable): FakeTable {
  return {
    state: cloneTable(t.state),
    parsed: new Map([...t.parsed].map(([k, v]) => [k, [...v]])),
    lines: new Map([...t.lines].map(([k, v]) => [k, [...v]])),
  };
}

/** Who refers to chain `name`: rules (by chain) and map elements (by map). */
function chainReferrers(t: FakeTable, name: string): string[] {
  const out: string[] = [];
  for (const [chain, rules] of t.parsed) if (chain !== name && rules.some((r) => r.chainRefs.includes(name))) out.push(`chain ${chain}`);
  for (const s of t.state.sets.values()) {
    for (const [key, e] of s.elements) if (e.value === `goto ${name}` || e.value === `jump ${name}`) out.push(`${s.kind} ${s.name} element ${key}`);
  }
  return out;
}

function applyOp(t: FakeTable, op: Exclude<NftOp, { obj: 'table' }>): void {
  const st = t.state;
  switch (op.obj) {
    case 'chain': {
      const cur = st.chains.get(op.name);
      if (op.verb === 'add') {
        if (cur) {
          const same =
            (cur.base === null && op.base === null) ||
            (cur.base !== null && op.base !== null && cur.base.type === op.base.type && cur.base.hook === op.base.hook && cur.base.priority === op.base.priority);
          // Re-adding a chain with the same facts is a no-op; other hook facts are refused.
          if (!same && op.base !== null) throw new OpError(op.line, `${EOPNOTSUPP} (chain ${op.name} exists with other hook facts)`);
          if (op.comment !== null) cur.comment = op.comment;
          return;
        }
        st.chains.set(op.name, { name: op.name, base: op.base, comment: op.comment, rules: [] });
        t.parsed.set(op.name, []);
        t.lines.set(op.name, []);
        return;
      }
      if (!cur) throw new OpError(op.line, `${ENOENT} (no chain ${op.name})`);
      if (op.verb === 'flush') {
        cur.rules = [];
        t.parsed.set(op.name, []);
        t.lines.set(op.name, []);
        return;
      }
      const refs = chainReferrers(t, op.name);
      if (refs.length) throw new OpError(op.line, `${EBUSY} (chain ${op.name} is referenced by ${refs.slice(0, 3).join(', ')})`);
      st.chains.delete(op.name);
      t.parsed.delete(op.name);
      t.lines.delete(op.name);
      return;
    }
    case 'rule': {
      const chain = st.chains.get(op.chain);
      if (!chain) throw new OpError(op.line, `${ENOENT} (no chain ${op.chain})`);
      for (const ref of op.parsed.chainRefs) {
        const target = st.chains.get(ref);
        if (!target) throw new OpError(op.line, `${ENOENT} (jump/goto to undeclared chain ${ref})`);
        if (target.base) throw new OpError(op.line, `${EOPNOTSUPP} (jump/goto to base chain ${ref})`);
      }
      for (const ref of op.parsed.setRefs) {
        const s = st.sets.get(ref.name);
        if (!s) throw new OpError(op.line, `${ENOENT} (no set or map ${ref.name})`);
        const wantKind = ref.use === 'vmap' ? 'map' : 'set';
        if (s.kind !== wantKind) throw new OpError(op.line, `${EOPNOTSUPP} (${ref.name} is a ${s.kind}, the rule needs a ${wantKind})`);
        if (s.keyTypes.join(' . ') !== ref.keyTypes.join(' . ')) {
          throw new OpError(op.line, `datatype mismatch: ${ref.name} has key ${s.keyTypes.join(' . ')}, the expression is ${ref.keyTypes.join(' . ')}`);
        }
      }
      chain.rules.push(op.rule);
      t.parsed.get(op.chain)!.push(op.parsed);
      t.lines.get(op.chain)!.push(op.line);
      return;
    }
    case 'set':
    case 'map': {
      const cur = st.sets.get(op.name);
      if (op.verb === 'add') {
        if (cur) {
          if (cur.kind !== op.obj || cur.keyTypes.join('.') !== op.keyTypes.join('.') || cur.dataType !== op.dataType) {
            throw new OpError(op.line, `${EEXIST} (${op.name} exists with another type)`);
          }
          const flags = (f: readonly string[]) => [...f].sort().join(',');
          if (flags(cur.flags) !== flags(op.flags)) throw new OpError(op.line, `${EEXIST} (${op.name} exists with other flags)`);
          if (op.timeout !== null) cur.timeout = op.timeout;
          if (op.comment !== null) cur.comment = op.comment;
          return;
        }
        st.sets.set(op.name, {
          name: op.name,
          kind: op.obj,
          keyTypes: op.keyTypes,
          dataType: op.dataType,
          flags: [...op.flags],
          timeout: op.timeout,
          comment: op.comment,
          elements: new Map(),
        });
        return;
      }
      if (!cur || cur.kind !== op.obj) throw new OpError(op.line, `${ENOENT} (no ${op.obj} ${op.name})`);
      if (op.verb === 'flush') {
        cur.elements = new Map();
        return;
      }
      for (const [chain, rules] of t.parsed) {
        if (rules.some((r) => r.setRefs.some((s) => s.name === op.name))) {
          throw new OpError(op.line, `${EBUSY} (${op.obj} ${op.name} is used by a rule in chain ${chain})`);
        }
      }
      st.sets.delete(op.name);
      return;
    }
    case 'element': {
      const s = st.sets.get(op.name);
      if (!s) throw new OpError(op.line, `${ENOENT} (element for missing set or map ${op.name})`);
      for (const e of op.elements) {
        const parts = e.key.split(' . ');
        if (parts.length !== s.keyTypes.length || parts.some((p, i) => !checkKeyPart(s.keyTypes[i]!, p, s.flags.includes('interval')))) {
          throw new OpError(op.line, `datatype mismatch: element ${e.key} does not fit ${s.keyTypes.join(' . ')}`);
        }
        if (op.verb === 'delete') {
          if (!s.elements.has(e.key)) throw new OpError(op.line, `${ENOENT} (no element ${e.key} in ${op.name})`);
          s.elements.delete(e.key);
          continue;
        }
        if (s.kind === 'map') {
          if (e.value === null) throw new OpError(op.line, `map ${op.name} element ${e.key} needs a value`);
          const v = parseVerdict(op.line, e.value);
          if (v.chain !== null) {
            const target = st.chains.get(v.chain);
            if (!target) throw new OpError(op.line, `${ENOENT} (element ${e.key} names undeclared chain ${v.chain})`);
            if (target.base) throw new OpError(op.line, `${EOPNOTSUPP} (element ${e.key} names base chain ${v.chain})`);
          }
        } else if (e.value !== null) throw new OpError(op.line, `set ${op.name} element ${e.key} cannot have a value`);
        const prev = s.elements.get(e.key);
        if (prev && prev.value !== e.value) throw new OpError(op.line, `${EEXIST} (element ${e.key} of ${op.name} has value ${prev.value})`);
        s.elements.set(e.key, { value: e.value, comment: e.comment ?? prev?.comment ?? null });
      }
      return;
    }
  }
}

/**
 * Checks what the kernel checks when a chain becomes reachable from a hook:
 * dnat only under nat prerouting/output, masquerade only under nat
 * postrouting, reject not under postrouting.
 */
function validateHooks(t: FakeTable, lastLine: number): void {
  const st = t.state;
  const vmapTargets = (name: string): string[] => {
    const s = st.sets.get(name);
    if (!s || s.kind !== 'map') return [];
    const out: string[] = [];
    for (const e of s.elements.values()) {
      const m = /^(?:goto|jump) (\S+)$/.exec(e.value ?? '');
      if (m) out.push(m[1]!);
    }
    return out;
  };
  for (const base of st.chains.values()) {
    if (!base.base) continue;
    const { type, hook } = base.base;
    const seen = new Set<string>();
    const stack: NftChainState[] = [base];
    while (stack.length) {
      const c = stack.pop()!;
      if (seen.has(c.name)) continue;
      seen.add(c.name);
      const parsed = t.parsed.get(c.name) ?? c.rules.map((r) => parseRule(0, r));
      const lines = t.lines.get(c.name) ?? [];
      parsed.forEach((r, i) => {
        const where = `rule ${JSON.stringify(c.rules[i])} in chain ${c.name}, reachable from ${base.name}`;
        const line = lines[i] || lastLine;
        if (r.dnat && !(type === 'nat' && (hook === 'prerouting' || hook === 'output'))) throw new OpError(line, `${EOPNOTSUPP} (dnat in ${where})`);
        if (r.masquerade && !(type === 'nat' && hook === 'postrouting')) throw new OpError(line, `${EOPNOTSUPP} (masquerade in ${where})`);
        if (r.reject && hook === 'postrouting') throw new OpError(line, `${EOPNOTSUPP} (reject in ${where})`);
        for (const ref of r.chainRefs) {
          const n = st.chains.get(ref);
          if (n) stack.push(n);
        }
        for (const s of r.setRefs) {
          if (s.use !== 'vmap') continue;
          for (const target of vmapTargets(s.name)) {
            const n = st.chains.get(target);
            if (n) stack.push(n);
          }
        }
      });
    }
  }
}
