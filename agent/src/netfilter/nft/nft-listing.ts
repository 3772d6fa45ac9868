/**
 * netfilter/nft-listing: reads and writes the `nft list table` text format.
 *
 * parseNftListing turns what the kernel prints (nft 1.0.6) into
 * NftTableState, so the packet tracer can walk the rules the kernel really
 * holds. Rules are kept verbatim (the kernel's spelling, e.g.
 * `numgen random mod 2 0 goto x`, `meta mark set meta mark | 0x00004000`);
 * the tracer accepts both spellings of the pieces it understands. Element
 * lists are parsed into keys, values and comments; the per-element
 * `timeout`/`expires` of dynamic sets are dropped.
 *
 * renderListing writes the same format from a state (the fake's
 * listTableText), so both directions are tested against each other.
 * Pure: no I/O.
 */
import { splitOutsideQuotes } from './nft-script.js';
import { parsePriority, type NftElementState, type NftFamily, type NftSetState, type NftTableState } from './nft-state.js';

/** "3h", "1m40s", "10800s", "1d", "250ms" → seconds. */
export function parseNftDuration(s: string): number | null {
  const re = /(\d+)(ms|d|h|m|s)/g;
  let total = 0;
  let consumed = '';
  for (const m of s.matchAll(re)) {
    const n = Number(m[1]);
    total += m[2] === 'd' ? n * 86400 : m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : m[2] === 's' ? n : n / 1000;
    consumed += m[0];
  }
  return consumed === s && s !== '' ? total : null;
}

