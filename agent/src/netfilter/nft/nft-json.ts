/**
 * netfilter/nft-json: parses `nft -j list table` output (libnftables JSON
 * schema 1, as nft 1.0.6 prints it) into an NftTableInfo: chains with their
 * base-chain facts and rule counts, sets and maps with their elements.
 *
 * Rules stay uncounted expressions here; the tracer reads rules from the text
 * listing (nft-listing.ts) instead. Parsed from unknown: anything not of the
 * expected shape is an error naming where it was.
 */
import type { NftBaseChain, NftElementState, NftFamily, NftSetState } from './nft-state.js';

export interface NftChainInfo {
  readonly name: string;
  readonly base: NftBaseChain | null;
  readonly ruleCount: number;
}

export interface NftTableInfo {
  readonly family: NftFamily;
  readonly name: string;
  readonly chains: ReadonlyMap<string, NftChainInfo>;
  readonly sets: ReadonlyMap<string, NftSetState>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(o: Obj, k: string, where: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new TypeError(`${where}.${k}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}

/** One key part: "10.0.0.1", "tcp", 80. */
function keyPart(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  throw new TypeError(`${where}: unsupported key part ${JSON.stringify(v)}`);
}

function keyOf(v: unknown, where: string): { key: string; comment: string | null } {
  if (isObj(v) && isObj(v['elem'])) {
    const e = v['elem'];
    const inner = keyOf(e['val'], where);
    const c = e['comment'];
    return { key: inner.key, comment: typeof c === 'string' ? c : null };
  }
  if (isObj(v) && Array.isArray(v['concat'])) {
    return { key: v['concat'].map((p, i) => keyPart(p, `${where}.concat[${i}]`)).join(' . '), comment: null };
  }
  return { key: keyPart(v, where), comment: null };
}

function verdictOf(v: unknown, where: string): string {
  if (!isObj(v)) throw new TypeError(`${where}: expected a verdict object, got ${JSON.stringify(v)}`);
  for (const k of ['goto', 'jump']) {
    const t = v[k];
    if (isObj(t)) return `${k} ${str(t, 'target', `${where}.${k}`)}`;
  }
  for (const k of ['accept', 'drop', 'return', 'continue']) if (k in v) return k;
  throw new TypeError(`${where}: unsupported verdict ${JSON.stringify(v)}`);
}

function parseSet(o: Obj, kind: 'set' | 'map', where: string): NftSetState {
  const name = str(o, 'name', where);
  const type = o['type'];
  const keyTypes = Array.isArray(type) ? type.map((t, i) => keyPart(t, `${where}.type[${i}]`)) : [keyPart(type, `${where}.type`)];
  const dataType = kind === 'map' ? str(o, 'map', where) : null;
  const flags = Array.isArray(o['flags']) ? o['flags'].map((f, i) => keyPart(f, `${where}.flags[${i}]`)) : [];
  const timeout = typeof o['timeout'] === 'number' ? o['timeout'] : null;
  const comment = typeof o['comment'] === 'string' ? o['comment'] : null;
  const elements = new Map<string, NftElementState>();
  const elem = o['elem'];
  if (elem !== undefined) {
    if (!Array.isArray(elem)) throw new TypeError(`${where}.elem: expected an array`);
    elem.forEach((e, i) => {
      const w = `${where}.elem[${i}]`;
      if (kind === 'map') {
        if (!Array.isArray(e) || e.length !== 2) throw new TypeError(`${w}: expected [key, value]`);
        const k = keyOf(e[0], w);
        elements.set(k.key, { value: verdictOf(e[1], w), comment: k.comment });
      } else {
        const k = keyOf(e, w);
        elements.set(k.key, { value: null, comment: k.comment });
      }
    });
  }
  return { name, kind, keyTypes, dataType, flags, timeout, comment, elements };
}

/** Parses the JSON text of `nft -j list table FAMILY NAME`. */
export function parseNftJsonTable(json: string, family: NftFamily, table: string): NftTableInfo {
  const doc: unknown = JSON.parse(json);
  if (!isObj(doc) || !Array.isArray(doc['nftables'])) throw new TypeError('nft -j: expected {"nftables": [...]}');
  const chains = new Map<string, { name: string; base: NftBaseChain | null; ruleCount: number }>();
  const sets = new Map<string, NftSetState>();
  doc['nftables'].forEach((item, i) => {
    const where = `nftables[${i}]`;
    if (!isObj(item)) throw new TypeError(`${where}: expected an object`);
    const c = item['chain'];
    if (isObj(c)) {
      if (c['table'] !== table || c['family'] !== family) return;
      const name = str(c, 'name', `${where}.chain`);
      const base: NftBaseChain | null =
        typeof c['hook'] === 'string' && typeof c['type'] === 'string' && typeof c['prio'] === 'number'
          ? { type: c['type'], hook: c['hook'], priority: c['prio'] }
          : null;
      chains.set(name, { name, base, ruleCount: chains.get(name)?.ruleCount ?? 0 });
      return;
    }
    const r = item['rule'];
    if (isObj(r)) {
      if (r['table'] !== table || r['family'] !== family) return;
      const chain = str(r, 'chain', `${where}.rule`);
      const prev = chains.get(chain);
      if (!prev) throw new TypeError(`${where}: rule of unknown chain ${chain}`);
      prev.ruleCount++;
      return;
    }
    for (const kind of ['set', 'map'] as const) {
      const s = item[kind];
      if (isObj(s) && s['table'] === table && s['family'] === family) {
        const parsed = parseSet(s, kind, `${where}.${kind}`);
        sets.set(parsed.name, parsed);
      }
    }
  });
  return { family, name: table, chains, sets };
}

/** Table names of one family from `nft -j list tables`. */
export function parseNftJsonTables(json: string): { family: string; name: string }[] {
  const doc: unknown = JSON.parse(json);
  if (!isObj(doc) || !Array.isArray(doc['nftables'])) throw new TypeError('nft -j: expected {"nftables": [...]}');
  const out: { family: string; name: string }[] = [];
  for (const item of doc['nftables']) {
    if (isObj(item) && isObj(item['table'])) {
      const t = item['table'];
      if (typeof t['family'] === 'string' && typeof t['name'] === 'string') out.push({ family: t['family'], name: t['name'] });
    }
  }
  return out;
}

/** Names of a table's chains and sets (`nft -j list chains` + `nft -t -j list sets`): cheap, no rules, no elements. */
export interface NftNames {
  readonly chains: readonly string[];
  readonly sets: readonly { readonly name: string; readonly flags: readonly string[]; readonly timeout: number | null }[];
}

/** Parses `nft -j list chains FAMILY` and `nft -t -j list sets FAMILY` output, keeping one table's objects. */
export function parseNftJsonNames(chainsJson: string, setsJson: string, family: NftFamily, table: string): NftNames {
  const items = (json: string, what: string): unknown[] => {
    const doc: unknown = JSON.parse(json);
    if (!isObj(doc) || !Array.isArray(doc['nftables'])) throw new TypeError(`nft -j list ${what}: expected {"nftables": [...]}`);
    return doc['nftables'];
  };
  const chains: string[] = [];
  items(chainsJson, 'chains').forEach((item, i) => {
    if (isObj(item) && isObj(item['chain']) && item['chain']['table'] === table && item['chain']['family'] === family) {
      chains.push(str(item['chain'], 'name', `nftables[${i}].chain`));
    }
  });
  const sets: { name: string; flags: string[]; timeout: number | null }[] = [];
  items(setsJson, 'sets').forEach((item, i) => {
    if (isObj(item) && isObj(item['set']) && item['set']['table'] === table && item['set']['family'] === family) {
      const s = item['set'];
      const flags = Array.isArray(s['flags']) ? s['flags'].map((f, j) => keyPart(f, `nftables[${i}].set.flags[${j}]`)) : [];
      sets.push({ name: str(s, 'name', `nftables[${i}].set`), flags, timeout: typeof s['timeout'] === 'number' ? s['timeout'] : null });
    }
  });
  return { chains, sets };
}