export function formatNftDuration(seconds: number): string {
  let s = seconds;
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const out = `${d ? `${d}d` : ''}${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
  return out || '0s';
}

export class NftListingError extends Error {
  override name = 'NftListingError';
  constructor(readonly line: number, msg: string) {
    super(`nft listing line ${line}: ${msg}`);
  }
}

function parseElementList(line: number, body: string): Map<string, NftElementState> {
  const out = new Map<string, NftElementState>();
  for (const raw of splitOutsideQuotes(body, ',')) {
    const e = raw.trim();
    if (e === '') continue;
    const sides = splitOutsideQuotes(e, ':');
    if (sides.length > 2) throw new NftListingError(line, `bad element ${e}`);
    let k = sides[0]!.trim();
    let comment: string | null = null;
    const cm = /^(.*?)\s+comment "([^"]*)"$/.exec(k);
    if (cm) {
      k = cm[1]!;
      comment = cm[2]!;
    }
    // Dynamic set elements carry their own timers; they are not part of the key.
    k = k.replace(/\s+timeout \S+/, '').replace(/\s+expires \S+/, '');
    const key = k
      .split(/\s+\.\s+/)
      .map((p) => p.trim())
      .join(' . ');
    out.set(key, { value: sides.length === 2 ? sides[1]!.trim() : null, comment });
  }
  return out;
}

const unquote = (s: string) => (s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1) : s);

/** Parses `nft list table` / `nft list ruleset` text into tables. */
export function parseNftListing(text: string): NftTableState[] {
  const lines = text.split('\n');
  const tables: NftTableState[] = [];
  let table: NftTableState | null = null;
  type SetDraft = { -readonly [K in keyof NftSetState]?: NftSetState[K] } & { name: string; kind: 'set' | 'map' };
  let block: { kind: 'chain'; name: string } | { kind: 'set' | 'map'; set: SetDraft } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const l = lines[i]!.trim();
    if (l === '') continue;
    if (!table) {
      const m = /^table (ip|ip6|inet) (\S+) \{$/.exec(l);
      if (!m) throw new NftListingError(n, `expected "table FAMILY NAME {", got ${l}`);
      table = { family: m[1] as NftFamily, name: m[2]!, comment: null, chains: new Map(), sets: new Map() };
      continue;
    }
    if (!block) {
      if (l === '}') {
        tables.push(table);
        table = null;
        continue;
      }
      const cm = /^comment "([^"]*)"$/.exec(l);
      if (cm) {
        table.comment = cm[1]!;
        continue;
      }
      const bm = /^(chain|set|map) (\S+) \{$/.exec(l);
      if (!bm) throw new NftListingError(n, `unexpected ${l}`);
      const name = unquote(bm[2]!);
      if (bm[1] === 'chain') {
        block = { kind: 'chain', name };
        table.chains.set(name, { name, base: null, comment: null, rules: [] });
      } else {
        block = { kind: bm[1] as 'set' | 'map', set: { name, kind: bm[1] as 'set' | 'map', flags: [], timeout: null, comment: null, elements: new Map() } };
      }
      continue;
    }
    if (l === '}') {
      if (block.kind !== 'chain') {
        const s = block.set;
        if (!s.keyTypes) throw new NftListingError(n, `${s.kind} ${s.name} has no type`);
        table.sets.set(s.name, {
          name: s.name,
          kind: s.kind,
          keyTypes: s.keyTypes,
          dataType: s.dataType ?? null,
          flags: s.flags ?? [],
          timeout: s.timeout ?? null,
          comment: s.comment ?? null,
          elements: s.elements ?? new Map(),
        });
      }
      block = null;
      continue;
    }
    if (block.kind === 'chain') {
      const chain = table.chains.get(block.name)!;
      const bm = /^type (\S+) hook (\S+)(?: device \S+)? priority ([^;]+);(?: policy (?:accept|drop);)?$/.exec(l);
      if (bm) {
        const prio = parsePriority(bm[3]!);
        if (prio === null) throw new NftListingError(n, `bad priority ${bm[3]}`);
        chain.base = { type: bm[1]!, hook: bm[2]!, priority: prio };
        continue;
      }
      const cm = /^comment "([^"]*)"$/.exec(l);
      if (cm) {
        chain.comment = cm[1]!;
        continue;
      }
      chain.rules.push(l);
      continue;
    }
    const s = block.set;
    const tm = /^type (.+)$/.exec(l);
    if (tm) {
      const [k, d] = tm[1]!.split(/\s+:\s+/);
      s.keyTypes = k!.split(/\s+\.\s+/).map((x) => x.trim());
      s.dataType = d?.trim() ?? null;
      continue;
    }
    const fm = /^flags (.+)$/.exec(l);
    if (fm) {
      s.flags = fm[1]!.split(',').map((f) => f.trim());
      continue;
    }
    const tom = /^timeout (\S+)$/.exec(l);
    if (tom) {
      s.timeout = parseNftDuration(tom[1]!);
      continue;
    }
    const cm = /^comment "([^"]*)"$/.exec(l);
    if (cm) {
      s.comment = cm[1]!;
      continue;
    }
    if (/^(size|policy|gc-interval) /.test(l) || l === 'auto-merge') continue;
    if (l.startsWith('elements = {')) {
      // The list may span lines; collect up to the closing brace outside quotes.
      let acc = l.slice('elements = {'.length);
      const start = n;
      while (!closes(acc)) {
        i++;
        if (i >= lines.length) throw new NftListingError(start, 'unterminated element list');
        acc += ' ' + lines[i]!.trim();
      }
      const body = acc.slice(0, acc.lastIndexOf('}'));
      s.elements = parseElementList(start, body);
      continue;
    }
    throw new NftListingError(n, `unexpected line in ${s.kind} ${s.name}: ${l}`);
  }
  if (table || block) throw new NftListingError(lines.length, 'unterminated table');
  return tables;
}

function closes(s: string): boolean {
  let inQ = false;
  for (const ch of s) {
    if (ch === '"') inQ = !inQ;
    else if (ch === '}' && !inQ) return true;
  }
  return false;
}

function elementText(key: string, e: NftElementState): string {
  return `${key}${e.comment !== null ? ` comment "${e.comment}"` : ''}${e.value !== null ? ` : ${e.value}` : ''}`;
}

function renderSet(s: NftSetState): string[] {
  const out = [`\t${s.kind} ${s.name} {`, `\t\ttype ${s.keyTypes.join(' . ')}${s.dataType ? ` : ${s.dataType}` : ''}`];
  if (s.flags.length) out.push(`\t\tflags ${s.flags.join(',')}`);
  if (s.timeout !== null) out.push(`\t\ttimeout ${formatNftDuration(s.timeout)}`);
  if (s.comment !== null) out.push(`\t\tcomment "${s.comment}"`);
  if (s.elements.size) {
    const items = [...s.elements].map(([k, e]) => elementText(k, e));
    out.push(`\t\telements = { ${items.join(',\n\t\t\t     ')} }`);
  }
  out.push('\t}');
  return out;
}

/** Writes a table the way `nft list table` prints it (sets and maps first, then chains). */
export function renderListing(t: NftTableState): string {
  const out = [`table ${t.family} ${t.name} {`];
  if (t.comment !== null) out.push(`\tcomment "${t.comment}"`);
  for (const s of t.sets.values()) out.push(...renderSet(s), '');
  for (const c of t.chains.values()) {
    out.push(`\tchain ${c.name} {`);
    if (c.base) out.push(`\t\ttype ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy accept;`);
    if (c.comment !== null) out.push(`\t\tcomment "${c.comment}"`);
    for (const r of c.rules) out.push(`\t\t${r}`);
    out.push('\t}', '');
  }
  if (out[out.length - 1] === '') out.pop();
  out.push('}');
  return out.join('\n') + '\n';
}
